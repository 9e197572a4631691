// An in-process gRPC server built from the generated tir.v1 service code
// answers a call over loopback TCP, and the standard health service reports
// SERVING. The service implementation here is a test fixture; the real one
// lives in server/.

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "gtest/gtest.h"
#include "tir/v1/compiler_service.grpc.pb.h"

namespace tir {
namespace {

class FixtureCompilerService final : public tir::v1::CompilerService::Service {
  grpc::Status GetKernel(grpc::ServerContext*, const tir::v1::GetKernelRequest* request,
                         tir::v1::KernelBundle* reply) override {
    if (request->name() != "kernels/abc") {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "NOT_FOUND: " + request->name());
    }
    reply->set_name(request->name());
    reply->set_key("abc");
    reply->set_arch("sm_90a");
    return grpc::Status::OK;
  }
};

class GrpcSmokeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                                   grpc::InsecureChannelCredentials());
  }
  void TearDown() override { server_->Shutdown(); }

  FixtureCompilerService service_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  int port_ = 0;
};

TEST_F(GrpcSmokeTest, GeneratedStubCallsGeneratedService) {
  auto stub = tir::v1::CompilerService::NewStub(channel_);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  tir::v1::GetKernelRequest req;
  req.set_name("kernels/abc");
  tir::v1::KernelBundle bundle;
  grpc::Status s = stub->GetKernel(&ctx, req, &bundle);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(bundle.arch(), "sm_90a");

  grpc::ClientContext ctx2;
  req.set_name("kernels/missing");
  s = stub->GetKernel(&ctx2, req, &bundle);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(GrpcSmokeTest, UnimplementedMethodAnswersUnimplemented) {
  auto stub = tir::v1::CompilerService::NewStub(channel_);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  tir::v1::ListKernelsResponse resp;
  grpc::Status s = stub->ListKernels(&ctx, tir::v1::ListKernelsRequest(), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNIMPLEMENTED);
}

// grpc.health.v1.Health/Check, encoded by hand: the request {service: ""} is
// empty on the wire and the reply {status: SERVING} is field 1 = varint 1.
TEST_F(GrpcSmokeTest, HealthServiceReportsServing) {
  grpc::GenericStub generic(channel_);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Slice empty_message{std::string()};
  grpc::ByteBuffer request(&empty_message, 1);
  grpc::ByteBuffer response;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  grpc::Status status;
  generic.UnaryCall(&ctx, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request,
                    &response, [&](grpc::Status s) {
                      std::lock_guard<std::mutex> lock(mu);
                      status = s;
                      done = true;
                      cv.notify_one();
                    });
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(15), [&] { return done; }));
  ASSERT_TRUE(status.ok()) << status.error_message();
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(response.Dump(&slices).ok());
  std::string bytes;
  for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  EXPECT_EQ(bytes, std::string("\x08\x01", 2)) << "expected status SERVING (1)";
}

}  // namespace
}  // namespace tir
