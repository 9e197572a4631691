// What clients are doing with a coordinator, for a service that ends when
// idle (the per-user local service, client/local_service.h): client calls
// (tir.v1.CompilerService) in flight, and when the last one began or ended.
// Worker calls (heartbeats, lease polls) are not client activity.

#ifndef TIR_SERVER_API_ACTIVITY_H_
#define TIR_SERVER_API_ACTIVITY_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/time/time.h"
#include "grpcpp/support/server_interceptor.h"

namespace tir::api {

class ClientActivity {
 public:
  ClientActivity();
  // A client call began / ended.
  void Begin();
  void End();
  // Client calls in flight (a long poll or a watch stream counts until it ends).
  int in_flight() const { return in_flight_.load(std::memory_order_relaxed); }
  // When a client call last began or ended; the creation time before any.
  absl::Time last() const { return absl::FromUnixNanos(last_ns_.load(std::memory_order_relaxed)); }

 private:
  std::atomic<int> in_flight_{0};
  std::atomic<int64_t> last_ns_;
};

// A server interceptor that counts the calls of tir.v1.CompilerService in
// `activity` (which outlives the server): each call from its first hook to
// its end.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> ClientActivityInterceptor(
    ClientActivity *activity);

}  // namespace tir::api

#endif  // TIR_SERVER_API_ACTIVITY_H_
