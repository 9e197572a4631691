// The child-process side of a backend: makes a work item current, then
// verifies and times its candidates one at a time. A runner lives in the
// runner process (tir-worker-runner), never in the daemon, so a candidate that
// faults or hangs takes down only that process.

#ifndef TIR_WORKER_RUNNER_RUNNER_H_
#define TIR_WORKER_RUNNER_RUNNER_H_

#include <string>

#include "absl/status/statusor.h"
#include "tir/v1/runner.pb.h"

namespace tir::runner {

class Runner {
 public:
  virtual ~Runner() = default;
  // Readies the backend (a CUDA runner retains its device's context). Called
  // once before the first request; its outcome is the runner's hello.
  virtual absl::Status Start() { return absl::OkStatus(); }
  // "host" or "cuda".
  virtual std::string backend() const = 0;
  // Makes `item` current (inputs, reference, device buffers).
  virtual absl::Status Prepare(const tir::v1::WorkItem &item) = 0;
  // Verifies and times candidate `candidate` of the current item from the
  // binary at `binary_path`. A wrong result is a result (VERDICT_WRONG), not
  // an error; errors are for requests that cannot be served.
  virtual absl::StatusOr<tir::v1::CandidateResult> Measure(uint32_t candidate, const std::string &binary_path) = 0;
  // After an answer: the process cannot serve more (a lost CUDA context) and
  // exits, telling the daemon so in the answer.
  virtual bool MustExit() const { return false; }
};

// Starts `runner` and says hello on `out_fd` (a RunnerResponse whose `hello`
// is set, with error_reason when Start failed), then serves framed
// RunnerRequests from `in_fd` with RunnerResponses on `out_fd` until the pipe
// closes or a request says exit. Returns the process exit code.
int ServeRunner(Runner &runner, int in_fd, int out_fd);

}  // namespace tir::runner

#endif  // TIR_WORKER_RUNNER_RUNNER_H_
