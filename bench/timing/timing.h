// Wall-clock helpers shared by the benchmarks.

#ifndef TIR_BENCH_TIMING_TIMING_H_
#define TIR_BENCH_TIMING_TIMING_H_

#include <algorithm>
#include <chrono>
#include <vector>

namespace tir::bench {

// Milliseconds since `t0`.
inline double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The median of `v` (the upper one for an even count); `v` is not empty.
inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median milliseconds of `reps` (>= 1) calls of `fn`.
template <typename Fn>
double MedianMs(int reps, Fn fn) {
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    ms.push_back(MsSince(t0));
  }
  return Median(ms);
}

}  // namespace tir::bench

#endif  // TIR_BENCH_TIMING_TIMING_H_
