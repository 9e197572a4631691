#include "server/api/activity.h"

#include <cstring>

#include "absl/time/clock.h"

namespace tir::api {

ClientActivity::ClientActivity() : last_ns_(absl::ToUnixNanos(absl::Now())) {}

void ClientActivity::Begin() {
  in_flight_.fetch_add(1, std::memory_order_relaxed);
  last_ns_.store(absl::ToUnixNanos(absl::Now()), std::memory_order_relaxed);
}

void ClientActivity::End() {
  last_ns_.store(absl::ToUnixNanos(absl::Now()), std::memory_order_relaxed);
  in_flight_.fetch_sub(1, std::memory_order_relaxed);
}

namespace {

constexpr char kClientService[] = "/tir.v1.CompilerService/";

// One per call: gRPC destroys a call's interceptors when the call ends.
class CountedCall final : public grpc::experimental::Interceptor {
 public:
  explicit CountedCall(ClientActivity *activity) : activity_(activity) { activity_->Begin(); }
  ~CountedCall() override { activity_->End(); }
  void Intercept(grpc::experimental::InterceptorBatchMethods *methods) override { methods->Proceed(); }

 private:
  ClientActivity *activity_;
};

class ClientActivityFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit ClientActivityFactory(ClientActivity *activity) : activity_(activity) {}
  grpc::experimental::Interceptor *CreateServerInterceptor(grpc::experimental::ServerRpcInfo *info) override {
    const char *method = info->method();
    if (method == nullptr || std::strncmp(method, kClientService, sizeof(kClientService) - 1) != 0) return nullptr;
    return new CountedCall(activity_);
  }

 private:
  ClientActivity *activity_;
};

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> ClientActivityInterceptor(
    ClientActivity *activity) {
  return std::make_unique<ClientActivityFactory>(activity);
}

}  // namespace tir::api
