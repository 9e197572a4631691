// The embedded default: a coordinator and one worker in this process, over
// loopback gRPC, with the store under a cache directory. The same code as the
// distributed service (CoordinatorServer, Worker), only not across machines.

#ifndef TIR_CLIENT_EMBEDDED_H_
#define TIR_CLIENT_EMBEDDED_H_

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "server/api/server.h"
#include "worker/worker.h"

namespace tir::client {

struct EmbeddedOptions {
  // Store, compiled candidates and caches go under here.
  std::string cache_dir;
  // Worker backend: cuda, host or auto.
  std::string backend = "auto";
  // tir-worker-runner; empty: $TIR_WORKER_RUNNER, else beside this binary or
  // in its runfiles.
  std::string runner_path;
};

class EmbeddedService {
 public:
  // Starts both and waits until the worker has registered. Errors: the
  // store's, CUDA_DRIVER_UNAVAILABLE for backend=cuda without a GPU, and
  // RUNNER_NOT_FOUND when tir-worker-runner cannot be found.
  static absl::StatusOr<std::unique_ptr<EmbeddedService>> Start(const EmbeddedOptions &options);
  ~EmbeddedService();

  // "127.0.0.1:PORT" of the embedded coordinator.
  std::string address() const;
  // The worker's arch ("host", "sm_90a", ...).
  std::string arch() const { return arch_; }

 private:
  EmbeddedService() = default;
  std::unique_ptr<api::CoordinatorServer> server_;
  std::unique_ptr<worker::Worker> worker_;
  std::thread thread_;
  std::string arch_;
};

}  // namespace tir::client

#endif  // TIR_CLIENT_EMBEDDED_H_
