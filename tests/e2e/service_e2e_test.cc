// End to end on loopback with real processes: tir-coordinator, host
// tir-workers, and a gRPC client: tuning, cache hits, a SIGKILLed worker, a
// coordinator restarted mid-job, concurrent identical submissions, errors
// with their reasons, tokens and cancellation.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/testing/net.h"
#include "tests/testing/process.h"
#include "tir/v1/compiler_service.grpc.pb.h"
#include "tir/v1/error.pb.h"

extern char **environ;

namespace {

using ::testing::HasSubstr;

using tir::testing::Runfile;
using tir::testing::Spawn;
using tir::testing::Stop;
std::string Tmp() { return tir::testing::TempDir(); }

std::string Graph(const std::string &name, int rows, int cols) {
  return absl::StrCat("tir.graph @", name, "(%x: tensor<", rows, "x", cols, "xf32>, %b: tensor<1x", cols,
                      "xf32>) -> tensor<", rows, "x", cols, "xf32> {\n", "  %y = add %x, %b : (tensor<", rows, "x", cols,
                      "xf32>, tensor<1x", cols, "xf32>) -> tensor<", rows, "x", cols, "xf32>\n",
                      "  %g = gelu_approx_tanh_fwd %y : tensor<", rows, "x", cols, "xf32>\n", "  results %g : tensor<",
                      rows, "x", cols, "xf32>\n}\n");
}

// A two-kernel graph (a matmul feeding a row reduction).
constexpr char kMlp[] = R"mlir(
tir.graph @mlp(%x: tensor<32x48xbf16>, %w: tensor<48x64xbf16>, %b: tensor<1x64xf32>) -> tensor<32x64xf32> {
  %m = matmul(%x, %w) : (tensor<32x48xbf16>, tensor<48x64xbf16>) -> tensor<32x64xf32>
  %y = add %m, %b : (tensor<32x64xf32>, tensor<1x64xf32>) -> tensor<32x64xf32>
  %s = reduce(%y)<dimensions = [1], reduction_mode = <max>> : tensor<32x64xf32> -> tensor<32x1xf32>
  %z = sub %y, %s : (tensor<32x64xf32>, tensor<32x1xf32>) -> tensor<32x64xf32>
  results %z : tensor<32x64xf32>
})mlir";

class Service {
 public:
  explicit Service(std::string db, std::string extra_config = "") : db_(std::move(db)), extra_(std::move(extra_config)) {}
  ~Service() {
    for (pid_t w : workers_) Stop(w);
    Stop(coordinator_);
  }
  void StartCoordinator() {
    if (port_ == 0) port_ = tir::testing::FreePort();
    const std::string config = absl::StrCat(db_, ".json");
    std::ofstream(config) << "{\"listen\": \"127.0.0.1:" << port_ << "\", \"db\": \"" << db_
                          << "\", \"heartbeatIntervalMs\": 200, \"lostAfterMs\": 1500, \"tuningBudgetMs\": 5"
                          << extra_ << "}";
    coordinator_ = Spawn({Runfile("server/tir-coordinator"), "--config=" + config});
    channel_ = grpc::CreateChannel(absl::StrCat("127.0.0.1:", port_), grpc::InsecureChannelCredentials());
    stub_ = tir::v1::CompilerService::NewStub(channel_);
    // Serving once a call goes through (the port may still be the old process's).
    for (int i = 0; i < 300; ++i) {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
      tir::v1::ListWorkersResponse out;
      const grpc::Status st = stub_->ListWorkers(&ctx, {}, &out);
      if (st.ok() || st.error_code() == grpc::StatusCode::UNAUTHENTICATED) return;
      absl::SleepFor(absl::Milliseconds(100));
    }
    FAIL() << "the coordinator did not start";
  }
  void KillCoordinator() {
    Stop(coordinator_, SIGKILL);
    coordinator_ = -1;
  }
  pid_t StartWorker(const std::string &token = "") {
    std::vector<std::string> argv = {Runfile("worker/tir-worker"), absl::StrCat("--coordinator=127.0.0.1:", port_),
                                     "--backend=host", "--compile-threads=2",
                                     absl::StrCat("--work-dir=", db_, "-w", workers_.size()),
                                     "--runner=" + Runfile("worker/runner/tir-worker-runner")};
    if (!token.empty()) {
      std::ofstream(db_ + ".wtoken") << token;
      argv.push_back("--token-file=" + db_ + ".wtoken");
    }
    workers_.push_back(Spawn(argv));
    return workers_.back();
  }
  void WaitForWorkers(size_t n) {
    for (int i = 0; i < 300; ++i) {
      if (Workers().workers_size() >= static_cast<int>(n)) return;
      absl::SleepFor(absl::Milliseconds(100));
    }
    FAIL() << "workers did not register";
  }
  tir::v1::ListWorkersResponse Workers() {
    grpc::ClientContext ctx;
    tir::v1::ListWorkersResponse out;
    stub_->ListWorkers(&ctx, {}, &out);
    return out;
  }
  grpc::Status Compile(const std::string &text, const std::string &arch, tir::v1::Operation *op,
                       const std::string &token = "", tir::v1::CompileMode mode = tir::v1::COMPILE_MODE_WAIT) {
    tir::v1::CompileRequest req;
    req.mutable_graph()->set_mlir_text(text);
    req.mutable_options()->set_target_arch(arch);
    req.mutable_options()->set_mode(mode);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    return stub_->Compile(&ctx, req, op);
  }
  tir::v1::Operation Wait(const std::string &name, int seconds = 90) {
    tir::v1::Operation op;
    const absl::Time end = absl::Now() + absl::Seconds(seconds);
    while (absl::Now() < end) {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
      tir::v1::WaitOperationRequest req;
      req.set_name(name);
      req.mutable_timeout()->set_seconds(4);
      grpc::Status s = stub_->WaitOperation(&ctx, req, &op);
      if (s.ok() && op.done()) return op;
    }
    ADD_FAILURE() << "operation " << name << " did not finish";
    return op;
  }
  tir::v1::LookupKernelResponse Lookup(const std::string &text, const std::string &arch) {
    tir::v1::LookupKernelRequest req;
    req.mutable_graph()->set_mlir_text(text);
    req.mutable_options()->set_target_arch(arch);
    grpc::ClientContext ctx;
    tir::v1::LookupKernelResponse out;
    grpc::Status st = stub_->LookupKernel(&ctx, req, &out);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return out;
  }
  tir::v1::CompilerService::Stub &stub() { return *stub_; }
  int port() const { return port_; }

 private:
  std::string db_, extra_;
  int port_ = 0;
  pid_t coordinator_ = -1;
  std::vector<pid_t> workers_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<tir::v1::CompilerService::Stub> stub_;
};

std::string ReasonOf(const grpc::Status &s) {
  tir::v1::Error e;
  return e.ParseFromString(s.error_details()) ? e.reason() : "";
}

void ExpectTunedBundle(const tir::v1::Operation &op, size_t kernels) {
  ASSERT_TRUE(op.done());
  ASSERT_TRUE(op.has_response()) << op.error().reason() << ": " << op.error().message();
  const tir::v1::KernelBundle &b = op.response();
  EXPECT_TRUE(b.tuning().tuned());
  EXPECT_EQ(b.kernels_size(), static_cast<int>(kernels));
  EXPECT_GE(b.tuning().candidates_measured(), kernels);
  EXPECT_LE(b.tuning().candidates_measured(), b.tuning().candidates_total());
  EXPECT_GT(b.tuning().best_seconds(), 0);
  for (const auto &k : b.kernels()) {
    EXPECT_EQ(k.binary().substr(0, 4), "\x7f" "ELF");
    EXPECT_EQ(k.format(), tir::v1::BINARY_FORMAT_HOST_SHARED_OBJECT);
    EXPECT_EQ(k.verification().verdict(), tir::v1::VERDICT_PASSED);
    EXPECT_LE(k.verification().relative_l2_error(), k.verification().tolerance());
    EXPECT_GE(k.measurement().samples(), 1u);
    EXPECT_FALSE(k.source().empty());
  }
  EXPECT_THAT(b.provenance().worker(), HasSubstr("workers/"));
}

TEST(ServiceE2E, TunesThenServesTheRepeatFromTheCacheWithoutNewWork) {
  Service s(Tmp() + "/db1");
  s.StartCoordinator();
  s.StartWorker();
  s.StartWorker();
  s.WaitForWorkers(2);
  tir::v1::Operation op;
  ASSERT_TRUE(s.Compile(kMlp, "host", &op).ok());
  EXPECT_FALSE(op.metadata().cache_hit());
  op = s.Wait(op.name());
  ExpectTunedBundle(op, 2);
  const std::string key = op.response().key();
  absl::SleepFor(absl::Milliseconds(600));  // the workers' counts arrive with their heartbeats
  uint64_t measured = 0;
  const tir::v1::ListWorkersResponse before = s.Workers();
  for (const auto &w : before.workers()) measured += w.candidates_measured();
  tir::v1::Operation again;
  ASSERT_TRUE(s.Compile(kMlp, "host", &again).ok());
  EXPECT_TRUE(again.done());
  EXPECT_TRUE(again.metadata().cache_hit());
  EXPECT_EQ(again.response().key(), key);
  absl::SleepFor(absl::Milliseconds(600));  // a heartbeat later
  uint64_t after = 0;
  const tir::v1::ListWorkersResponse later = s.Workers();
  for (const auto &w : later.workers()) after += w.candidates_measured();
  EXPECT_EQ(after, measured) << "a cache hit measures nothing";
  EXPECT_TRUE(s.Lookup(kMlp, "host").found());
}

TEST(ServiceE2E, ASigkilledWorkerDoesNotLoseTheJob) {
  Service s(Tmp() + "/db2", ", \"tuningBudgetMs\": 400");
  s.StartCoordinator();
  const pid_t first = s.StartWorker();
  s.WaitForWorkers(1);
  tir::v1::Operation op;
  ASSERT_TRUE(s.Compile(Graph("slow", 128, 256), "host", &op).ok());
  // Wait until the only worker holds the lease, then kill it mid-measurement.
  for (int i = 0; i < 300; ++i) {
    auto w = s.Workers();
    if (w.workers_size() == 1 && w.workers(0).active_leases() > 0) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  absl::SleepFor(absl::Milliseconds(300));
  kill(first, SIGKILL);
  s.StartWorker();
  op = s.Wait(op.name());
  ExpectTunedBundle(op, 1);
}

TEST(ServiceE2E, ARestartedCoordinatorResumesItsJobAndKeepsItsKernels) {
  const std::string db = Tmp() + "/db3";
  std::string stored;
  {
    Service s(db);
    s.StartCoordinator();
    s.StartWorker();
    s.WaitForWorkers(1);
    tir::v1::Operation op;
    ASSERT_TRUE(s.Compile(Graph("kept", 16, 32), "host", &op).ok());
    op = s.Wait(op.name());
    ExpectTunedBundle(op, 1);
    stored = op.response().key();
  }
  Service s(db);
  s.StartCoordinator();
  // No worker: answered at once with the untuned default; the job is persisted.
  tir::v1::Operation op;
  ASSERT_TRUE(s.Compile(Graph("resumed", 24, 40), "host", &op).ok());
  ASSERT_TRUE(op.done());
  EXPECT_FALSE(op.response().tuning().tuned());
  EXPECT_EQ(op.response().kernels(0).binary().substr(0, 4), "\x7f" "ELF");
  s.KillCoordinator();
  s.StartCoordinator();
  s.StartWorker();
  bool found = false;
  for (int i = 0; i < 600 && !found; ++i) {
    found = s.Lookup(Graph("resumed", 24, 40), "host").found();
    if (!found) absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_TRUE(found) << "the resumed job stored its tuned bundle";
  EXPECT_TRUE(s.Lookup(Graph("resumed", 24, 40), "host").bundle().tuning().tuned());
  auto kept = s.Lookup(Graph("kept", 16, 32), "host");
  EXPECT_TRUE(kept.found());
  EXPECT_EQ(kept.key(), stored);
}

TEST(ServiceE2E, EightConcurrentIdenticalSubmissionsShareOneTuning) {
  Service s(Tmp() + "/db4");
  s.StartCoordinator();
  s.StartWorker();
  s.WaitForWorkers(1);
  std::vector<tir::v1::Operation> ops(8);
  std::vector<std::thread> clients;
  for (int i = 0; i < 8; ++i) {
    clients.emplace_back([&, i] { EXPECT_TRUE(s.Compile(Graph("shared", 64, 96), "host", &ops[i]).ok()); });
  }
  for (auto &t : clients) t.join();
  std::set<std::string> names;
  for (auto &op : ops) {
    names.insert(op.name());
    op = s.Wait(op.name());
    ExpectTunedBundle(op, 1);
  }
  EXPECT_EQ(names.size(), 8u);
  // One tuning: every operation got the very same stored bundle.
  for (const auto &op : ops) {
    EXPECT_EQ(op.response().create_time().seconds(), ops[0].response().create_time().seconds());
    EXPECT_EQ(op.response().create_time().nanos(), ops[0].response().create_time().nanos());
  }
}

TEST(ServiceE2E, BadRequestsGetTheirCodeAndReason) {
  std::ofstream(Tmp() + "/client.token") << "s3cret\n";
  std::ofstream(Tmp() + "/read.token") << "look-only\n";
  Service s(Tmp() + "/db5", ", \"maxMessageBytes\": 1048576, \"clientTokenFile\": \"" + Tmp() +
                                "/client.token\", \"readTokenFile\": \"" + Tmp() + "/read.token\"");
  s.StartCoordinator();
  tir::v1::Operation op;
  grpc::Status st = s.Compile("tir.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> { results %y : tensor<4xf32> }",
                              "host", &op, "s3cret");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(ReasonOf(st), "INVALID_GRAPH");
  st = s.Compile(Graph("g", 4, 4), "sm_1000", &op, "s3cret");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(ReasonOf(st), "UNKNOWN_ARCH");
  st = s.Compile(Graph("g", 4, 4) + std::string(2 << 20, ' '), "host", &op, "s3cret");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  st = s.Compile(Graph("g", 4, 4), "host", &op);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(ReasonOf(st), "UNAUTHENTICATED");
  st = s.Compile(Graph("g", 4, 4), "host", &op, "wrong");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  // Reads need a token too: the client's or the read token; the read token
  // allows nothing else.
  st = s.Compile(Graph("g", 4, 4), "host", &op, "look-only");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(ReasonOf(st), "READ_ONLY_ROLE");
  const auto read = [&](const std::string &token) {
    std::vector<grpc::Status> out;
    const auto ctx = [&](grpc::ClientContext &c) {
      if (!token.empty()) c.AddMetadata("authorization", "Bearer " + token);
    };
    {
      grpc::ClientContext c;
      ctx(c);
      tir::v1::ListKernelsResponse r;
      out.push_back(s.stub().ListKernels(&c, {}, &r));
    }
    {
      grpc::ClientContext c;
      ctx(c);
      tir::v1::ListWorkersResponse r;
      out.push_back(s.stub().ListWorkers(&c, {}, &r));
    }
    {
      grpc::ClientContext c;
      ctx(c);
      tir::v1::GetKernelRequest q;
      q.set_name("kernels/none");
      tir::v1::KernelBundle r;
      out.push_back(s.stub().GetKernel(&c, q, &r));
    }
    {
      grpc::ClientContext c;
      ctx(c);
      tir::v1::GetOperationRequest q;
      q.set_name("operations/0123456789abcdef");
      tir::v1::Operation r;
      out.push_back(s.stub().GetOperation(&c, q, &r));
    }
    {
      grpc::ClientContext c;
      ctx(c);
      tir::v1::WaitOperationRequest q;
      q.set_name("operations/0123456789abcdef");
      tir::v1::Operation r;
      out.push_back(s.stub().WaitOperation(&c, q, &r));
    }
    {
      grpc::ClientContext c;
      ctx(c);
      tir::v1::LookupKernelRequest q;
      q.mutable_graph()->set_mlir_text(Graph("g", 4, 4));
      q.mutable_options()->set_target_arch("host");
      tir::v1::LookupKernelResponse r;
      out.push_back(s.stub().LookupKernel(&c, q, &r));
    }
    {
      grpc::ClientContext c;
      ctx(c);
      tir::v1::WatchOperationRequest q;
      q.set_name("operations/0123456789abcdef");
      auto reader = s.stub().WatchOperation(&c, q);
      tir::v1::Operation r;
      while (reader->Read(&r)) {
      }
      out.push_back(reader->Finish());
    }
    return out;
  };
  for (const grpc::Status &r : read("")) {
    EXPECT_EQ(r.error_code(), grpc::StatusCode::UNAUTHENTICATED) << r.error_message();
  }
  for (const std::string &token : {"s3cret", "look-only"}) {
    for (const grpc::Status &r : read(token)) {
      EXPECT_NE(r.error_code(), grpc::StatusCode::UNAUTHENTICATED) << token << ": " << r.error_message();
    }
  }
}

TEST(ServiceE2E, OffLoopbackWithoutAWorkerTokenTheCoordinatorRefusesToStart) {
  const int port = tir::testing::FreePort();
  const std::string db = Tmp() + "/db-insecure";
  const std::string err = Tmp() + "/insecure.err";
  std::vector<std::string> argv = {"/bin/sh", "-c",
                                   absl::StrCat(Runfile("server/tir-coordinator"), " --listen=0.0.0.0:", port,
                                                " --db=", db, " 2>", err)};
  pid_t pid = Spawn(argv);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  std::ifstream in(err);
  const std::string message((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(message, HasSubstr("without workerTokenFile"));
  EXPECT_THAT(message, HasSubstr("--insecure"));
  // Told --insecure, it serves.
  pid = Spawn({Runfile("server/tir-coordinator"), absl::StrCat("--listen=0.0.0.0:", port), "--db=" + db, "--insecure"});
  auto channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials());
  auto stub = tir::v1::CompilerService::NewStub(channel);
  bool served = false;
  for (int i = 0; i < 300 && !served; ++i) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
    tir::v1::ListWorkersResponse out;
    served = stub->ListWorkers(&ctx, {}, &out).ok();
    if (!served) absl::SleepFor(absl::Milliseconds(100));
  }
  Stop(pid);
  EXPECT_TRUE(served);
}

TEST(ServiceE2E, CancelStopsTheWork) {
  Service s(Tmp() + "/db6", ", \"tuningBudgetMs\": 300");
  s.StartCoordinator();
  s.StartWorker();
  s.WaitForWorkers(1);
  tir::v1::Operation op;
  ASSERT_TRUE(s.Compile(Graph("cancelled", 128, 128), "host", &op).ok());
  absl::SleepFor(absl::Milliseconds(300));
  grpc::ClientContext ctx;
  tir::v1::CancelOperationRequest req;
  req.set_name(op.name());
  tir::v1::Operation cancelled;
  ASSERT_TRUE(s.stub().CancelOperation(&ctx, req, &cancelled).ok());
  EXPECT_TRUE(cancelled.done());
  EXPECT_EQ(cancelled.error().reason(), "CANCELLED");
  // The worker is told to drop the lease and nothing is stored.
  bool idle = false;
  for (int i = 0; i < 100 && !idle; ++i) {
    const tir::v1::ListWorkersResponse w = s.Workers();
    idle = w.workers_size() == 1 && w.workers(0).active_leases() == 0;
    if (!idle) absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_TRUE(idle);
  absl::SleepFor(absl::Seconds(1));
  EXPECT_FALSE(s.Lookup(Graph("cancelled", 128, 128), "host").found());
}

}  // namespace
