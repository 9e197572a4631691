#include "bench/fleet/stats.h"

#include <algorithm>
#include <cmath>

namespace tir::fleet {
namespace {

constexpr double kMinSeconds = 1e-6;
constexpr int kPerDecade = 200;
constexpr int kDecades = 11;
constexpr int kBuckets = kPerDecade * kDecades;

int BucketOf(double seconds) {
  if (!(seconds > kMinSeconds)) return 0;
  int b = static_cast<int>(std::log10(seconds / kMinSeconds) * kPerDecade);
  return std::min(b, kBuckets - 1);
}

// The geometric middle of bucket `b`.
double MiddleOf(int b) { return kMinSeconds * std::pow(10.0, (b + 0.5) / kPerDecade); }

}  // namespace

LogHistogram::LogHistogram() : buckets_(kBuckets, 0) {}

void LogHistogram::Add(double seconds, uint64_t count) {
  if (seconds <= 0) {
    zeros_ += count;
  } else {
    buckets_[BucketOf(seconds)] += count;
  }
  count_ += count;
  sum_ += seconds * count;
  max_ = std::max(max_, seconds);
}

void LogHistogram::Merge(const LogHistogram &other) {
  for (int b = 0; b < kBuckets; ++b) buckets_[b] += other.buckets_[b];
  zeros_ += other.zeros_;
  count_ += other.count_;
  sum_ += other.sum_;
  max_ = std::max(max_, other.max_);
}

double LogHistogram::Quantile(double q) const {
  if (count_ == 0) return 0;
  // The smallest sample whose rank reaches q * count (rank 1-based).
  uint64_t rank = static_cast<uint64_t>(std::ceil(q * count_));
  rank = std::max<uint64_t>(rank, 1);
  uint64_t seen = zeros_;
  if (seen >= rank) return 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += buckets_[b];
    if (seen >= rank) return std::min(MiddleOf(b), max_);
  }
  return max_;
}

void TimeSeries::Add(double time, double value) {
  if (time < 0) time = 0;
  size_t bin = static_cast<size_t>(time / bin_seconds_);
  if (bin >= bins_.size()) bins_.resize(bin + 1, 0);
  bins_[bin] += value;
}

std::vector<double> TimeSeries::Rates() const {
  std::vector<double> rates(bins_.size());
  for (size_t i = 0; i < bins_.size(); ++i) rates[i] = bins_[i] / bin_seconds_;
  return rates;
}

double TimeSeries::MaxRate() const {
  double m = 0;
  for (double v : bins_) m = std::max(m, v);
  return m / bin_seconds_;
}

double TimeSeries::MeanRate(double from, double to) const {
  if (to <= from) return 0;
  double total = 0;
  for (size_t i = 0; i < bins_.size(); ++i) {
    double t = i * bin_seconds_;
    if (t >= from && t < to) total += bins_[i];
  }
  return total / (to - from);
}

}  // namespace tir::fleet
