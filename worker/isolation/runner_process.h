// The daemon's handle on its runner child process (tir-worker-runner).
//
// Kernels only ever run in the child. Each request waits for its answer with
// a deadline:
//  1. the child answers: the result is returned;
//  2. the child dies (illegal address, sticky CUDA error, abort, signal): the
//     candidate is a FAULT with how it died;
//  3. the deadline passes: the child is killed and the candidate is a TIMEOUT.
// After 2 or 3 the next request starts a fresh child and makes the current
// work item current again before going on.
//
// A child says hello (runner.proto's RunnerHello) before it serves anything.
// A child that cannot be started, dies before its hello or reports that its
// backend is not ready is RUNNER_UNAVAILABLE: the worker's fault, never a
// candidate's (the daemon gives the lease back instead of reporting it).

#ifndef TIR_WORKER_ISOLATION_RUNNER_PROCESS_H_
#define TIR_WORKER_ISOLATION_RUNNER_PROCESS_H_

#include <sys/types.h>

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tir/v1/runner.pb.h"

namespace tir::isolation {

class RunnerProcess {
 public:
  // `argv`: the runner executable and its flags; `hello_deadline`: how long a
  // fresh child may take to say hello.
  explicit RunnerProcess(std::vector<std::string> argv, absl::Duration hello_deadline = absl::Seconds(60));
  ~RunnerProcess();
  RunnerProcess(const RunnerProcess &) = delete;
  RunnerProcess &operator=(const RunnerProcess &) = delete;

  // Starts a child unless one is running and waits for its hello. Errors:
  // RUNNER_UNAVAILABLE naming the executable and why.
  absl::Status EnsureStarted();

  // Makes `item` current in the child (and in every child started later).
  // Errors: the runner's reason (INVALID_WORK, ...), RUNNER_FAILED when the
  // child died or ran past `deadline`, RUNNER_UNAVAILABLE when no child
  // starts.
  absl::Status Prepare(const tir::v1::WorkItem &item, absl::Duration deadline);

  // Verifies and times candidate `candidate` (position in the item) from
  // `binary_path`. A fault or a timeout is a result, not an error. Errors:
  // the runner's reason for requests it could not serve, RUNNER_UNAVAILABLE
  // when no child starts.
  absl::StatusOr<tir::v1::CandidateResult> Measure(uint32_t candidate, const std::string &binary_path,
                                                   absl::Duration deadline);

  // Children started after the first (each one replaces a child that
  // faulted or was killed).
  int restarts() const { return restarts_.load(); }

  // Stops the child (closes its pipe, then kills it if it lingers).
  void Shutdown();

 private:
  enum class Outcome { kAnswered, kDied, kTimedOut };
  absl::Status Start();
  // Sends `request` and waits for the answer; `died` describes a death.
  Outcome Call(const tir::v1::RunnerRequest &request, absl::Duration deadline, tir::v1::RunnerResponse *response,
               std::string *died);
  // Waits for the child's next message.
  Outcome Await(absl::Duration deadline, tir::v1::RunnerResponse *response, std::string *died);
  void Reap(bool kill, std::string *how);

  std::vector<std::string> argv_;
  absl::Duration hello_deadline_;
  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1;
  bool started_once_ = false;
  std::optional<tir::v1::WorkItem> current_;
  bool current_prepared_ = false;
  std::atomic<int> restarts_{0};
};

}  // namespace tir::isolation

#endif  // TIR_WORKER_ISOLATION_RUNNER_PROCESS_H_
