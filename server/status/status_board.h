// The status page's data (the dashboard's JSON, tir.v1.ServiceStatus): the
// workers and the queue, the running and recent jobs, the cache counts, the
// busiest dynamic buckets, and a series sampled every 2 s (30 minutes kept).
// Built from snapshots each part hands over under its own lock, held only
// while it copies; the page itself is rendered under no lock but the
// series' own, so a large page never holds up leasing or compiling.

#ifndef TIR_SERVER_STATUS_STATUS_BOARD_H_
#define TIR_SERVER_STATUS_STATUS_BOARD_H_

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"
#include "server/dispatch/dispatcher.h"
#include "server/store/kernel_store.h"
#include "tir/v1/status.pb.h"

namespace tir::status {

// Requests and cache lookups, counted where they are answered.
struct CacheCounts {
  std::atomic<uint64_t> requests{0}, hits{0}, misses{0};
};

// What the board reads the other parts through.
struct StatusSources {
  std::function<dispatch::DispatchSnapshot(absl::Time now, bool sample)> dispatch;
  std::function<void(std::vector<tir::v1::JobStatus> *running, std::vector<tir::v1::JobStatus> *recent)> jobs;
  std::function<std::vector<tir::v1::BucketStatus>(size_t n)> buckets;
  std::function<uint64_t()> measured;  // candidates measured since the start
};

class StatusBoard {
 public:
  StatusBoard(StatusSources sources, const CacheCounts &counts, std::shared_ptr<store::KernelStore> store,
              prometheus::Registry &registry);
  ~StatusBoard();
  // The sampler (every `period`).
  void Start(absl::Duration period = absl::Seconds(2)) ABSL_LOCKS_EXCLUDED(mu_);
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);
  // Appends a sample (rates since the previous one; the store's counts).
  void Sample(absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  tir::v1::ServiceStatus Render() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Run(absl::Duration period) ABSL_LOCKS_EXCLUDED(mu_);
  const StatusSources sources_;
  const CacheCounts &counts_;
  std::shared_ptr<store::KernelStore> store_;
  prometheus::Gauge &store_kernels_, &store_bytes_;
  absl::Mutex mu_;
  std::deque<tir::v1::StatusSample> series_ ABSL_GUARDED_BY(mu_);
  absl::Time last_sample_ ABSL_GUARDED_BY(mu_);
  uint64_t sampled_requests_ ABSL_GUARDED_BY(mu_) = 0, sampled_hits_ ABSL_GUARDED_BY(mu_) = 0,
           sampled_misses_ ABSL_GUARDED_BY(mu_) = 0, sampled_measured_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t stored_kernels_ ABSL_GUARDED_BY(mu_) = 0, stored_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread sampler_;
};

}  // namespace tir::status

#endif  // TIR_SERVER_STATUS_STATUS_BOARD_H_
