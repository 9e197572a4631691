#include "worker/measure/stats.h"

#include <algorithm>
#include <cmath>

namespace tir::measure {

double Quantile(const std::vector<double> &sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(sorted.size() - 1, lo + 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

void Summarize(std::vector<double> seconds, tir::v1::Measurement *out) {
  std::sort(seconds.begin(), seconds.end());
  out->set_samples(static_cast<uint32_t>(seconds.size()));
  out->set_median_seconds(Quantile(seconds, 0.5));
  out->set_iqr_seconds(Quantile(seconds, 0.75) - Quantile(seconds, 0.25));
  out->set_min_seconds(seconds.empty() ? 0 : seconds.front());
}

}  // namespace tir::measure
