// Reliability on loopback with real processes (tir-coordinator, tir-worker,
// gRPC clients), each case bounded in time and printing its figures:
//  - the coordinator SIGKILLed 10 times while 20 jobs run: every job
//    completes, no stored bundle is lost, no operation name is reused;
//  - workers frozen (SIGSTOP) and killed mid-lease: their leases go to the
//    other worker and every job completes;
//  - 1,000 concurrent clients (an async load generator) on cache hits: no
//    errors;
//  - random and truncated protobuf bytes on every RPC: no crash, every
//    answer a clear status;
//  - 100 faulting, hanging and good candidates through one worker: the
//    worker stays up and every good candidate is measured.

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/support/status.h"
#include "compiler/target/ArchTable.h"
#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "server/tuning/work_items.h"
#include "tests/testing/net.h"
#include "tests/testing/process.h"
#include "tir/v1/compiler_service.grpc.pb.h"
#include "tir/v1/worker_service.grpc.pb.h"
#include "worker/testing/test_coordinator.h"

namespace tir {
namespace {

using ::testing::HasSubstr;
using tir::testing::Alive;
using tir::testing::Runfile;
using tir::testing::Spawn;
using tir::testing::Stop;
using tir::testing::TempDir;

std::string Graph(const std::string &name, int rows, int cols) {
  return absl::StrCat("tir.graph @", name, "(%x: tensor<", rows, "x", cols, "xf32>, %b: tensor<1x", cols,
                      "xf32>) -> tensor<", rows, "x", cols, "xf32> {\n", "  %y = add %x, %b : (tensor<", rows, "x", cols,
                      "xf32>, tensor<1x", cols, "xf32>) -> tensor<", rows, "x", cols, "xf32>\n",
                      "  %g = gelu_approx_tanh_fwd %y : tensor<", rows, "x", cols, "xf32>\n", "  results %g : tensor<",
                      rows, "x", cols, "xf32>\n}\n");
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

// A coordinator and host workers on one loopback port and store.
class Cluster {
 public:
  explicit Cluster(const std::string &name, std::string extra = "")
      : db_(TempDir() + "/" + name), extra_(std::move(extra)), port_(tir::testing::FreePort()) {}
  ~Cluster() {
    for (pid_t w : workers_) {
      kill(w, SIGCONT);
      Stop(w, SIGKILL);
    }
    Stop(coordinator_, SIGKILL);
  }
  void StartCoordinator() {
    const std::string config = db_ + ".json";
    std::ofstream(config) << "{\"listen\": \"127.0.0.1:" << port_ << "\", \"db\": \"" << db_
                          << "\", \"heartbeatIntervalMs\": 200, \"lostAfterMs\": 1500, \"tuningBudgetMs\": 5,"
                          << " \"tuningWidth\": 2" << extra_ << "}";
    coordinator_ = Spawn({Runfile("server/tir-coordinator"), "--config=" + config});
    ASSERT_GT(coordinator_, 0);
    for (int i = 0; i < 300; ++i) {
      if (client().ListWorkers().ok()) return;
      absl::SleepFor(absl::Milliseconds(50));
    }
    FAIL() << "the coordinator did not start";
  }
  void KillCoordinator() {
    Stop(coordinator_, SIGKILL);
    coordinator_ = -1;
  }
  pid_t coordinator() const { return coordinator_; }
  pid_t StartWorker() {
    workers_.push_back(Spawn({Runfile("worker/tir-worker"), absl::StrCat("--coordinator=127.0.0.1:", port_),
                              "--backend=host", "--compile-threads=2",
                              absl::StrCat("--work-dir=", db_, "-w", workers_.size()),
                              "--runner=" + Runfile("worker/runner/tir-worker-runner")}));
    return workers_.back();
  }
  void WaitForWorkers(int n) {
    for (int i = 0; i < 300; ++i) {
      auto w = client().ListWorkers();
      if (w.ok() && std::count_if(w->workers().begin(), w->workers().end(),
                                  [](const auto &x) { return x.state() != "lost"; }) >= n) {
        return;
      }
      absl::SleepFor(absl::Milliseconds(100));
    }
    FAIL() << "workers did not register";
  }
  Client &client() {
    if (!client_) {
      ClientOptions o;
      o.address = absl::StrCat("127.0.0.1:", port_);
      o.call_timeout = absl::Seconds(20);
      o.max_attempts = 8;
      client_ = *Client::Connect(o);
    }
    return *client_;
  }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }

 private:
  std::string db_, extra_;
  int port_;
  pid_t coordinator_ = -1;
  std::vector<pid_t> workers_;
  std::unique_ptr<Client> client_;
};

tir::v1::CompileOptions Host() {
  tir::v1::CompileOptions o;
  o.set_target_arch("host");
  return o;
}

TEST(Reliability, TheCoordinatorKilledTenTimesLosesNoJobNorBundleNorReusesAName) {
  Cluster c("kill10");
  c.StartCoordinator();
  c.StartWorker();
  c.StartWorker();
  c.WaitForWorkers(2);
  const absl::Time start = absl::Now();
  std::vector<std::string> names;
  std::set<std::string> everName;
  for (int k = 0; k < 20; ++k) {
    auto op = c.client().Compile(GraphSourceFromText(Graph(absl::StrCat("j", k), 8 + 8 * (k % 5), 16 + 16 * (k / 5))),
                                 Host());
    ASSERT_TRUE(op.ok()) << op.status();
    names.push_back(op->name());
    everName.insert(op->name());
  }
  std::mt19937 rng(17);
  std::set<std::string> doneBefore;
  for (int kill = 0; kill < 10; ++kill) {
    absl::SleepFor(absl::Milliseconds(std::uniform_int_distribution<int>(300, 1500)(rng)));
    c.KillCoordinator();
    c.StartCoordinator();
    // Operations answer for their job after every restart, and a new one
    // never takes an old name.
    for (const std::string &n : names) {
      auto op = c.client().GetOperation(n);
      ASSERT_TRUE(op.ok()) << "after kill " << kill + 1 << ": " << n << ": " << op.status();
      if (op->done()) doneBefore.insert(n);
    }
    auto probe = c.client().Compile(GraphSourceFromText(Graph(absl::StrCat("probe", kill), 4, 4 + kill)), Host());
    ASSERT_TRUE(probe.ok()) << probe.status();
    EXPECT_TRUE(everName.insert(probe->name()).second) << probe->name() << " was used before";
  }
  std::set<std::string> keys;
  for (const std::string &n : names) {
    auto op = c.client().Wait(n, absl::Minutes(4));
    ASSERT_TRUE(op.ok()) << n << ": " << op.status();
    ASSERT_TRUE(op->done()) << n;
    ASSERT_TRUE(op->has_response()) << n << ": " << op->error().reason() << " " << op->error().message();
    EXPECT_TRUE(op->response().tuning().tuned()) << n;
    keys.insert(op->response().key());
  }
  EXPECT_EQ(keys.size(), 20u);
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  // One more restart: every bundle is still stored.
  c.KillCoordinator();
  c.StartCoordinator();
  for (const std::string &k : keys) EXPECT_TRUE(c.client().GetKernel(k, true).ok()) << k;
  std::printf("reliability: 20 jobs, coordinator SIGKILLed 10 times: all tuned and stored in %.1f s (%zu done before "
              "the last kill), %zu operation names, none reused\n",
              seconds, doneBefore.size(), everName.size());
}

TEST(Reliability, WorkersFrozenOrKilledMidLeaseLoseNoJob) {
  Cluster c("frozen");
  c.StartCoordinator();
  const pid_t a = c.StartWorker();
  c.WaitForWorkers(1);
  auto one = c.client().ListWorkers();
  ASSERT_TRUE(one.ok() && one->workers_size() == 1);
  const std::string nameA = one->workers(0).name();
  const pid_t b = c.StartWorker();
  c.WaitForWorkers(2);
  const absl::Time start = absl::Now();
  std::vector<std::string> names;
  for (int k = 0; k < 6; ++k) {
    auto op = c.client().Compile(GraphSourceFromText(Graph(absl::StrCat("f", k), 16 + 8 * k, 64)), Host());
    ASSERT_TRUE(op.ok()) << op.status();
    names.push_back(op->name());
  }
  // Freeze whichever worker holds a lease first, kill the other once it holds one.
  auto holder = [&](const std::string &except) -> std::string {
    for (int i = 0; i < 600; ++i) {
      auto w = c.client().ListWorkers();
      if (w.ok()) {
        for (const auto &x : w->workers()) {
          if (x.active_leases() > 0 && x.name() != except && x.state() != "lost") return x.name();
        }
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
    return "";
  };
  const std::string first = holder("");
  ASSERT_FALSE(first.empty()) << "no lease was taken";
  const pid_t frozen = first == nameA ? a : b, other = first == nameA ? b : a;
  ASSERT_EQ(kill(frozen, SIGSTOP), 0);
  const std::string second = holder(first);
  ASSERT_FALSE(second.empty()) << "the other worker took no lease";
  ASSERT_EQ(kill(other, SIGKILL), 0);
  // Both gone (one frozen, one dead): thaw the frozen one; it finds its
  // leases expired, registers again and finishes everything.
  absl::SleepFor(absl::Seconds(2));
  ASSERT_EQ(kill(frozen, SIGCONT), 0);
  for (const std::string &n : names) {
    auto op = c.client().Wait(n, absl::Minutes(3));
    ASSERT_TRUE(op.ok() && op->done()) << n << ": " << op.status();
    ASSERT_TRUE(op->has_response()) << n << ": " << op->error().reason() << " " << op->error().message();
    EXPECT_TRUE(op->response().tuning().tuned());
  }
  EXPECT_TRUE(Alive(frozen));
  std::printf("reliability: 6 jobs with one worker frozen and the other killed mid-lease: all tuned in %.1f s\n",
              absl::ToDoubleSeconds(absl::Now() - start));
}

TEST(Reliability, AThousandConcurrentClientsOnCacheHitsSeeNoErrors) {
  Cluster c("thousand");
  c.StartCoordinator();
  const std::string text = Graph("hot", 64, 128);
  // Untuned answers are not stored: a worker tunes the graph first.
  c.StartWorker();
  c.WaitForWorkers(1);
  auto op = c.client().Compile(GraphSourceFromText(text), Host());
  ASSERT_TRUE(op.ok());
  auto done = c.client().Wait(op->name(), absl::Minutes(2));
  ASSERT_TRUE(done.ok() && done->done() && done->has_response()) << done.status();
  tir::v1::CompileRequest req;
  req.mutable_graph()->set_mlir_text(text);
  *req.mutable_options() = Host();
  constexpr int kClients = 1000, kChannels = 20, kRounds = 3;
  std::vector<std::unique_ptr<tir::v1::CompilerService::Stub>> stubs;
  for (int k = 0; k < kChannels; ++k) {
    grpc::ChannelArguments args;
    args.SetInt("tir-channel", k);  // a connection each
    args.SetMaxReceiveMessageSize(64 << 20);
    stubs.push_back(tir::v1::CompilerService::NewStub(
        grpc::CreateCustomChannel(c.address(), grpc::InsecureChannelCredentials(), args)));
  }
  struct Call {
    grpc::ClientContext ctx;
    tir::v1::Operation out;
    grpc::Status status;
    absl::Time start;
    std::unique_ptr<grpc::ClientAsyncResponseReader<tir::v1::Operation>> reader;
  };
  std::map<std::string, int> errors;
  std::vector<double> latencies;
  int hits = 0;
  const absl::Time start = absl::Now();
  for (int round = 0; round < kRounds; ++round) {
    grpc::CompletionQueue cq;
    std::vector<std::unique_ptr<Call>> calls(kClients);
    for (int k = 0; k < kClients; ++k) {
      calls[k] = std::make_unique<Call>();
      Call &call = *calls[k];
      call.ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
      call.start = absl::Now();
      call.reader = stubs[k % kChannels]->PrepareAsyncCompile(&call.ctx, req, &cq);
      call.reader->StartCall();
      call.reader->Finish(&call.out, &call.status, &call);
    }
    for (int k = 0; k < kClients; ++k) {
      void *tag = nullptr;
      bool ok = false;
      ASSERT_TRUE(cq.Next(&tag, &ok));
      Call *call = static_cast<Call *>(tag);
      latencies.push_back(absl::ToDoubleMilliseconds(absl::Now() - call->start));
      if (!ok || !call->status.ok()) {
        ++errors[call->status.error_message()];
      } else if (call->out.metadata().cache_hit() && call->out.response().kernels_size() > 0) {
        ++hits;
      }
    }
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  for (const auto &[message, n] : errors) ADD_FAILURE() << n << " calls failed: " << message;
  EXPECT_EQ(hits, kClients * kRounds);
  std::printf("reliability: %d concurrent clients x %d rounds on cache hits: %d hits, %zu kinds of error, p50 %.1f ms, "
              "p99 %.1f ms, %.0f calls/s\n",
              kClients, kRounds, hits, errors.size(), Percentile(latencies, 0.5), Percentile(latencies, 0.99),
              kClients * kRounds / seconds);
}

TEST(Reliability, ASickWorkerIsQuarantinedAndAHealthyOneFinishesItsWork) {
  // quarantineAfter 2: a worker (played here over the worker API, as a GPU
  // that faults every kernel would answer) that reports faults for two
  // different kernels stops being leased to; a real host worker tunes
  // everything, and the sick one's probe comes only after the interval.
  Cluster c("sick", ", \"quarantineAfter\": 2, \"quarantineProbeMs\": 60000, \"maxAttempts\": 5");
  c.StartCoordinator();
  auto channel = grpc::CreateChannel(c.address(), grpc::InsecureChannelCredentials());
  auto workerApi = tir::v1::WorkerService::NewStub(channel);
  tir::v1::RegisterWorkerRequest reg;
  reg.mutable_capabilities()->set_backend("host");
  reg.mutable_capabilities()->set_arch("host");
  reg.mutable_capabilities()->set_device_name("a sick device");
  tir::v1::RegisterWorkerResponse registered;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(workerApi->RegisterWorker(&ctx, reg, &registered).ok());
  }
  const std::string sick = registered.name();
  std::vector<std::string> names;
  for (int k = 0; k < 4; ++k) {
    auto op = c.client().Compile(GraphSourceFromText(Graph(absl::StrCat("s", k), 8 * (k + 1), 32)), Host());
    ASSERT_TRUE(op.ok()) << op.status();
    names.push_back(op->name());
  }
  auto lease = [&](uint32_t max) {
    grpc::ClientContext ctx;
    ctx.AddMetadata("tir-worker-session", registered.session());
    tir::v1::LeaseWorkRequest r;
    r.set_name(sick);
    r.set_max_items(max);
    r.mutable_wait()->set_nanos(200000000);
    tir::v1::LeaseWorkResponse out;
    EXPECT_TRUE(workerApi->LeaseWork(&ctx, r, &out).ok());
    return out;
  };
  for (int round = 0; round < 2; ++round) {
    tir::v1::LeaseWorkResponse got = lease(1);
    ASSERT_EQ(got.items_size(), 1);
    const tir::v1::WorkItem &item = got.items(0);
    grpc::ClientContext ctx;
    ctx.AddMetadata("tir-worker-session", registered.session());
    tir::v1::ReportResultRequest report;
    report.set_name(sick);
    report.set_lease_id(item.lease_id());
    for (const auto &cand : item.candidates()) {
      tir::v1::CandidateResult *r = report.add_results();
      r->set_candidate_index(cand.candidate_index());
      r->mutable_verification()->set_verdict(tir::v1::VERDICT_FAULT);
      r->mutable_verification()->set_detail("CUDA_ERROR_ILLEGAL_ADDRESS");
    }
    tir::v1::ReportResultResponse ack;
    ASSERT_TRUE(workerApi->ReportResult(&ctx, report, &ack).ok());
  }
  auto stateOf = [&](const std::string &name) {
    auto w = c.client().ListWorkers();
    if (w.ok()) {
      for (const auto &x : w->workers()) {
        if (x.name() == name) return x.state();
      }
    }
    return std::string("(not listed)");
  };
  EXPECT_EQ(stateOf(sick), "quarantined");
  EXPECT_EQ(lease(4).items_size(), 0) << "nothing for a quarantined worker before its probe";
  // A real worker tunes every job, the two the sick one faulted on included:
  // a report where every candidate faults is measured again before it
  // counts against the kernel.
  const absl::Time start = absl::Now();
  c.StartWorker();
  int tuned = 0;
  for (const std::string &n : names) {
    auto op = c.client().Wait(n, absl::Minutes(3));
    ASSERT_TRUE(op.ok() && op->done()) << n << ": " << op.status();
    ASSERT_TRUE(op->has_response()) << n << ": " << op->error().reason() << " " << op->error().message();
    EXPECT_TRUE(op->response().tuning().tuned());
    EXPECT_NE(op->response().provenance().worker(), sick) << "measured on the healthy worker";
    ++tuned;
  }
  EXPECT_EQ(stateOf(sick), "quarantined");
  std::printf("reliability: a worker faulting on 2 kernels is quarantined and leased nothing; a healthy worker "
              "tuned all %d jobs, the 2 faulted ones included, in %.1f s\n",
              tuned, absl::ToDoubleSeconds(absl::Now() - start));
}

TEST(Reliability, RandomAndTruncatedBytesOnEveryRpcGetClearErrors) {
  Cluster c("fuzz");
  c.StartCoordinator();
  auto channel = grpc::CreateChannel(c.address(), grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  // A valid request of each method: its truncations and bit flips come
  // close to what parses.
  tir::v1::CompileRequest compile;
  compile.mutable_graph()->set_mlir_text(Graph("fz", 8, 8));
  compile.mutable_options()->set_target_arch("host");
  tir::v1::RegisterWorkerRequest reg;
  reg.mutable_capabilities()->set_backend("host");
  reg.mutable_capabilities()->set_arch("host");
  tir::v1::LeaseWorkRequest lease;
  lease.set_name("workers/1");
  lease.mutable_wait()->set_nanos(1000000);
  tir::v1::ReportResultRequest report;
  report.set_name("workers/1");
  report.set_lease_id("leases/1");
  report.add_results()->mutable_verification()->set_verdict(tir::v1::VERDICT_PASSED);
  tir::v1::WaitOperationRequest wait;
  wait.set_name("operations/0123456789abcdef");
  wait.mutable_timeout()->set_nanos(1000000);
  tir::v1::LookupKernelRequest lookup;
  *lookup.mutable_graph() = compile.graph();
  *lookup.mutable_options() = compile.options();
  const std::vector<std::pair<std::string, std::string>> methods = {
      {"/tir.v1.CompilerService/Compile", compile.SerializeAsString()},
      {"/tir.v1.CompilerService/GetOperation", wait.SerializeAsString()},
      {"/tir.v1.CompilerService/WaitOperation", wait.SerializeAsString()},
      {"/tir.v1.CompilerService/CancelOperation", wait.SerializeAsString()},
      {"/tir.v1.CompilerService/GetKernel", wait.SerializeAsString()},
      {"/tir.v1.CompilerService/LookupKernel", lookup.SerializeAsString()},
      {"/tir.v1.CompilerService/ListKernels", ""},
      {"/tir.v1.CompilerService/DeleteKernel", wait.SerializeAsString()},
      {"/tir.v1.CompilerService/ListWorkers", ""},
      {"/tir.v1.WorkerService/RegisterWorker", reg.SerializeAsString()},
      {"/tir.v1.WorkerService/Heartbeat", lease.SerializeAsString()},
      {"/tir.v1.WorkerService/LeaseWork", lease.SerializeAsString()},
      {"/tir.v1.WorkerService/ReportResult", report.SerializeAsString()},
      {"/tir.v1.WorkerService/Drain", lease.SerializeAsString()},
      {"/tir.v1.WorkerService/ReturnWork", report.SerializeAsString()},
  };
  std::mt19937_64 rng(7);
  std::map<grpc::StatusCode, int> codes;
  std::map<grpc::StatusCode, std::string> example;
  int calls = 0;
  for (const auto &[method, valid] : methods) {
    for (int k = 0; k < 120; ++k) {
      std::string bytes;
      if (k % 3 == 0 && !valid.empty()) {
        bytes = valid.substr(0, rng() % valid.size());  // truncated
      } else if (k % 3 == 1 && !valid.empty()) {
        bytes = valid;
        for (int f = 0; f < 1 + static_cast<int>(rng() % 4); ++f) bytes[rng() % bytes.size()] ^= 1 << (rng() % 8);
      } else {
        bytes.resize(rng() % 300);
        for (char &ch : bytes) ch = static_cast<char>(rng());
      }
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
      grpc::Slice slice(bytes);
      grpc::ByteBuffer request(&slice, 1), response;
      grpc::CompletionQueue cq;
      grpc::Status status;
      auto call = stub.PrepareUnaryCall(&ctx, method, request, &cq);
      call->StartCall();
      call->Finish(&response, &status, reinterpret_cast<void *>(1));
      void *tag = nullptr;
      bool ok = false;
      ASSERT_TRUE(cq.Next(&tag, &ok));
      ++codes[status.error_code()];
      if (!status.ok()) example.emplace(status.error_code(), status.error_message().substr(0, 60));
      ++calls;
      EXPECT_NE(status.error_code(), grpc::StatusCode::UNKNOWN) << method << ": " << status.error_message();
      EXPECT_TRUE(status.ok() || !status.error_details().empty())
          << method << ": code " << status.error_code() << " \"" << status.error_message() << "\" has no reason";
      EXPECT_NE(status.error_code(), grpc::StatusCode::UNAVAILABLE) << method << ": the server went away";
      if (status.error_code() == grpc::StatusCode::UNAVAILABLE) return;
    }
  }
  EXPECT_TRUE(Alive(c.coordinator())) << "the coordinator died";
  EXPECT_TRUE(c.client().ListWorkers().ok()) << "and still serves";
  std::string summary;
  for (const auto &[code, n] : codes) {
    absl::StrAppend(&summary, " code ", static_cast<int>(code), ": ", n,
                    example.count(code) ? " (\"" + example[code] + "\")" : "", ";");
  }
  std::printf("reliability: %d random, truncated and flipped requests over %zu methods:%s the coordinator serves on\n",
              calls, methods.size(), summary.c_str());
}

// Work items for the host from `text`.
std::vector<tir::v1::WorkItem> Items(const std::string &text, size_t per_kernel) {
  auto ctx = makeTirContext();
  auto loaded = LoadGraphText(text, ctx.get());
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  tir::v1::MeasurementPolicy p;
  p.set_min_runs(3);
  p.mutable_time_budget()->set_nanos(2'000'000);
  p.set_seed(5);
  p.set_verify(true);
  p.mutable_min_deadline()->set_seconds(1);
  auto built = tuning::BuildWorkItems(loaded->graph, *target::LookupArch("host"), per_kernel, p);
  EXPECT_TRUE(built.ok()) << built.status();
  std::vector<tir::v1::WorkItem> out;
  for (auto &w : *built) out.push_back(w.item);
  return out;
}

TEST(Reliability, AHundredFaultingHangingAndGoodCandidatesThroughOneWorker) {
  worker::testing::TestCoordinator coordinator;
  std::vector<tir::v1::WorkItem> items = Items(Graph("faulty", 32, 64), 1);
  ASSERT_EQ(items.size(), 1u);
  const tir::v1::CandidateWork good = items[0].candidates(0);
  const std::string head = " tir_kernel(tir_args a) {\n";
  ASSERT_THAT(good.source(), HasSubstr(head));
  auto sabotaged = [&](const std::string &statement) {
    tir::v1::CandidateWork c = good;
    c.set_source(absl::StrReplaceAll(c.source(), {{head, head + "  " + statement + "\n"}}));
    return c;
  };
  const tir::v1::CandidateWork segv = sabotaged("*(volatile int *)0 = 1;");
  const tir::v1::CandidateWork hang = sabotaged("for (;;) { __asm__ volatile(\"\"); }");
  const tir::v1::CandidateWork abrt = sabotaged("__builtin_trap();");
  // 100 candidates in 4 items: 40 good, 30 segfaults, 20 traps, 10 hangs,
  // interleaved.
  std::vector<std::string> kinds;
  int leases = 0;
  for (int item = 0; item < 4; ++item) {
    tir::v1::WorkItem w = items[0];
    w.clear_candidates();
    for (int k = 0; k < 25; ++k) {
      const int n = item * 25 + k;
      const int kind = n % 10;  // 0-3 good, 4-6 segv, 7-8 trap, 9 hang
      tir::v1::CandidateWork c = kind < 4 ? good : kind < 7 ? segv : kind < 9 ? abrt : hang;
      c.set_candidate_index(1000 + n);
      *w.add_candidates() = c;
      kinds.push_back(kind < 4 ? "good" : kind < 7 ? "segv" : kind < 9 ? "trap" : "hang");
    }
    coordinator.Enqueue(w);
    ++leases;
  }
  const int metricsPort = tir::testing::FreePort();
  const pid_t worker = Spawn({Runfile("worker/tir-worker"), "--coordinator=" + coordinator.address(), "--backend=host",
                              "--work-dir=" + TempDir() + "/faulty-w", "--compile-threads=2",
                              absl::StrCat("--metrics-port=", metricsPort),
                              "--runner=" + Runfile("worker/runner/tir-worker-runner")});
  const absl::Time start = absl::Now();
  ASSERT_TRUE(coordinator.WaitFor([&](const auto &s) { return static_cast<int>(s.reports.size()) >= leases; },
                                  absl::Minutes(5)));
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  const auto state = coordinator.state();
  std::map<std::string, std::map<int, int>> verdicts;  // kind -> verdict -> count
  int n = 0;
  for (const std::string &id : state.leased) {
    const auto &r = state.reports.at(id);
    for (const auto &res : r.results()) {
      const int index = static_cast<int>(res.candidate_index()) - 1000;
      ASSERT_GE(index, 0);
      ++verdicts[kinds[index]][res.verification().verdict()];
      ++n;
    }
  }
  EXPECT_EQ(n, 100);
  EXPECT_EQ(verdicts["good"][tir::v1::VERDICT_PASSED], 40) << "every good candidate is measured";
  EXPECT_EQ(verdicts["segv"][tir::v1::VERDICT_FAULT], 30);
  EXPECT_EQ(verdicts["trap"][tir::v1::VERDICT_FAULT], 20);
  EXPECT_EQ(verdicts["hang"][tir::v1::VERDICT_TIMEOUT], 10);
  EXPECT_TRUE(Alive(worker)) << "the worker stays up";
  // A runner is replaced when the next request comes after a fault or a
  // hang: 60 minus the items whose last candidate was one.
  const std::string metrics = tir::testing::HttpGet(metricsPort, "/metrics");
  const std::string name = "\ntir_worker_runner_restarts_total ";
  const size_t at = metrics.find(name);
  ASSERT_NE(at, std::string::npos);
  const int restarts = std::atoi(metrics.c_str() + at + name.size());
  EXPECT_GE(restarts, 56);
  EXPECT_LE(restarts, 60);
  Stop(worker);
  std::printf("reliability: 100 candidates (40 good, 30 segfaults, 20 traps, 10 hangs) through one worker in %.1f s: "
              "%d passed, %d faults, %d timeouts, %d runner restarts, the worker up throughout\n",
              seconds, verdicts["good"][tir::v1::VERDICT_PASSED],
              verdicts["segv"][tir::v1::VERDICT_FAULT] + verdicts["trap"][tir::v1::VERDICT_FAULT],
              verdicts["hang"][tir::v1::VERDICT_TIMEOUT], restarts);
}

}  // namespace
}  // namespace tir
