#include "server/common/limits.h"

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"

namespace tir::common {

LimitCounter::LimitCounter(prometheus::Registry &registry)
    : family_(prometheus::BuildCounter()
                  .Name("tir_limit_exceeded_total")
                  .Help("Requests refused with LIMIT_EXCEEDED, by limit")
                  .Register(registry)) {
  // Every label value exists from the start, so rates and alerts see zeros.
  for (const char *limit : {"maxOpsPerGraph", "planningBudgetMs", "maxPlannedCandidates", "maxKernelsPerGraph",
                            "maxKernelOps", "maxJobs", "maxJobsPerClient", "maxQueueItems", "maxOperations"}) {
    family_.Add({{"limit", limit}});
  }
}

void LimitCounter::Count(const std::string &limit) { family_.Add({{"limit", limit}}).Increment(); }

absl::Status LimitCounter::Exceeded(const std::string &limit, uint64_t value, const std::string &what) {
  Count(limit);
  return MakeError(absl::StatusCode::kResourceExhausted, "LIMIT_EXCEEDED",
                   absl::StrCat("limit ", limit, "=", value, " reached: ", what));
}

}  // namespace tir::common
