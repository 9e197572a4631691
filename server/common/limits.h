// Caps on what requests may ask of a coordinator, and the one way a request
// past one is refused: RESOURCE_EXHAUSTED, reason LIMIT_EXCEEDED, naming the
// limit by its config key, counted in tir_limit_exceeded_total{limit}.

#ifndef TIR_SERVER_COMMON_LIMITS_H_
#define TIR_SERVER_COMMON_LIMITS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "prometheus/counter.h"
#include "prometheus/registry.h"

namespace tir::common {

struct Limits {
  uint32_t max_ops_per_graph = 20000;
  uint32_t max_jobs = 256;             // tuning jobs in flight (and shape checks)
  uint32_t max_jobs_per_client = 32;   // of them started by one client
  uint32_t max_queue_items = 100000;   // work items queued for workers
  uint32_t max_operations = 100000;    // operations kept in memory
  uint32_t max_planning_queue = 256;   // requests waiting for the planning pool
  uint64_t max_message_bytes = 64 << 20;  // a bundle must fit one answer (with its envelope)
  // What planning one request may cost: its time, and the candidates kept
  // over all its kernels (each held with its prediction while it plans).
  uint32_t planning_budget_ms = 20000;
  uint32_t max_planned_candidates = 65536;
  uint32_t max_kernels_per_graph = 1024;
};

// The refusals, counted. Thread-safe.
class LimitCounter {
 public:
  explicit LimitCounter(prometheus::Registry &registry);
  // `limit` is the config key (camelCase, as in the config file).
  absl::Status Exceeded(const std::string &limit, uint64_t value, const std::string &what);
  // Counts a refusal made elsewhere (a full table's).
  void Count(const std::string &limit);

 private:
  prometheus::Family<prometheus::Counter> &family_;
};

}  // namespace tir::common

#endif  // TIR_SERVER_COMMON_LIMITS_H_
