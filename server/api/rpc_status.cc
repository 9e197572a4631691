#include "server/api/rpc_status.h"

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"
#include "tir/v1/error.pb.h"

namespace tir::api {

grpc::Status ToGrpc(const absl::Status &status) {
  if (status.ok()) return grpc::Status::OK;
  tir::v1::Error e;
  e.set_code(static_cast<int>(status.code()));
  e.set_reason(ReasonOf(status));
  e.set_message(std::string(status.message()));
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), absl::StrCat(e.reason(), ": ", e.message()),
                      e.SerializeAsString());
}

namespace {

class MalformedRequest final : public grpc::experimental::Interceptor {
 public:
  explicit MalformedRequest(const char *method) : method_(method ? method : "") {}
  void Intercept(grpc::experimental::InterceptorBatchMethods *methods) override {
    if (methods->QueryInterceptionHookPoint(grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status s = methods->GetSendStatus();
      // Every answer tir itself sends carries a reason; this one is gRPC's
      // own, for a request body that is not the method's message.
      // (The synchronous handlers answer INTERNAL, the callback ones
      // UNIMPLEMENTED with no message.)
      const bool bare = s.error_details().empty() &&
                        (s.error_code() == grpc::StatusCode::INTERNAL ||
                         (s.error_code() == grpc::StatusCode::UNIMPLEMENTED && s.error_message().empty()));
      if (bare) {
        methods->ModifySendStatus(ToGrpc(MakeError(
            absl::StatusCode::kInvalidArgument, "MALFORMED_REQUEST",
            absl::StrCat("the request to ", method_, " is not a valid protobuf message of its type",
                         s.error_message().empty() ? "" : " (" + s.error_message() + ")"))));
      }
    }
    methods->Proceed();
  }

 private:
  std::string method_;
};

class MalformedRequestFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor *CreateServerInterceptor(grpc::experimental::ServerRpcInfo *info) override {
    return new MalformedRequest(info->method());
  }
};

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> MalformedRequestInterceptor() {
  return std::make_unique<MalformedRequestFactory>();
}

}  // namespace tir::api
