// Kernel durations from CUPTI activity records, with libcupti loaded at run
// time (a worker without it falls back to CUDA events and says so).
//
// One timer per process: CUPTI's activity buffers are process-wide.

#ifndef TIR_WORKER_CUDA_CUPTI_TIMER_H_
#define TIR_WORKER_CUDA_CUPTI_TIMER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tir::cuda {

class CuptiTimer {
 public:
  // Loads libcupti (libcupti.so.13, libcupti.so, or $TIR_CUPTI_LIBRARY) and
  // enables concurrent-kernel activity records. Errors: FAILED_PRECONDITION /
  // CUPTI_UNAVAILABLE with why.
  static absl::StatusOr<std::unique_ptr<CuptiTimer>> Start();
  ~CuptiTimer();

  // Flushes the records and returns the durations in seconds of the kernels
  // named `name` that ran since the previous call, in completion order.
  std::vector<double> Collect(const std::string &name);

 private:
  CuptiTimer() = default;
};

}  // namespace tir::cuda

#endif  // TIR_WORKER_CUDA_CUPTI_TIMER_H_
