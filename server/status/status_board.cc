#include "server/status/status_board.h"

#include "compiler/support/version.h"

namespace tir::status {

StatusBoard::StatusBoard(StatusSources sources, const CacheCounts &counts, std::shared_ptr<store::KernelStore> store,
                         prometheus::Registry &registry)
    : sources_(std::move(sources)),
      counts_(counts),
      store_(std::move(store)),
      store_kernels_(prometheus::BuildGauge()
                         .Name("tir_store_kernels")
                         .Help("Kernel bundles in the store (RocksDB's estimate)")
                         .Register(registry)
                         .Add({})),
      store_bytes_(prometheus::BuildGauge()
                       .Name("tir_store_bytes")
                       .Help("Bytes of kernel bundles in the store (RocksDB's estimate)")
                       .Register(registry)
                       .Add({})) {}

StatusBoard::~StatusBoard() { Stop(); }

void StatusBoard::Start(absl::Duration period) {
  absl::MutexLock l(&mu_);
  if (!sampler_.joinable() && !stopping_) sampler_ = std::thread([this, period] { Run(period); });
}

void StatusBoard::Stop() {
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
  }
  if (sampler_.joinable()) sampler_.join();
}

void StatusBoard::Run(absl::Duration period) {
  for (;;) {
    Sample(absl::Now());
    absl::MutexLock l(&mu_);
    if (mu_.AwaitWithTimeout(absl::Condition(&stopping_), period)) return;
  }
}

void StatusBoard::Sample(absl::Time now) {
  // Each part's figures, then the store's (a read), under none of mu_.
  const dispatch::DispatchSnapshot d = sources_.dispatch(now, true);
  const uint64_t measured = sources_.measured();
  const uint64_t requests = counts_.requests.load(), hits = counts_.hits.load(), misses = counts_.misses.load();
  absl::StatusOr<std::pair<uint64_t, uint64_t>> stats = store_->KernelStats();
  absl::MutexLock l(&mu_);
  const double dt = last_sample_ == absl::Time() ? 0 : absl::ToDoubleSeconds(now - last_sample_);
  tir::v1::StatusSample s;
  s.set_time(absl::ToUnixMicros(now) * 1e-6);
  if (dt > 0) {
    s.set_requests_per_second((requests - sampled_requests_) / dt);
    const uint64_t lookups = (hits - sampled_hits_) + (misses - sampled_misses_);
    s.set_hit_rate(lookups ? static_cast<double>(hits - sampled_hits_) / lookups : 0);
    s.set_candidates_per_second((measured - sampled_measured_) / dt);
  }
  s.set_queue_depth(d.queued);
  s.set_workers(d.alive);
  sampled_requests_ = requests;
  sampled_hits_ = hits;
  sampled_misses_ = misses;
  sampled_measured_ = measured;
  last_sample_ = now;
  series_.push_back(s);
  if (series_.size() > 900) series_.pop_front();  // 30 minutes
  if (stats.ok()) {
    stored_kernels_ = stats->first;
    stored_bytes_ = stats->second;
    store_kernels_.Set(static_cast<double>(stored_kernels_));
    store_bytes_.Set(static_cast<double>(stored_bytes_));
  }
}

tir::v1::ServiceStatus StatusBoard::Render() {
  const absl::Time now = absl::Now();
  tir::v1::ServiceStatus out;
  out.set_time(absl::ToUnixMicros(now) * 1e-6);
  out.set_version(kTirVersion);
  dispatch::DispatchSnapshot d = sources_.dispatch(now, false);
  for (tir::v1::WorkerStatus &w : d.workers) *out.add_workers() = std::move(w);
  std::vector<tir::v1::JobStatus> running, recent;
  sources_.jobs(&running, &recent);
  for (tir::v1::JobStatus &j : running) *out.add_running() = std::move(j);
  for (tir::v1::JobStatus &j : recent) *out.add_recent() = std::move(j);
  out.set_queue_depth(d.queued);
  out.set_cache_hits(counts_.hits.load());
  out.set_cache_misses(counts_.misses.load());
  for (tir::v1::BucketStatus &b : sources_.buckets(50)) *out.add_buckets() = std::move(b);
  absl::MutexLock l(&mu_);
  out.set_stored_kernels(stored_kernels_);
  out.set_stored_bytes(stored_bytes_);
  for (const auto &s : series_) *out.add_series() = s;
  return out;
}

}  // namespace tir::status
