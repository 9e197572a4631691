#include "server/api/auth.h"

#include "compiler/support/status.h"
#include "grpcpp/server_context.h"
#include "grpcpp/test/server_context_test_spouse.h"
#include "gtest/gtest.h"
#include "tir/v1/compiler_service.pb.h"
#include "tir/v1/worker_service.pb.h"

namespace tir::api {
namespace {

// Every method both services declare has its role: a new RPC without one
// would be refused (INTERNAL) rather than served unchecked.
TEST(AuthTest, EveryMethodOfBothServicesHasARole) {
  const google::protobuf::ServiceDescriptor *client =
      tir::v1::CompileRequest::descriptor()->file()->FindServiceByName("CompilerService");
  const google::protobuf::ServiceDescriptor *worker =
      tir::v1::LeaseWorkRequest::descriptor()->file()->FindServiceByName("WorkerService");
  ASSERT_NE(client, nullptr);
  ASSERT_NE(worker, nullptr);
  int methods = 0;
  for (int i = 0; i < client->method_count(); ++i, ++methods) {
    const Role r = RoleOf(client->method(i)->name());
    EXPECT_TRUE(r == Role::kClient || r == Role::kRead) << client->method(i)->name();
  }
  for (int i = 0; i < worker->method_count(); ++i, ++methods) {
    EXPECT_EQ(RoleOf(worker->method(i)->name()), Role::kWorker) << worker->method(i)->name();
  }
  EXPECT_EQ(methods, 16);
  EXPECT_EQ(RoleOf("Compile"), Role::kClient);
  EXPECT_EQ(RoleOf("GetOperation"), Role::kRead);
  EXPECT_EQ(RoleOf("DeleteKernel"), Role::kClient) << "a write is not a read";
  EXPECT_EQ(RoleOf("NoSuchMethod"), Role::kUnknown);
}

TEST(AuthTest, ACallWithoutATokenIsRefusedWhereOneIsSet) {
  grpc::ServerContext call;  // no metadata
  const Authenticator open(Tokens{});
  EXPECT_TRUE(open.Check(call, "Compile").ok());
  EXPECT_TRUE(open.Check(call, "LeaseWork").ok());
  EXPECT_EQ(ReasonOf(open.Check(call, "NoSuchMethod")), "INTERNAL");

  const Authenticator clients(Tokens{"client-secret", "", ""});
  EXPECT_EQ(ReasonOf(clients.Check(call, "Compile")), "UNAUTHENTICATED");
  EXPECT_EQ(ReasonOf(clients.Check(call, "GetOperation")), "UNAUTHENTICATED");
  EXPECT_TRUE(clients.Check(call, "LeaseWork").ok()) << "no worker token is set";

  const Authenticator workers(Tokens{"", "", "worker-secret"});
  EXPECT_TRUE(workers.Check(call, "Compile").ok());
  EXPECT_EQ(ReasonOf(workers.Check(call, "ReportResult")), "UNAUTHENTICATED");
}

TEST(AuthTest, CredentialsFilesAreParsedWithTheirLine) {
  auto c = ParseCredentials(
      "# role identity token\n\nclient team-a aaaaaaaaaaaaaaaa\n  read viewer bbbbbbbbbbbbbbbb  \nworker gpu-0 "
      "cccccccccccccccc\n",
      "creds");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->size(), 3u);
  EXPECT_EQ((*c)[0].role, Role::kClient);
  EXPECT_EQ((*c)[1].identity, "viewer");
  EXPECT_EQ((*c)[2].token, "cccccccccccccccc");
  for (const auto &[text, why] : std::vector<std::pair<std::string, std::string>>{
           {"owner root aaaaaaaaaaaaaaaa", "line 1: role must be client, read, admin or worker"},
           {"client a aaaaaaaaaaaaaaaa\nadmin a bbbbbbbbbbbbbbbb", "line 2: identity a is listed twice"},
           {"client team-a\n", "line 1: want"},
           {"\nclient a/b aaaaaaaaaaaaaaaa", "line 2: an identity is"},
           {"client a short", "at least 16 bytes"},
           {"client a aaaaaaaaaaaaaaaa\nclient a bbbbbbbbbbbbbbbb", "line 2: identity a is listed twice"},
           {"client a aaaaaaaaaaaaaaaa\nworker b aaaaaaaaaaaaaaaa", "a token is listed twice"},
           {"client a aaaaaaaaaaaaaaaa\nread a bbbbbbbbbbbbbbbb", "line 2: identity a is listed twice"},
           {"client a aaaaaaaaaaaaaa\x01\x01", "printable ASCII"},
           {"# nothing\n\n", "has no credentials"},
       }) {
    auto bad = ParseCredentials(text, "creds");
    ASSERT_FALSE(bad.ok()) << text;
    EXPECT_EQ(ReasonOf(bad.status()), "INVALID_CONFIG");
    EXPECT_NE(bad.status().message().find(why), std::string::npos) << bad.status().message();
    EXPECT_NE(bad.status().message().find("credentialsFile creds"), std::string::npos);
  }
}

// A call is its credential's identity; a shared token is anonymous; a
// credential grants its role only.
TEST(AuthTest, ACredentialNamesItsCaller) {
  Tokens t;
  t.client = "shared-client-token";
  t.credentials = {{Role::kClient, "team-a", "team-a-token-0000"},
                   {Role::kRead, "viewer", "viewer-token-0000"},
                   {Role::kWorker, "gpu-0", "gpu-0-token-00000"}};
  const Authenticator auth(t);
  // A call presenting `token` (the spouse holds the metadata's bytes).
  struct Call {
    grpc::ServerContext ctx;
    grpc::testing::ServerContextTestSpouse spouse{&ctx};
  };
  std::vector<std::unique_ptr<Call>> calls;
  auto with = [&](const std::string &token) -> grpc::ServerContext & {
    calls.push_back(std::make_unique<Call>());
    calls.back()->spouse.AddClientMetadata("authorization", "Bearer " + token);
    return calls.back()->ctx;
  };
  std::string who = "stale";
  EXPECT_TRUE(auth.Check(with("team-a-token-0000"), "Compile", &who).ok());
  EXPECT_EQ(who, "team-a");
  EXPECT_TRUE(auth.Check(with("team-a-token-0000"), "GetOperation", &who).ok()) << "a client reads too";
  EXPECT_TRUE(auth.Check(with("shared-client-token"), "Compile", &who).ok());
  EXPECT_EQ(who, "") << "the shared token is anonymous";
  EXPECT_TRUE(auth.Check(with("viewer-token-0000"), "ListKernels", &who).ok());
  EXPECT_EQ(who, "viewer");
  // A read credential is known, and may only read: a write is forbidden to
  // it, not unauthenticated.
  for (const char *write : {"Compile", "DeleteKernel", "CancelOperation"}) {
    const absl::Status refused = auth.Check(with("viewer-token-0000"), write, &who);
    EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied) << write;
    EXPECT_EQ(ReasonOf(refused), "READ_ONLY_ROLE") << write;
  }
  EXPECT_EQ(ReasonOf(auth.Check(with("team-a-token-0000"), "LeaseWork", &who)), "UNAUTHENTICATED");
  EXPECT_TRUE(auth.Check(with("gpu-0-token-00000"), "LeaseWork", &who).ok());
  EXPECT_EQ(who, "gpu-0");
  EXPECT_EQ(ReasonOf(auth.Check(with("gpu-0-token-00000"), "Compile", &who)), "UNAUTHENTICATED");
  grpc::ServerContext none;
  EXPECT_EQ(ReasonOf(auth.Check(none, "Heartbeat")), "UNAUTHENTICATED") << "worker credentials close the worker API";
  EXPECT_EQ(ClientOf(with("x"), "team-a"), "id:team-a");
  EXPECT_EQ(PeerKey("ipv4:10.1.2.3:5555"), "ipv4:10.1.2.3");
  EXPECT_EQ(PeerKey("ipv6:%5B2001:db8:1:2:aaaa:bbbb:cccc:dddd%5D:443"), "ipv6:2001:db8:1:2::/64");
  EXPECT_EQ(PeerKey("ipv6:[2001:db8:1:2::7]:1"), PeerKey("ipv6:[2001:db8:1:2:ffff::9]:2")) << "one /64, one key";
  EXPECT_NE(PeerKey("ipv6:[2001:db8:1:2::7]:1"), PeerKey("ipv6:[2001:db8:1:3::7]:1"));
  EXPECT_EQ(PeerKey("ipv6:[::ffff:10.0.0.1]:80"), "ipv4:10.0.0.1") << "an IPv4 host however it is written";
  EXPECT_NE(PeerKey("ipv4:10.0.0.1:80"), PeerKey("ipv4:10.0.0.2:80"));
}

// This machine is one host: a caller on it may bind any of 127.0.0.0/8, so
// keying by address would give it 16 million clients' shares.
TEST(AuthTest, EveryLoopbackAddressIsOneHost) {
  for (const char *peer : {"ipv4:127.0.0.1:5555", "ipv4:127.0.0.2:1", "ipv4:127.255.3.4:65535", "ipv6:[::1]:5555",
                           "ipv6:%5B::1%5D:7", "ipv6:[::ffff:127.0.0.9]:80", "ipv6:%5B::ffff:127.1.2.3%5D:80",
                           "unix:/tmp/sock", "unix:", "unix-abstract:tir"}) {
    EXPECT_EQ(PeerKey(peer), "local") << peer;
  }
  EXPECT_EQ(PeerKey("ipv4:128.0.0.1:5"), "ipv4:128.0.0.1") << "only 127/8 is loopback";
  EXPECT_EQ(PeerKey("ipv4:126.255.255.255:5"), "ipv4:126.255.255.255");
  EXPECT_FALSE(IsIdentity(PeerKey("ipv4:127.0.0.2:1")));
  EXPECT_TRUE(IsIdentity("id:team-a"));
}

// An admin credential opens what a client's does and says it is an
// admin's; the shared read token, like a read credential, may not write.
TEST(AuthTest, AnAdminIsAClientThatActsOnWhatOthersOwn) {
  auto parsed = ParseCredentials("admin ops aaaaaaaaaaaaaaaa\nclient team-a bbbbbbbbbbbbbbbb\n", "creds");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ((*parsed)[0].role, Role::kAdmin);
  Tokens t;
  t.client = "shared-client-token";
  t.read = "shared-read-token";
  t.worker = "shared-worker-token";
  t.credentials = *parsed;
  EXPECT_TRUE(t.ClientsNeedToken());
  const Authenticator auth(t);
  struct Call {
    grpc::ServerContext ctx;
    grpc::testing::ServerContextTestSpouse spouse{&ctx};
  };
  std::vector<std::unique_ptr<Call>> calls;
  auto with = [&](const std::string &token) -> grpc::ServerContext & {
    calls.push_back(std::make_unique<Call>());
    calls.back()->spouse.AddClientMetadata("authorization", "Bearer " + token);
    return calls.back()->ctx;
  };
  std::string who;
  bool admin = false;
  for (const char *method : {"Compile", "DeleteKernel", "CancelOperation", "GetOperation", "ListKernels"}) {
    EXPECT_TRUE(auth.Check(with("aaaaaaaaaaaaaaaa"), method, &who, &admin).ok()) << method;
    EXPECT_EQ(who, "ops");
    EXPECT_TRUE(admin) << method;
    EXPECT_TRUE(auth.Check(with("bbbbbbbbbbbbbbbb"), method, &who, &admin).ok()) << method;
    EXPECT_EQ(who, "team-a");
    EXPECT_FALSE(admin) << "a client is no admin";
    EXPECT_TRUE(auth.Check(with("shared-client-token"), method, &who, &admin).ok()) << method;
    EXPECT_EQ(who, "") << "the shared client token is one anonymous identity";
    EXPECT_FALSE(admin);
  }
  EXPECT_EQ(ReasonOf(auth.Check(with("aaaaaaaaaaaaaaaa"), "LeaseWork", &who, &admin)), "UNAUTHENTICATED")
      << "an admin is no worker";
  EXPECT_FALSE(admin);
  EXPECT_TRUE(auth.Check(with("shared-read-token"), "GetKernel").ok());
  const absl::Status refused = auth.Check(with("shared-read-token"), "DeleteKernel");
  EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(ReasonOf(refused), "READ_ONLY_ROLE");
  EXPECT_EQ(ReasonOf(auth.Check(with("wrong-token-000000"), "DeleteKernel")), "UNAUTHENTICATED");
}

}  // namespace
}  // namespace tir::api
