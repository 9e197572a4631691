// WaitOperation without a thread per call: each wait is a callback reactor,
// and one thread looks at every waiting call's operation every 50 ms,
// answering it once the operation is done, its wait is over, or the call
// is cancelled. A client that waits holds no server thread, so waits cannot
// take the threads workers' calls need (a synchronous wait held one for up
// to its timeout: a few hundred of them left every worker call refused).
// At most kMaxPerClient waits per client (an identity, else a host:
// ClientOf), kMaxAnonymous of them for all callers without a credential of
// their own together (the rest is kept for identities), and kMaxWaits in
// all (RESOURCE_EXHAUSTED, LIMIT_EXCEEDED "maxWaits").

#ifndef TIR_SERVER_API_OPERATION_WAITS_H_
#define TIR_SERVER_API_OPERATION_WAITS_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/server_callback.h"
#include "server/api/auth.h"
#include "server/coordinator/coordinator.h"
#include "tir/v1/compiler_service.pb.h"

namespace tir::api {

class OperationWaits {
 public:
  static constexpr size_t kMaxWaits = 4096;
  static constexpr size_t kMaxPerClient = 64;
  static constexpr size_t kMaxAnonymous = kMaxWaits / 2;

  // `done` counts each wait's outcome once it is answered.
  OperationWaits(coordinator::Coordinator *c, std::function<void(const absl::Status &)> done);
  ~OperationWaits();
  // Stops the poller (after the server has ended its calls); idempotent.
  void Stop();

  // A wait for operation `name` until `end`, answered into `out`, for
  // `client`; `allowed` (the call's authorization) or a limit answers it at
  // once, as does an operation that is done already.
  grpc::ServerUnaryReactor *Start(const std::string &name, absl::Time end, const std::string &client,
                                  tir::v1::Operation *out, absl::Status allowed);
  size_t size() const;

  class Wait;

 private:
  void Poll();
  void Remove(Wait *w);

  coordinator::Coordinator *const c_;
  const std::function<void(const absl::Status &)> done_;
  mutable absl::Mutex mu_;
  std::map<Wait *, std::shared_ptr<Wait>> waits_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, size_t> per_client_ ABSL_GUARDED_BY(mu_);
  size_t anonymous_ ABSL_GUARDED_BY(mu_) = 0;  // waits of clients without an identity
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread poller_;
};

}  // namespace tir::api

#endif  // TIR_SERVER_API_OPERATION_WAITS_H_
