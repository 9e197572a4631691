// A coordinator and one worker in this process, over gRPC, with the store
// under a cache directory. The same code as the distributed service
// (CoordinatorServer, Worker), only not across machines. The user's local
// service (client/local_service.h) is one of these in a process of its own;
// tests start one in their own process.

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
  // Store (<cache_dir>/store), compiled candidates and caches go under here.
  std::string cache_dir;
  // Worker backend: cuda, host or auto.
  std::string backend = "auto";
  // tir-worker-runner; empty: $TIR_WORKER_RUNNER, else beside this binary or
  // in its runfiles.
  std::string runner_path;
  // Where the coordinator serves: "127.0.0.1:0" (a free port) or
  // "unix:PATH" (a Unix socket).
  std::string listen = "127.0.0.1:0";
  // Token files the coordinator requires of clients and of workers (empty:
  // none); the worker here presents `worker_token`.
  std::string client_token_file;
  std::string worker_token_file;
  std::string worker_token;
  // The fleet asked on a miss (server/upstream/read_through.h): its address
  // ("" : none), and the files of its client token, its bundle key and its
  // CA (PEM, for TLS), each "" for none.
  std::string upstream;
  std::string upstream_token_file;
  std::string upstream_bundle_key_file;
  std::string upstream_ca_file;
  // Longest call to the upstream (zero: the coordinator's default); an
  // operation following its tuning gives it up after six of them.
  absl::Duration upstream_timeout = absl::ZeroDuration();
  // How long a failed upstream is left alone (zero: the default).
  absl::Duration upstream_retry = absl::ZeroDuration();
};

class EmbeddedService {
 public:
  // Starts both and waits until the worker has registered. Errors: the
  // store's, CUDA_DRIVER_UNAVAILABLE for backend=cuda without a GPU, and
  // RUNNER_NOT_FOUND when tir-worker-runner cannot be found.
  static absl::StatusOr<std::unique_ptr<EmbeddedService>> Start(const EmbeddedOptions &options);
  ~EmbeddedService();

  // The coordinator's gRPC target: "127.0.0.1:PORT", or the "unix:PATH" it
  // listens on.
  std::string address() const;
  // The worker's backend ("host", "cuda") and arch ("host", "sm_90a", ...).
  std::string backend() const { return backend_; }
  std::string arch() const { return arch_; }
  api::CoordinatorServer &server() { return *server_; }

 private:
  EmbeddedService() = default;
  std::unique_ptr<api::CoordinatorServer> server_;
  std::unique_ptr<worker::Worker> worker_;
  std::thread thread_;
  std::string listen_;
  std::string backend_;
  std::string arch_;
};

}  // namespace tir::client

#endif  // TIR_CLIENT_EMBEDDED_H_
