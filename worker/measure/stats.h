// Statistics of timed samples: median, interquartile range, minimum, count.

#ifndef TIR_WORKER_MEASURE_STATS_H_
#define TIR_WORKER_MEASURE_STATS_H_

#include <vector>

#include "tir/v1/kernel.pb.h"

namespace tir::measure {

// Fills median_seconds, iqr_seconds (Q3 - Q1, linear interpolation between
// order statistics), min_seconds and samples from `seconds`; the other fields
// of `out` are left as they are. No samples gives zeros.
void Summarize(std::vector<double> seconds, tir::v1::Measurement *out);

// The q-quantile (0..1) of sorted `v` with linear interpolation.
double Quantile(const std::vector<double> &sorted, double q);

}  // namespace tir::measure

#endif  // TIR_WORKER_MEASURE_STATS_H_
