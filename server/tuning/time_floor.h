// The least time a kernel candidate can take on any device of its arch: its
// roofline (compiler/perf/Report.h: bytes moved over the memory bandwidth,
// flops over the math peak) at rates no device reaches, and a minimum time
// no run of a real kernel goes under. A worker's passing median below it is
// made up (a worker that picks the winner with a time of 1e-9 s); the
// dispatcher refuses the report and distrusts the worker.
//
// The floor has to hold for every honest measurement, so it is generous
// where the cost model's figures are not bounds:
//   - bytes are the model's traffic, which counts re-reads and narrow
//     accesses that caches serve: a GPU's bandwidth is taken as 16 times
//     the fastest DRAM of the arch's devices (above any L2), the host's as
//     1 TB/s (a single core runs a host kernel; no core streams that);
//   - flops against 4 times the arch's highest peak (tensor cores included);
//   - a GPU kernel runs at least 200 ns (launch to completion as CUPTI or
//     events time it), a host kernel at least 20 ns (the thread CPU clock
//     around one call costs more).
// A candidate without model figures gets the minimum time alone.

#ifndef TIR_SERVER_TUNING_TIME_FLOOR_H_
#define TIR_SERVER_TUNING_TIME_FLOOR_H_

#include <string>

#include "tir/v1/kernel.pb.h"

namespace tir::tuning {

inline constexpr double kGpuMinKernelSeconds = 200e-9;
inline constexpr double kHostMinKernelSeconds = 20e-9;
inline constexpr double kHostBytesPerSecond = 1e12;
inline constexpr double kHostFlopsPerSecond = 4e12;

// The floor of `candidate` (its model_inputs "bytes" and "flops") on `arch`;
// 0 for an arch the table does not know.
double TimeFloorSeconds(const tir::v1::Candidate &candidate, const std::string &arch);

}  // namespace tir::tuning

#endif  // TIR_SERVER_TUNING_TIME_FLOOR_H_
