// The PNG plots of a run of the scenarios.

#ifndef TIR_BENCH_FLEET_PLOTS_H_
#define TIR_BENCH_FLEET_PLOTS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/fleet/fleet_sim.h"

namespace tir::fleet {

// Writes the plots into `dir` (which exists); returns the files written.
absl::StatusOr<std::vector<std::string>> WritePlots(const std::vector<RunResult> &results, const std::string &dir);

}  // namespace tir::fleet

#endif  // TIR_BENCH_FLEET_PLOTS_H_
