#include "server/api/auth.h"

#include "compiler/support/status.h"
#include "grpcpp/server_context.h"
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

}  // namespace
}  // namespace tir::api
