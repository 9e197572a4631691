#include "worker/measure/thread_cpu_clock.h"

#include <time.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tir::measure {

absl::StatusOr<double> ThreadCpuSeconds() {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) {
    return absl::InternalError(absl::StrCat("clock_gettime(CLOCK_THREAD_CPUTIME_ID): ", std::strerror(errno)));
  }
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace tir::measure
