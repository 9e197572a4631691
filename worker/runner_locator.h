// Where tir-worker finds its runner (tir-worker-runner).
//
// The worker is started from several layouts; it looks, in order:
//  1. `--runner=PATH` when given (and nowhere else);
//  2. beside its own executable (a flat install: /opt/tir/bin);
//  3. `../libexec/tir/` from its executable (deploy/install.sh's layout);
//  4. Bazel's output tree: `runner/` beside it (bazel-bin/worker/tir-worker)
//     or `../worker/runner/` (another package's binary, e.g. tirctl);
//  5. its Bazel runfiles (`<exe>.runfiles/tir/worker/runner/`, $RUNFILES_DIR).
// Both the path it was started by and the resolved /proc/self/exe count as
// "its executable", so a symlink to the binary works too. A candidate counts
// when it is a regular file this user may execute.

#ifndef TIR_WORKER_RUNNER_LOCATOR_H_
#define TIR_WORKER_RUNNER_LOCATOR_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tir::worker {

struct RunnerSearch {
  std::string flag;                  // --runner, empty when not given
  std::vector<std::string> exes;     // the worker's executable paths (argv[0], /proc/self/exe)
  std::string runfiles_dir;          // $RUNFILES_DIR, may be empty
};

// The paths FindRunner tries, in order, without duplicates.
std::vector<std::string> RunnerCandidates(const RunnerSearch &search);

// The first candidate that is an executable file. Errors: NOT_FOUND with
// reason RUNNER_UNAVAILABLE, naming every path tried.
absl::StatusOr<std::string> FindRunner(const RunnerSearch &search);

// The search for this process: `flag`, argv[0], /proc/self/exe, $RUNFILES_DIR.
RunnerSearch ThisProcessSearch(const std::string &flag, const char *argv0);

}  // namespace tir::worker

#endif  // TIR_WORKER_RUNNER_LOCATOR_H_
