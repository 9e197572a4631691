// The user's local service itself (`tirctl service serve`): a coordinator
// and a worker (client/embedded.h) on a Unix socket in the service's
// directory, until it has been idle for its idle timeout, or SIGTERM /
// SIGINT. What starts it, finds it and stops it is client/local_service.h.

#ifndef TIR_CLIENT_LOCAL_DAEMON_H_
#define TIR_CLIENT_LOCAL_DAEMON_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "client/local_service.h"

namespace tir::client {

struct ServeOptions {
  std::string cache_dir;
  std::string backend = "auto";
  // Exits after this long without client calls or running jobs (zero: never).
  absl::Duration idle_timeout = absl::Minutes(15);
  // The lock file's descriptor, locked by the client that started this
  // service and handed over; -1: take the lock here (a service in the
  // foreground), ALREADY_RUNNING when another holds it.
  int lock_fd = -1;
  // Where "ready\n", or "error REASON: message\n", is written once (-1: none).
  int ready_fd = -1;
  // Fork once first and let the first process exit, so the service is
  // nobody's child (ServeLocalService must then be called before any thread
  // starts).
  bool detach = false;
  // The binary serving, for the record.
  std::string binary;
  // The fleet asked on a miss.
  UpstreamSetting upstream;
};

// Serves until idle or signalled, then removes its record and socket.
// Errors (also written to ready_fd): UNSAFE_DIRECTORY, ALREADY_RUNNING,
// and the embedded service's (RUNNER_NOT_FOUND, CUDA_DRIVER_UNAVAILABLE,
// the store's).
absl::Status ServeLocalService(const ServeOptions &options);

}  // namespace tir::client

#endif  // TIR_CLIENT_LOCAL_DAEMON_H_
