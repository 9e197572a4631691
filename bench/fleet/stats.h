// What the fleet model records: latency and wait distributions with
// millions of samples (a log-bucketed histogram: constant memory, quantiles
// within about 1%), and counts per second of simulated time.

#ifndef TIR_BENCH_FLEET_STATS_H_
#define TIR_BENCH_FLEET_STATS_H_

#include <cstdint>
#include <vector>

namespace tir::fleet {

// Samples from 1 µs to about 28 hours, 200 buckets per decade (a quantile is
// off by at most half a bucket, 0.6%); zeros (a work item leased at once)
// are counted apart, other smaller samples in the first bucket, larger in
// the last. The mean is exact.
class LogHistogram {
 public:
  LogHistogram();
  void Add(double seconds, uint64_t count = 1);
  void Merge(const LogHistogram &other);
  uint64_t count() const { return count_; }
  double mean() const { return count_ ? sum_ / count_ : 0; }
  double max() const { return max_; }
  // The q-quantile (0 <= q <= 1) in seconds; 0 when empty.
  double Quantile(double q) const;

 private:
  std::vector<uint64_t> buckets_;
  uint64_t zeros_ = 0;
  uint64_t count_ = 0;
  double sum_ = 0;
  double max_ = 0;
};

// Counts per bin of `bin_seconds` of simulated time, grown on demand.
class TimeSeries {
 public:
  explicit TimeSeries(double bin_seconds = 1.0) : bin_seconds_(bin_seconds) {}
  void Add(double time, double value = 1);
  double bin_seconds() const { return bin_seconds_; }
  const std::vector<double> &bins() const { return bins_; }
  // Each bin's count per second.
  std::vector<double> Rates() const;
  double MaxRate() const;
  // Mean rate over [from, to) seconds.
  double MeanRate(double from, double to) const;

 private:
  double bin_seconds_;
  std::vector<double> bins_;
};

}  // namespace tir::fleet

#endif  // TIR_BENCH_FLEET_STATS_H_
