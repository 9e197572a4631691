// tir::Client against a live coordinator on loopback (in this process, with
// a host worker and its runner).

#include "client/client.h"

#include <thread>

#include "absl/strings/str_cat.h"
#include "client/embedded.h"
#include "compiler/support/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/api/server.h"

namespace tir {
namespace {

using ::testing::HasSubstr;

std::string Tmp() { return std::getenv("TEST_TMPDIR"); }

std::string Graph(int rows, int cols) {
  return absl::StrCat("tir.graph @g(%x: tensor<", rows, "x", cols, "xf32>) -> tensor<", rows, "x", cols, "xf32> {\n",
                      "  %y = exp %x : tensor<", rows, "x", cols, "xf32>\n  results %y : tensor<", rows, "x", cols,
                      "xf32>\n}\n");
}

tir::v1::CompileOptions Host(tir::v1::CompileMode mode = tir::v1::COMPILE_MODE_WAIT) {
  tir::v1::CompileOptions o;
  o.set_target_arch("host");
  o.set_mode(mode);
  return o;
}

double Counter(prometheus::Registry &r, const std::string &name, const std::string &method, const std::string &code) {
  double v = 0;
  for (const auto &f : r.Collect()) {
    if (f.name != name) continue;
    for (const auto &m : f.metric) {
      std::map<std::string, std::string> labels;
      for (const auto &l : m.label) labels[l.name] = l.value;
      if (labels["method"] == method && labels["code"] == code) v += m.counter.value;
    }
  }
  return v;
}

class ClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    client::EmbeddedOptions o;
    o.cache_dir = Tmp() + "/cache";
    o.backend = "host";
    auto e = client::EmbeddedService::Start(o);
    ASSERT_TRUE(e.ok()) << e.status();
    service_ = e->release();
  }
  static void TearDownTestSuite() { delete service_; }
  std::unique_ptr<Client> Make(absl::Duration timeout = absl::Seconds(30)) {
    ClientOptions o;
    o.address = service_->address();
    o.call_timeout = timeout;
    auto c = Client::Connect(o);
    EXPECT_TRUE(c.ok());
    return std::move(*c);
  }
  static client::EmbeddedService *service_;
};
client::EmbeddedService *ClientTest::service_ = nullptr;

TEST_F(ClientTest, CompileWaitReturnsTheTunedBundleAndTheRepeatIsACacheHit) {
  auto c = Make();
  auto op = c->Compile(GraphSourceFromText(Graph(32, 48)), Host());
  ASSERT_TRUE(op.ok()) << op.status();
  auto done = c->Wait(op->name(), absl::Minutes(2));
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_TRUE(done->done());
  ASSERT_TRUE(done->has_response()) << done->error().message();
  EXPECT_TRUE(done->response().tuning().tuned());
  auto again = c->Compile(GraphSourceFromText(Graph(32, 48)), Host());
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->metadata().cache_hit());
  auto bundle = c->GetKernel(done->response().key());
  ASSERT_TRUE(bundle.ok());
  EXPECT_EQ(bundle->kernels(0).binary(), done->response().kernels(0).binary());
  auto list = c->ListKernels(10, "", "host");
  ASSERT_TRUE(list.ok());
  EXPECT_GE(list->kernels_size(), 1);
  EXPECT_TRUE(list->kernels(0).kernels(0).binary().empty()) << "listing is metadata only";
  auto lookup = c->Lookup(GraphSourceFromText(Graph(32, 48)), Host());
  ASSERT_TRUE(lookup.ok());
  EXPECT_TRUE(lookup->found());
  auto deleted = c->DeleteKernel(done->response().key());
  ASSERT_TRUE(deleted.ok());
  EXPECT_TRUE(*deleted);
  EXPECT_EQ(ReasonOf(c->GetKernel(done->response().key()).status()), "NOT_FOUND");
}

TEST_F(ClientTest, HeuristicNowAnswersAtOnceWithTheDefault) {
  auto c = Make();
  auto op = c->Compile(GraphSourceFromText(Graph(16, 80)), Host(tir::v1::COMPILE_MODE_HEURISTIC_NOW));
  ASSERT_TRUE(op.ok()) << op.status();
  EXPECT_TRUE(op->done());
  EXPECT_FALSE(op->response().tuning().tuned());
  EXPECT_TRUE(op->response().kernels(0).candidate().is_default());
}

TEST_F(ClientTest, WatchReportsProgressUntilDone) {
  auto c = Make();
  // A graph whose tuning (a host compile per candidate) outlasts the start
  // of the watch, so a progress state comes before the final one; a size no
  // other test compiles (the suite shares one coordinator and its store).
  auto op = c->Compile(GraphSourceFromText(Graph(192, 320)), Host());
  ASSERT_TRUE(op.ok());
  EXPECT_FALSE(op->done());
  int updates = 0;
  auto last = c->Watch(op->name(), absl::Minutes(2), [&](const tir::v1::Operation &) { ++updates; });
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_TRUE(last->done());
  EXPECT_GE(updates, 2) << "at least a progress state and the final one";
}

TEST_F(ClientTest, AShortWaitReturnsTheRunningOperationAndCancelEndsIt) {
  auto c = Make();
  auto op = c->Compile(GraphSourceFromText(Graph(200, 300)), Host());
  ASSERT_TRUE(op.ok());
  auto waited = c->Wait(op->name(), absl::Milliseconds(50));
  ASSERT_TRUE(waited.ok()) << waited.status();
  EXPECT_FALSE(waited->done());
  auto cancelled = c->Cancel(op->name());
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(cancelled->error().reason(), "CANCELLED");
}

TEST_F(ClientTest, ACallPastItsDeadlineFailsCleanly) {
  auto c = Make(absl::Milliseconds(1));
  auto op = c->Compile(GraphSourceFromText(Graph(8, 8)), Host());
  ASSERT_FALSE(op.ok());
  EXPECT_EQ(op.status().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST_F(ClientTest, InvalidArgumentIsNotRetriedAndKeepsItsReason) {
  auto c = Make();
  auto op = c->Compile(GraphSourceFromText("tir.graph @g("), Host());
  ASSERT_FALSE(op.ok());
  EXPECT_EQ(op.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReasonOf(op.status()), "INVALID_GRAPH");
}

TEST(ClientRetry, UnavailableIsRetriedUntilTheCoordinatorIsUp) {
  // A port with nothing behind it yet; the coordinator starts 300 ms later.
  tir::v1::CoordinatorConfig config;
  int port = 0;
  {
    grpc::ServerBuilder probe;
    probe.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    tir::v1::CompilerService::Service placeholder;
    probe.RegisterService(&placeholder);
    probe.BuildAndStart()->Shutdown();
  }
  config.set_listen(absl::StrCat("127.0.0.1:", port));
  config.set_db(Tmp() + "/retry-db");
  std::unique_ptr<api::CoordinatorServer> server;
  std::thread starter([&] {
    absl::SleepFor(absl::Milliseconds(300));
    auto s = api::CoordinatorServer::Start(config);
    ASSERT_TRUE(s.ok()) << s.status();
    server = std::move(*s);
  });
  ClientOptions o;
  o.address = config.listen();
  o.max_attempts = 5;
  o.initial_backoff = absl::Milliseconds(500);
  o.call_timeout = absl::Seconds(5);
  auto c = Client::Connect(o);
  ASSERT_TRUE(c.ok());
  auto workers = (*c)->ListWorkers();
  starter.join();
  EXPECT_TRUE(workers.ok()) << workers.status();
  // The same client: INVALID_ARGUMENT reaches the server exactly once.
  auto bad = (*c)->Compile(GraphSourceFromText("tir.graph @g("), Host());
  EXPECT_EQ(ReasonOf(bad.status()), "INVALID_GRAPH");
  EXPECT_EQ(Counter(server->registry(), "tir_requests_total", "Compile", "INVALID_ARGUMENT"), 1);
  // Delete is not retried even on UNAVAILABLE: nothing listens any more.
  server.reset();
  ClientOptions once = o;
  once.call_timeout = absl::Seconds(2);
  auto d = Client::Connect(once);
  auto del = (*d)->DeleteKernel("kernels/x");
  EXPECT_EQ(del.status().code(), absl::StatusCode::kUnavailable);
}

TEST(ClientRetryPolicy, RetriesEveryCallButTheWriteThatIsNotIdempotentAtMostFiveTimes) {
  const std::string config = RetryServiceConfig(8, absl::Milliseconds(250));
  EXPECT_THAT(config, HasSubstr(R"("maxAttempts":5)")) << "gRPC's cap";
  EXPECT_THAT(config, HasSubstr(R"("initialBackoff":"0.25s")"));
  EXPECT_THAT(config, HasSubstr(R"("retryableStatusCodes":["UNAVAILABLE"])"));
  for (const char *m : {"Compile", "GetOperation", "WaitOperation", "GetKernel", "LookupKernel", "ListKernels"}) {
    EXPECT_THAT(config, HasSubstr(absl::StrCat(R"("method":")", m, R"(")"))) << m;
  }
  EXPECT_THAT(config, ::testing::Not(HasSubstr("DeleteKernel")));
  EXPECT_THAT(config, ::testing::Not(HasSubstr("WatchOperation")));
  EXPECT_EQ(RetryServiceConfig(1, absl::Milliseconds(100)), "") << "one attempt: no retry policy";
}

}  // namespace
}  // namespace tir
