// TLS end to end: a coordinator serving with a certificate (made here with
// openssl) and a client token; the client connects with the CA, and a
// plaintext client or a missing token is refused.

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "compiler/support/status.h"
#include "gtest/gtest.h"
#include "server/api/server.h"
#include "tests/testing/net.h"

extern char **environ;

namespace tir {
namespace {

std::string Read(const std::string &path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(Tls, ClientsConnectWithTheCaAndTheTokenOnly) {
  const std::string dir = std::getenv("TEST_TMPDIR");
  const std::string cmd = absl::StrCat(
      "cd ", dir, " && openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost ",
      "-addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout key.pem -out cert.pem >/dev/null 2>&1");
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "openssl could not make a certificate";
  std::ofstream(dir + "/client.token") << "secret-token\n";
  tir::v1::CoordinatorConfig config;
  const int port = testing::FreePort();
  config.set_listen(absl::StrCat("127.0.0.1:", port));
  config.set_db(dir + "/db");
  config.set_tls_cert_file(dir + "/cert.pem");
  config.set_tls_key_file(dir + "/key.pem");
  config.set_client_token_file(dir + "/client.token");
  auto server = api::CoordinatorServer::Start(config);
  ASSERT_TRUE(server.ok()) << server.status();

  ClientOptions o;
  o.address = absl::StrCat("localhost:", port);
  o.tls_root_certs = Read(dir + "/cert.pem");
  o.token = "secret-token";
  o.max_attempts = 1;
  o.call_timeout = absl::Seconds(10);
  auto good = Client::Connect(o);
  ASSERT_TRUE(good.ok());
  auto workers = (*good)->ListWorkers();
  EXPECT_TRUE(workers.ok()) << workers.status();
  tir::v1::CompileOptions options;
  options.set_target_arch("host");
  auto bad = (*good)->Compile(GraphSourceFromText("tir.graph @g("), options);
  EXPECT_EQ(ReasonOf(bad.status()), "INVALID_GRAPH") << "a write with the token reaches the coordinator";

  ClientOptions noToken = o;
  noToken.token.clear();
  auto anonymous = Client::Connect(noToken);
  auto refused = (*anonymous)->Compile(GraphSourceFromText("tir.graph @g("), options);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(ReasonOf(refused.status()), "UNAUTHENTICATED");
  EXPECT_EQ(ReasonOf((*anonymous)->ListWorkers().status()), "UNAUTHENTICATED") << "reads need a token too";

  // A worker over TLS registers (and one without the CA does not).
  auto spawn = [&](bool withCa) {
    std::vector<std::string> argv = {absl::StrCat(std::getenv("TEST_SRCDIR"), "/", std::getenv("TEST_WORKSPACE"),
                                                  "/worker/tir-worker"),
                                     absl::StrCat("--coordinator=localhost:", port), "--backend=host",
                                     "--work-dir=" + dir + "/w"};
    if (withCa) argv.push_back("--tls-ca=" + dir + "/cert.pem");
    std::vector<char *> args;
    for (auto &a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    pid_t pid = -1;
    posix_spawn(&pid, args[0], nullptr, nullptr, args.data(), environ);
    return pid;
  };
  const pid_t plainWorker = spawn(false), tlsWorker = spawn(true);
  int registered = 0;
  for (int i = 0; i < 100 && registered == 0; ++i) {
    auto w = (*good)->ListWorkers();
    registered = w.ok() ? w->workers_size() : 0;
    absl::SleepFor(absl::Milliseconds(100));
  }
  absl::SleepFor(absl::Milliseconds(500));
  auto w = (*good)->ListWorkers();
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->workers_size(), 1) << "only the worker with the CA gets through";
  for (pid_t p : {plainWorker, tlsWorker}) {
    kill(p, SIGKILL);
    waitpid(p, nullptr, 0);
  }

  ClientOptions plaintext = o;
  plaintext.tls_root_certs.clear();
  auto plain = Client::Connect(plaintext);
  EXPECT_EQ((*plain)->ListWorkers().status().code(), absl::StatusCode::kUnavailable)
      << "a plaintext client cannot talk to a TLS coordinator";
}

}  // namespace
}  // namespace tir
