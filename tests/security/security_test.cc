// Attacks on a live coordinator over loopback, each replayed and its refusal
// asserted: a coordinator with client, read and worker tokens, credentials
// of their own for two clients and two workers, a bundle key and its
// dashboard, played against by a rogue worker, an impersonator and a
// hostile client through the real gRPC and HTTP surfaces. After every attack
// the coordinator still answers.

#include <signal.h>

#include <atomic>
#include <cmath>
#include <fstream>
#include <thread>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/bundle_signature.h"
#include "compiler/codegen/KernelBuild.h"
#include "compiler/support/digest.h"
#include "compiler/support/status.h"
#include "gmock/gmock.h"
#include "google/protobuf/unknown_field_set.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/security/attack_fixture.h"
#include "tests/testing/net.h"
#include "tests/testing/process.h"
#include "tir/v1/compiler_service.grpc.pb.h"
#include "tir/v1/worker_service.grpc.pb.h"

namespace {

using ::testing::HasSubstr;
using namespace tir::security_testing;  // NOLINT: the suite's fixture and moves

// 1. A rogue worker's binary never reaches a client: the bundle served
// holds the coordinator's own build, named by its hash and signed. (Its
// made-up times distrust it; an honest worker's measurement is served.)
TEST_F(Security, ARogueWorkersBinaryNeverReachesClients) {
  const Registered rogue = Register();  // names no toolchain: its hashes cannot be checked
  tir::v1::Operation op;
  ASSERT_TRUE(Compile(Graph("rogue", 8), &op).ok());
  EXPECT_FALSE(PlayRogue(rogue, op.name()).done());
  EXPECT_EQ(StateOf(rogue.name), "distrusted");
  const tir::v1::Operation done = PlayHonest(op.name());
  ASSERT_TRUE(done.has_response()) << done.error().message();
  const tir::v1::KernelBundle &b = done.response();
  EXPECT_EQ(b.provenance().builder(), "coordinator");
  EXPECT_TRUE(b.provenance().measured_binary_checked());
  ASSERT_GT(b.kernels_size(), 0);
  for (const auto &k : b.kernels()) {
    EXPECT_EQ(k.binary().substr(0, 4), "\x7f" "ELF");
    EXPECT_EQ(k.binary().find("rogue"), std::string::npos) << "the worker's bytes were served";
    EXPECT_EQ(k.binary_sha256(), tir::Sha256Hex(k.binary()));
    EXPECT_TRUE(k.GetReflection()->GetUnknownFields(k).empty());
    EXPECT_TRUE(k.verification().GetReflection()->GetUnknownFields(k.verification()).empty());
    EXPECT_TRUE(k.measurement().GetReflection()->GetUnknownFields(k.measurement()).empty());
    EXPECT_LE(k.verification().detail().size(), 1100u) << "a worker's free text is bounded";
  }
  // Nowhere in what a client gets: not in an unknown field of a message
  // the coordinator copies from a report, nor in a worker's free text.
  const std::string served = done.SerializeAsString();
  EXPECT_EQ(served.find("rogue payload"), std::string::npos) << "a worker's bytes ride in the bundle";
  EXPECT_EQ(served.find("rogue detail"), std::string::npos);
  EXPECT_TRUE(tir::CheckBundleSignature(b, "bundle-key").ok());
  EXPECT_TRUE(tir::CheckBinaryHashes(b).ok());
}

// 1b. One that names the coordinator's toolchain and reports a hash that is
// not its build is refused and takes no more work, and the job is measured
// again by an honest worker: the answer is the coordinator's build, checked.
TEST_F(Security, AWorkerThatMeasuredAnotherBinaryIsRefusedAndDistrusted) {
  const Registered rogue = Register(tir::codegen::ToolchainOf("host"));
  tir::v1::Operation op;
  ASSERT_TRUE(Compile(Graph("mismatch", 16), &op).ok());
  const tir::v1::Operation after = PlayRogue(rogue, op.name());
  EXPECT_FALSE(after.done()) << "measured again, not failed: " << after.error().message();
  EXPECT_EQ(StateOf(rogue.name), "distrusted");
  const tir::v1::Operation done = PlayHonest(op.name());
  ASSERT_TRUE(done.has_response()) << done.error().message();
  EXPECT_TRUE(done.response().provenance().measured_binary_checked());
  for (const auto &k : done.response().kernels()) EXPECT_EQ(k.binary_sha256(), tir::Sha256Hex(k.binary()));
}

// 1c. What a report carries is checked: a binary hash longer than a hash
// (a payload), or a passing time that is not a time, refuses the report.
TEST_F(Security, AReportWithAForgedHashOrTimeIsRefused) {
  const Registered w = Register();
  tir::v1::Operation op;
  ASSERT_TRUE(Compile(Graph("forged", 136), &op, "", "team-d-token-0123456789").ok());
  tir::v1::LeaseWorkRequest r;
  r.set_name(w.name);
  r.mutable_wait()->set_seconds(5);
  tir::v1::LeaseWorkResponse leased;
  ASSERT_TRUE(Call(&tir::v1::WorkerService::Stub::LeaseWork, w.token, w.session, r, &leased).ok());
  ASSERT_GT(leased.items_size(), 0);
  const tir::v1::WorkItem &item = leased.items(0);
  for (int bad = 0; bad < 3; ++bad) {
    tir::v1::ReportResultRequest report;
    report.set_name(w.name);
    report.set_lease_id(item.lease_id());
    tir::v1::CandidateResult *x = report.add_results();
    x->set_candidate_index(item.candidates(0).candidate_index());
    x->mutable_verification()->set_verdict(tir::v1::VERDICT_PASSED);
    x->mutable_measurement()->set_samples(5);
    x->mutable_measurement()->set_median_seconds(bad == 1 ? std::nan("") : bad == 2 ? -1.0 : 1e-6);
    x->set_binary_sha256(bad == 0 ? std::string(64, 'b') + "\x7f" "ELF rogue payload" : std::string(64, 'b'));
    tir::v1::ReportResultResponse ack;
    const grpc::Status s = Call(&tir::v1::WorkerService::Stub::ReportResult, w.token, w.session, report, &ack);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << bad << ": " << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("INVALID_REPORT")) << bad;
  }
  grpc::ClientContext ctx;
  Token(ctx, "team-d-token-0123456789");
  tir::v1::CancelOperationRequest cancel;
  cancel.set_name(op.name());
  tir::v1::Operation cancelled;
  EXPECT_TRUE(clients_->CancelOperation(&ctx, cancel, &cancelled).ok());
}

// 2. Names are bound to their registration: another caller with the worker
// token but not the session cannot report, heartbeat, drain or re-register
// under it.
TEST_F(Security, AWorkersNameIsItsOwn) {
  const Registered victim = Register();
  const Registered attacker = Register();
  auto call = [&](auto method, const auto &req, auto *resp, const std::string &session) {
    grpc::ClientContext ctx;
    Token(ctx, "worker-token");
    ctx.AddMetadata("tir-worker-session", session);
    return (workers_->*method)(&ctx, req, resp);
  };
  tir::v1::HeartbeatRequest hb;
  hb.set_name(victim.name);
  hb.set_state(tir::v1::WORKER_STATE_DRAINING);
  tir::v1::HeartbeatResponse hbOut;
  grpc::Status s = call(&tir::v1::WorkerService::Stub::Heartbeat, hb, &hbOut, attacker.session);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  tir::v1::DrainRequest drain;
  drain.set_name(victim.name);
  tir::v1::DrainResponse drained;
  EXPECT_EQ(call(&tir::v1::WorkerService::Stub::Drain, drain, &drained, "").error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  tir::v1::ReportResultRequest report;
  report.set_name(victim.name);
  report.set_lease_id("leases/00000000000000000000000000000000");
  tir::v1::ReportResultResponse ack;
  EXPECT_EQ(call(&tir::v1::WorkerService::Stub::ReportResult, report, &ack, attacker.session).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(Register("", victim.name, attacker.session).name, victim.name) << "a known name is not taken over";
  EXPECT_NE(StateOf(victim.name), "draining");
  // Its own session works.
  hb.set_state(tir::v1::WORKER_STATE_READY);
  EXPECT_TRUE(call(&tir::v1::WorkerService::Stub::Heartbeat, hb, &hbOut, victim.session).ok());
  // max_items is capped.
  tir::v1::LeaseWorkRequest lease;
  lease.set_name(victim.name);
  lease.set_max_items(1u << 30);
  tir::v1::LeaseWorkResponse leased;
  EXPECT_TRUE(call(&tir::v1::WorkerService::Stub::LeaseWork, lease, &leased, victim.session).ok());
  EXPECT_LE(leased.items_size(), 16);
  // Lease ids and names are 128 bits from the CSPRNG.
  EXPECT_THAT(victim.name, ::testing::MatchesRegex("workers/[0-9a-f]{32}"));
  EXPECT_THAT(victim.session, ::testing::MatchesRegex("[0-9a-f]{64}"));
}

// 3. A 20 KB request nested 10,000 deep is refused, through Compile and
// through LookupKernel with only the read token; so is its bytecode.
TEST_F(Security, DeeplyNestedRequestsAreRefusedNotACrash) {
  tir::v1::Operation op;
  grpc::Status s = Compile(DeepGraph(10000), &op);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("brackets deep"));
  grpc::ClientContext ctx;
  Token(ctx, "read-token");
  tir::v1::LookupKernelRequest lookup;
  lookup.mutable_graph()->set_mlir_text(DeepGraph(10000));
  lookup.mutable_options()->set_target_arch("host");
  tir::v1::LookupKernelResponse found;
  s = clients_->LookupKernel(&ctx, lookup, &found);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  // Deep types too.
  std::string type = "f32";
  for (int i = 0; i < 5000; ++i) type = "tensor<4x" + type + ">";
  s = Compile(absl::StrCat("tir.graph @t(%x: ", type, ") -> ", type, " {\n  results %x : ", type, "\n}\n"), &op);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

// 3b. What a request leaves behind is bounded: a graph's name (kept with
// what is remembered of the request and shown with its job) and a request
// id (kept with its operation) of megabytes are refused, through the read
// token's lookup too; a zero-sized tensor is refused for what it is.
TEST_F(Security, LongNamesAndRequestIdsAreRefused) {
  const std::string longName = std::string(4 << 20, 'n');
  grpc::ClientContext ctx;
  Token(ctx, "read-token");
  tir::v1::LookupKernelRequest lookup;
  lookup.mutable_graph()->set_mlir_text(Graph(longName, 4));
  lookup.mutable_options()->set_target_arch("host");
  tir::v1::LookupKernelResponse found;
  grpc::Status s = clients_->LookupKernel(&ctx, lookup, &found);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("LIMIT_EXCEEDED: the graph's name has 4194304 bytes; at most 1024"));
  tir::v1::Operation op;
  s = Compile(Graph(longName, 4), &op);
  EXPECT_THAT(s.error_message(), HasSubstr("LIMIT_EXCEEDED: the graph's name"));
  s = Compile(Graph("rid_long", 168), &op, std::string(1 << 20, 'r'));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("LIMIT_EXCEEDED: request_id has 1048576 bytes; at most 256"));
  const std::string zero =
      "tir.graph @zero(%x: tensor<0x64xf32>) -> tensor<0x64xf32> {\n  %y = exp %x : tensor<0x64xf32>\n  results %y : "
      "tensor<0x64xf32>\n}\n";
  s = Compile(zero, &op);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("INVALID_GRAPH"));
  EXPECT_THAT(s.error_message(), HasSubstr("extent 0"));
}

// 4. Registrations are bounded.
TEST_F(Security, RegistrationsAreBounded) {
  grpc::ClientContext ctx;
  Token(ctx, "worker-token");
  tir::v1::RegisterWorkerRequest r;
  r.mutable_capabilities()->set_backend("host");
  r.mutable_capabilities()->set_arch("host");
  r.mutable_capabilities()->set_device_name(std::string(60000, 'x'));
  tir::v1::RegisterWorkerResponse out;
  grpc::Status s = workers_->RegisterWorker(&ctx, r, &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("device_name"));
  tir::v1::ListWorkersResponse w;
  ASSERT_TRUE(ListWorkers(&w).ok());
  for (const auto &x : w.workers()) EXPECT_LE(x.device_name().size(), 256u);
}

// 5. A request id is its client's: reused for another graph it is refused.
TEST_F(Security, ARequestIdReusedForAnotherGraphIsRefused) {
  tir::v1::Operation first, second;
  ASSERT_TRUE(Compile(Graph("rid_a", 40), &first, "request-1").ok());
  grpc::Status s = Compile(Graph("rid_b", 56), &second, "request-1");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::ALREADY_EXISTS) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("request id"));
  tir::v1::Operation again;
  ASSERT_TRUE(Compile(Graph("rid_a", 40), &again, "request-1").ok());
  EXPECT_EQ(again.name(), first.name()) << "the same request again is the same operation";
}

// 6. The dashboard: a Host that is not the coordinator's (DNS rebinding) and
// a status request without a token are refused.
TEST_F(Security, TheDashboardChecksHostAndToken) {
  EXPECT_THAT(tir::testing::HttpGet(dashboard_, "/api/status", "Host: attacker.example:8080\r\n"),
              HasSubstr("403"));
  EXPECT_THAT(tir::testing::HttpGet(dashboard_, "/api/status"), HasSubstr("401"));
  EXPECT_THAT(tir::testing::HttpGet(dashboard_, "/api/status", "Authorization: Bearer wrong\r\n"), HasSubstr("401"));
  const std::string ok = tir::testing::HttpGet(dashboard_, "/api/status", "Authorization: Bearer read-token\r\n");
  EXPECT_THAT(ok, HasSubstr("200 OK"));
  EXPECT_THAT(ok, HasSubstr("\"workers\""));
  EXPECT_THAT(tir::testing::HttpGet(dashboard_, "/", "Host: 127.0.0.1:1\r\n"), HasSubstr("200 OK"));
}

// 8. Streams nobody reads take no thread: 300 unread WatchOperation streams
// (past the per-client cap, refused) leave every other call answering, and
// a watched operation still streams to a client that reads.
TEST_F(Security, UnreadStreamsStarveNothing) {
  tir::v1::Operation op;
  ASSERT_TRUE(Compile(Graph("watched", 72), &op).ok());
  grpc::CompletionQueue cq;
  struct Open {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientAsyncReader<tir::v1::Operation>> reader;
  };
  std::vector<std::unique_ptr<Open>> open;
  tir::v1::WatchOperationRequest req;
  req.set_name(op.name());
  for (int i = 0; i < 300; ++i) {
    auto o = std::make_unique<Open>();
    Token(o->ctx, "read-token");
    o->reader = clients_->PrepareAsyncWatchOperation(&o->ctx, req, &cq);
    o->reader->StartCall(reinterpret_cast<void *>(static_cast<intptr_t>(i + 1)));
    open.push_back(std::move(o));
  }
  absl::SleepFor(absl::Seconds(1));
  // Everything else still answers, at once.
  for (int i = 0; i < 20; ++i) {
    const absl::Time start = absl::Now();
    ASSERT_TRUE(ListWorkers().ok());
    const Registered w = Register();
    ASSERT_FALSE(w.name.empty());
    EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  }
  // A stream past the client's cap is refused with the limit.
  {
    grpc::ClientContext ctx;
    Token(ctx, "read-token");
    auto reader = clients_->WatchOperation(&ctx, req);
    tir::v1::Operation got;
    while (reader->Read(&got)) {
    }
    const grpc::Status s = reader->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("maxWatchStreams"));
  }
  for (auto &o : open) o->ctx.TryCancel();
  cq.Shutdown();
  void *tag;
  bool ok;
  while (cq.Next(&tag, &ok)) {
  }
  open.clear();
  absl::SleepFor(absl::Milliseconds(500));
  // A reader gets the operation, its progress, until it is done.
  grpc::ClientContext ctx;
  Token(ctx, "read-token");
  auto reader = clients_->WatchOperation(&ctx, req);
  tir::v1::Operation got;
  ASSERT_TRUE(reader->Read(&got)) << "the first message comes at once";
  EXPECT_EQ(got.name(), op.name());
  ctx.TryCancel();
  while (reader->Read(&got)) {
  }
  reader->Finish();
}

// 8b. Waits take no thread either: hundreds of WaitOperation calls on an
// operation that is not done (more than the server's threads, from six
// callers) leave every worker call answering at once; past a caller's cap
// a wait is refused with the limit, and the waits are answered when the
// operation ends.
TEST_F(Security, WaitsStarveNoWorker) {
  const Registered w = Register();
  tir::v1::Operation op;
  ASSERT_TRUE(Compile(Graph("waited", 152), &op, "", "team-d-token-0123456789").ok());
  ASSERT_FALSE(op.done());
  grpc::CompletionQueue cq;
  struct Open {
    grpc::ClientContext ctx;
    tir::v1::Operation out;
    grpc::Status status;
    std::unique_ptr<grpc::ClientAsyncResponseReader<tir::v1::Operation>> reader;
  };
  std::vector<std::unique_ptr<Open>> open;
  tir::v1::WaitOperationRequest req;
  req.set_name(op.name());
  req.mutable_timeout()->set_seconds(120);
  // Six callers (the shared tokens are one caller: their address).
  const std::vector<std::string> callers = {"read-token",
                                            "viewer-token-0123456789",
                                            "team-a-token-0123456789",
                                            "team-b-token-0123456789",
                                            "team-c-token-0123456789",
                                            "team-d-token-0123456789"};
  for (const std::string &token : callers) {
    for (int i = 0; i < 64; ++i) {
      auto o = std::make_unique<Open>();
      Token(o->ctx, token);
      o->reader = clients_->AsyncWaitOperation(&o->ctx, req, &cq);
      o->reader->Finish(&o->out, &o->status, o.get());
      open.push_back(std::move(o));
    }
  }
  absl::SleepFor(absl::Seconds(2));
  // Worker calls still answer, at once.
  for (int i = 0; i < 10; ++i) {
    const absl::Time start = absl::Now();
    tir::v1::HeartbeatRequest hb;
    hb.set_name(w.name);
    hb.set_state(tir::v1::WORKER_STATE_READY);
    tir::v1::HeartbeatResponse out;
    const grpc::Status s = Call(&tir::v1::WorkerService::Stub::Heartbeat, w.token, w.session, hb, &out);
    EXPECT_TRUE(s.ok()) << s.error_message();
    EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  }
  EXPECT_FALSE(Register().name.empty());
  // A caller past its cap is refused with the limit.
  {
    grpc::ClientContext ctx;
    Token(ctx, "read-token");
    tir::v1::Operation got;
    const grpc::Status s = clients_->WaitOperation(&ctx, req, &got);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("maxWaits"));
  }
  // The operation ends: every wait is answered with it.
  {
    grpc::ClientContext ctx;
    Token(ctx, "team-d-token-0123456789");
    tir::v1::CancelOperationRequest cancel;
    cancel.set_name(op.name());
    tir::v1::Operation cancelled;
    ASSERT_TRUE(clients_->CancelOperation(&ctx, cancel, &cancelled).ok());
  }
  int answered = 0;
  for (size_t i = 0; i < open.size(); ++i) {
    void *tag;
    bool ok;
    if (cq.AsyncNext(&tag, &ok, std::chrono::system_clock::now() + std::chrono::seconds(20)) !=
        grpc::CompletionQueue::GOT_EVENT) {
      break;
    }
    const Open *o = static_cast<Open *>(tag);
    EXPECT_TRUE(o->status.ok()) << o->status.error_message();
    answered += o->status.ok() && o->out.done();
  }
  EXPECT_EQ(answered, static_cast<int>(open.size()));
  for (auto &o : open) o->ctx.TryCancel();
  cq.Shutdown();
  void *tag;
  bool ok;
  while (cq.Next(&tag, &ok)) {
  }
}

// 8c. Workers' long polls are bounded too: 300 workers waiting in
// LeaseWork at once (more than the server's threads; one holder of the
// worker token may register them) leave heartbeats answering, since past
// half the threads a lease call answers at once instead of waiting.
TEST_F(Security, LeasePollsStarveNoHeartbeat) {
  const Registered w = Register();
  std::vector<Registered> pollers;
  for (int i = 0; i < 300; ++i) pollers.push_back(Register("", absl::StrCat("workers/poller-", i)));
  grpc::CompletionQueue cq;
  struct Open {
    grpc::ClientContext ctx;
    tir::v1::LeaseWorkResponse out;
    grpc::Status status;
    std::unique_ptr<grpc::ClientAsyncResponseReader<tir::v1::LeaseWorkResponse>> reader;
  };
  std::vector<std::unique_ptr<Open>> open;
  for (const Registered &p : pollers) {
    auto o = std::make_unique<Open>();
    Token(o->ctx, p.token);
    o->ctx.AddMetadata("tir-worker-session", p.session);
    tir::v1::LeaseWorkRequest r;
    r.set_name(p.name);
    r.mutable_wait()->set_seconds(25);
    o->reader = workers_->AsyncLeaseWork(&o->ctx, r, &cq);
    o->reader->Finish(&o->out, &o->status, o.get());
    open.push_back(std::move(o));
  }
  absl::SleepFor(absl::Seconds(2));
  for (int i = 0; i < 10; ++i) {
    const absl::Time start = absl::Now();
    tir::v1::HeartbeatRequest hb;
    hb.set_name(w.name);
    hb.set_state(tir::v1::WORKER_STATE_READY);
    tir::v1::HeartbeatResponse out;
    const grpc::Status s = Call(&tir::v1::WorkerService::Stub::Heartbeat, w.token, w.session, hb, &out);
    EXPECT_TRUE(s.ok()) << s.error_message();
    EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  }
  EXPECT_TRUE(ListWorkers().ok());
  for (auto &o : open) o->ctx.TryCancel();
  int refused = 0;
  for (size_t i = 0; i < open.size(); ++i) {
    void *tag;
    bool ok;
    if (cq.AsyncNext(&tag, &ok, std::chrono::system_clock::now() + std::chrono::seconds(30)) !=
        grpc::CompletionQueue::GOT_EVENT) {
      break;
    }
    refused += static_cast<Open *>(tag)->status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED;
  }
  EXPECT_EQ(refused, 0) << "a lease call was refused for want of a thread";
  cq.Shutdown();
  void *tag;
  bool ok;
  while (cq.Next(&tag, &ok)) {
  }
  // The pollers go (their places are the anonymous workers' 1,024).
  for (const Registered &p : pollers) {
    tir::v1::DrainRequest drain;
    drain.set_name(p.name);
    tir::v1::DrainResponse drained;
    (void)Call(&tir::v1::WorkerService::Stub::Drain, p.token, p.session, drain, &drained);
  }
}

// 7. Calls without a token, or with the read token for a write, are refused.
TEST_F(Security, TokensAreRequired) {
  tir::v1::Operation op;
  EXPECT_EQ(Compile(Graph("t", 8), &op, "", "").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Compile(Graph("t", 8), &op, "", "read-token").error_code(), grpc::StatusCode::PERMISSION_DENIED)
      << "the read token is known, and reads only";
  grpc::ClientContext ctx;
  Token(ctx, "client-token");
  tir::v1::RegisterWorkerRequest r;
  r.mutable_capabilities()->set_backend("host");
  r.mutable_capabilities()->set_arch("host");
  tir::v1::RegisterWorkerResponse out;
  EXPECT_EQ(workers_->RegisterWorker(&ctx, r, &out).error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

// 9. Workers with credentials of their own are their identity: the name is
// the credential's whatever is asked for, one registration at a time, and
// no other identity (nor the shared token) acts under it, even holding its
// session.
TEST_F(Security, AWorkerCredentialIsItsIdentity) {
  const std::string a_token = "gpu-a-token-0123456789", b_token = "gpu-b-token-0123456789";
  const Registered a = Register("", "workers/anything", "", a_token);
  EXPECT_EQ(a.name, "workers/id-gpu-a");
  const Registered b = Register("", a.name, a.session, b_token);
  EXPECT_EQ(b.name, "workers/id-gpu-b") << "another identity does not take a's name, with its session or not";
  tir::v1::HeartbeatRequest hb;
  hb.set_name(a.name);
  hb.set_state(tir::v1::WORKER_STATE_DRAINING);
  tir::v1::HeartbeatResponse hbOut;
  for (const std::string &token : {b_token, std::string("worker-token")}) {
    // a's session leaked: still not a's identity.
    grpc::Status s = Call(&tir::v1::WorkerService::Stub::Heartbeat, token, a.session, hb, &hbOut);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_THAT(s.error_message(), HasSubstr("identity gpu-a"));
    tir::v1::DrainRequest drain;
    drain.set_name(a.name);
    tir::v1::DrainResponse drained;
    EXPECT_EQ(Call(&tir::v1::WorkerService::Stub::Drain, token, a.session, drain, &drained).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
    tir::v1::ReportResultRequest report;
    report.set_name(a.name);
    report.set_lease_id("leases/00000000000000000000000000000000");
    tir::v1::ReportResultResponse ack;
    EXPECT_EQ(Call(&tir::v1::WorkerService::Stub::ReportResult, token, a.session, report, &ack).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
    tir::v1::LeaseWorkRequest lease;
    lease.set_name(a.name);
    tir::v1::LeaseWorkResponse leased;
    EXPECT_EQ(Call(&tir::v1::WorkerService::Stub::LeaseWork, token, a.session, lease, &leased).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
  }
  EXPECT_EQ(StateOf(a.name), "ready");
  // A worker credential does not open the client API, nor a client's the
  // worker API.
  tir::v1::Operation op;
  EXPECT_EQ(Compile(Graph("wc", 8), &op, "", a_token).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  grpc::Status refused;
  Register("", "", "", "team-a-token-0123456789", &refused);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  // One registration per identity: registering again (a restart) ends the
  // session before it.
  const Registered again = Register("", "", "", a_token);
  EXPECT_EQ(again.name, a.name);
  EXPECT_NE(again.session, a.session);
  hb.set_state(tir::v1::WORKER_STATE_READY);
  EXPECT_EQ(Call(&tir::v1::WorkerService::Stub::Heartbeat, a_token, a.session, hb, &hbOut).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(Call(&tir::v1::WorkerService::Stub::Heartbeat, a_token, again.session, hb, &hbOut).ok());
  // Registering a thousand times leaves one entry.
  for (int i = 0; i < 1000; ++i) Register("", "", "", a_token);
  tir::v1::ListWorkersResponse w;
  ASSERT_TRUE(ListWorkers(&w).ok());
  int named = 0;
  for (const auto &x : w.workers()) named += x.name() == a.name;
  EXPECT_EQ(named, 1);
}

// 10. A distrusted identity stays distrusted: it cannot register again,
// under its name or another, nor shed it by draining.
TEST_F(Security, ADistrustedIdentityCannotComeBack) {
  const std::string token = "gpu-c-token-0123456789";
  const Registered rogue = Register(tir::codegen::ToolchainOf("host"), "", "", token);
  tir::v1::Operation op;
  ASSERT_TRUE(Compile(Graph("distrusted", 24), &op, "", "team-b-token-0123456789").ok());
  const tir::v1::Operation after = PlayRogue(rogue, op.name());
  EXPECT_FALSE(after.done()) << "measured again by others: " << after.error().message();
  EXPECT_EQ(StateOf(rogue.name), "distrusted");
  tir::v1::DrainRequest drain;
  drain.set_name(rogue.name);
  tir::v1::DrainResponse drained;
  EXPECT_TRUE(Call(&tir::v1::WorkerService::Stub::Drain, token, rogue.session, drain, &drained).ok());
  for (const std::string &name : {std::string(""), rogue.name, std::string("workers/fresh")}) {
    grpc::Status s;
    Register("", name, rogue.session, token, &s);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << name;
    EXPECT_THAT(s.error_message(), HasSubstr("gpu-c"));
  }
  EXPECT_EQ(StateOf(rogue.name), "distrusted");
}

// 11. Limits and request ids are per authenticated client: two clients with
// credentials of their own on one address each have their own
// maxJobsPerClient (4 here) and their own request ids.
TEST_F(Security, LimitsHoldPerClientIdentity) {
  const std::string a = "team-a-token-0123456789", b = "team-b-token-0123456789";
  tir::v1::Operation op;
  for (int i = 0; i < 4; ++i) {
    grpc::Status s = Compile(Graph(absl::StrCat("quota", i), 8 * (i + 20)), &op, "", a);
    ASSERT_TRUE(s.ok()) << i << ": " << s.error_message();
  }
  grpc::Status s = Compile(Graph("quota_over", 8 * 30), &op, "", a);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("maxJobsPerClient"));
  // The same address, another identity: its own quota, and its own ids.
  tir::v1::Operation first, second;
  ASSERT_TRUE(Compile(Graph("ids_a", 8 * 31), &first, "shared-id", b).ok());
  s = Compile(Graph("ids_b", 8 * 32), &second, "shared-id", "client-token");
  EXPECT_TRUE(s.ok()) << "an anonymous client's ids are not team-b's: " << s.error_message();
  EXPECT_NE(second.name(), first.name());
  // The read credential reads, and writes nothing.
  EXPECT_EQ(Compile(Graph("viewer", 8), &op, "", "viewer-token-0123456789").error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  grpc::ClientContext ctx;
  Token(ctx, "viewer-token-0123456789");
  tir::v1::ListWorkersResponse w;
  EXPECT_TRUE(clients_->ListWorkers(&ctx, {}, &w).ok());
  EXPECT_THAT(tir::testing::HttpGet(dashboard_, "/api/status", "Authorization: Bearer viewer-token-0123456789\r\n"),
              HasSubstr("200 OK"));
}

// 12. Planning is bounded per request and fair across clients: the
// 19,990-op graph that took 37 s plans in linear time, a graph of 9,995
// kernels is refused (maxKernelsPerGraph), and while one client floods the
// planners with such graphs another client's compile is answered before
// the flood is through.
TEST_F(Security, PlanningIsBoundedAndFairAcrossClients) {
  const std::string c = "team-c-token-0123456789", d = "team-d-token-0123456789";
  tir::v1::Operation op;
  grpc::Status s = Compile(ExpChain(19990), &op, "", c);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_FALSE(op.name().empty());
  const std::string flood = MatmulChain(9995);
  s = Compile(flood, &op, "", c);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("maxKernelsPerGraph=1024"));
  // The flood: six at once from one client.
  std::atomic<int> finished{0};
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::thread> callers;
  for (int i = 0; i < 6; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    Token(*contexts.back(), c);
    callers.emplace_back([&, ctx = contexts.back().get(), i] {
      tir::v1::CompileRequest r;
      // Each its own bytes (a request known by its bytes skips the parse).
      r.mutable_graph()->set_mlir_text(absl::StrCat("// flood ", i, "\n", flood));
      r.mutable_options()->set_target_arch("host");
      tir::v1::Operation out;
      (void)clients_->Compile(ctx, r, &out);
      ++finished;
    });
  }
  absl::SleepFor(absl::Milliseconds(300));
  s = Compile(Graph("fair", 88), &op, "", d);
  const int behind = finished;
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_LT(behind, 3) << "another client's compile waited for the flood";
  for (auto &ctx : contexts) ctx->TryCancel();
  for (std::thread &t : callers) t.join();
}

}  // namespace
