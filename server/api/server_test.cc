// What a coordinator refuses to start with: off loopback, the settings that
// would hand its port or its tokens to anyone on the network.

#include "server/api/server.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "compiler/support/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/net.h"
#include "tir/v1/compiler_service.grpc.pb.h"
#include "tir/v1/worker_service.grpc.pb.h"

namespace tir::api {
namespace {

using ::testing::HasSubstr;

class ServerStartTest : public ::testing::Test {
 protected:
  tir::v1::CoordinatorConfig Config(const std::string &name) {
    const std::string dir = absl::StrCat(std::getenv("TEST_TMPDIR"), "/", name);
    tir::v1::CoordinatorConfig c;
    c.set_listen(absl::StrCat("0.0.0.0:", tir::testing::FreePort()));
    c.set_db(dir);
    c.set_work_dir(dir + "-work");
    std::ofstream(dir + ".token") << "a-token-of-sixteen-bytes\n";
    token_ = dir + ".token";
    return c;
  }
  std::string token_;
};

TEST_F(ServerStartTest, OffLoopbackItNeedsWorkerTokensTlsAndALoopbackDashboard) {
  tir::v1::CoordinatorConfig c = Config("bare");
  auto s = CoordinatorServer::Start(c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(ReasonOf(s.status()), "INSECURE_LISTEN");
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("without workerTokenFile or worker credentials"));

  c = Config("no_tls");
  c.set_worker_token_file(token_);
  c.set_client_token_file(token_ + "2");
  std::ofstream(token_ + "2") << "another-token-of-sixteen\n";
  s = CoordinatorServer::Start(c);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("without TLS"));

  c = Config("dashboard");
  c.set_worker_token_file(token_);
  c.set_client_token_file(token_);
  c.set_dashboard_port(tir::testing::FreePort());
  c.set_http_address("0.0.0.0");
  s = CoordinatorServer::Start(c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(ReasonOf(s.status()), "INSECURE_LISTEN");
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("refusing to serve the dashboard on 0.0.0.0"));

  // --insecure is the operator saying so.
  c.set_insecure(true);
  s = CoordinatorServer::Start(c);
  ASSERT_TRUE(s.ok()) << s.status();
  (*s)->Shutdown();
}

TEST_F(ServerStartTest, ACredentialsFileIsCheckedAtStart) {
  tir::v1::CoordinatorConfig c = Config("creds");
  c.set_listen(absl::StrCat("127.0.0.1:", tir::testing::FreePort()));
  const std::string creds = token_ + ".creds";
  std::ofstream(creds) << "read viewer viewer-token-0123456789\n";
  c.set_credentials_file(creds);
  auto s = CoordinatorServer::Start(c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(ReasonOf(s.status()), "INVALID_CONFIG");
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("no one could compile"));
  std::ofstream(creds) << "worker gpu-0 short\n";
  s = CoordinatorServer::Start(c);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("line 1: a token has at least 16 bytes"));
  std::ofstream(creds) << "# workers\nworker gpu-0 gpu-0-token-0123456789\n";
  s = CoordinatorServer::Start(c);
  ASSERT_TRUE(s.ok()) << s.status();
  (*s)->Shutdown();
}

// The local service's coordinator: on a Unix socket (reached only through
// the file's permissions: no worker token needed), and it tells client calls
// (what keeps it from exiting idle) from its worker's.
TEST(CoordinatorServerTest, ServesOnAUnixSocketAndCountsClientCallsOnly) {
  char dir[] = "/tmp/tir-unix.XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  tir::v1::CoordinatorConfig c;
  c.set_listen(absl::StrCat("unix:", dir, "/sock"));
  c.set_db(absl::StrCat(dir, "/db"));
  auto s = CoordinatorServer::Start(c);
  ASSERT_TRUE(s.ok()) << s.status();
  const ClientActivity &activity = (*s)->client_activity();
  const absl::Time before = activity.last();
  EXPECT_EQ(activity.in_flight(), 0);
  auto channel = grpc::CreateChannel(c.listen(), grpc::InsecureChannelCredentials());
  {
    grpc::ClientContext ctx;
    tir::v1::HeartbeatRequest r;
    r.set_name("workers/nobody");
    tir::v1::HeartbeatResponse out;
    (void)tir::v1::WorkerService::NewStub(channel)->Heartbeat(&ctx, r, &out);
  }
  EXPECT_EQ(activity.last(), before) << "a worker's call is not client activity";
  grpc::ClientContext ctx;
  tir::v1::ListWorkersResponse workers;
  const grpc::Status listed =
      tir::v1::CompilerService::NewStub(channel)->ListWorkers(&ctx, tir::v1::ListWorkersRequest(), &workers);
  EXPECT_TRUE(listed.ok()) << listed.error_message();
  EXPECT_GT(activity.last(), before);
  // The server ends its side of a call (and the count) after the client has
  // its answer: wait for it, a bounded while.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (activity.in_flight() != 0 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(activity.in_flight(), 0) << "the call ended";
  s->reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tir::api
