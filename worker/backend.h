// A worker backend: what the daemon needs to know about a device and how to
// compile candidates for it. Kernels never run in the daemon: each backend
// names the runner (tir-worker-runner flags) that runs them in a child.

#ifndef TIR_WORKER_BACKEND_H_
#define TIR_WORKER_BACKEND_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tir/v1/worker_service.grpc.pb.h"

namespace tir::worker {

struct CompiledCandidate {
  std::string path;                // the binary on disk, for the runner
  std::string binary;              // its bytes
  std::string sha256;              // their hex SHA-256, for the report
  tir::v1::BinaryFormat format = tir::v1::BINARY_FORMAT_UNSPECIFIED;
  tir::v1::CompileInfo info;
};

class Backend {
 public:
  virtual ~Backend() = default;
  // "cuda" or "host".
  virtual std::string name() const = 0;
  // What the worker registers with.
  virtual tir::v1::WorkerCapabilities Capabilities() const = 0;
  // Compiles one candidate for `arch`; thread-safe (compiles run in a pool).
  // Errors: HOST_COMPILE_FAILED / NVRTC_COMPILE_FAILED with the log, ...
  virtual absl::StatusOr<CompiledCandidate> Compile(const tir::v1::CandidateWork &work, const std::string &arch) = 0;
  // Flags of tir-worker-runner for this backend.
  virtual std::vector<std::string> RunnerFlags() const = 0;
};

}  // namespace tir::worker

#endif  // TIR_WORKER_BACKEND_H_
