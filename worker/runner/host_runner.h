// The host backend's runner: loads candidates' shared objects and runs them
// on the CPU, each run timed with the runner thread's CPU clock (the kernel
// runs on that one thread; see worker/measure/thread_cpu_clock.h).

#ifndef TIR_WORKER_RUNNER_HOST_RUNNER_H_
#define TIR_WORKER_RUNNER_HOST_RUNNER_H_

#include <map>
#include <memory>

#include "compiler/codegen/HostBuild.h"
#include "worker/runner/prepared_item.h"
#include "worker/runner/runner.h"

namespace tir::runner {

class HostRunner : public Runner {
 public:
  // `cache_bytes`: the last-level cache to defeat (0: read from sysfs).
  explicit HostRunner(int64_t cache_bytes = 0);
  std::string backend() const override { return "host"; }
  absl::Status Prepare(const tir::v1::WorkItem &item) override;
  absl::StatusOr<tir::v1::CandidateResult> Measure(uint32_t candidate, const std::string &binary_path) override;

 private:
  int64_t cache_bytes_;
  std::unique_ptr<PreparedItem> prepared_;
  std::unique_ptr<codegen::HostLaunch> launch_;
  std::map<std::string, std::unique_ptr<codegen::HostKernel>> loaded_;  // by path, for the current item
};

// Size of the largest CPU cache in bytes (sysfs), or 32 MiB when unknown.
int64_t HostLastLevelCacheBytes();

}  // namespace tir::runner

#endif  // TIR_WORKER_RUNNER_HOST_RUNNER_H_
