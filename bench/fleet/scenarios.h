// The scenarios the fleet model runs, and the sweep over shard counts:
//  1. steady state: warm host tiers against processes asking the fleet
//     directly (no host tier);
//  2. a fleet-wide restart (every process within ten minutes) with warm and
//     with cold host tiers (and cold, with hosts sending each request to
//     its key's owner rather than to any coordinator);
//  3. a new model released in the steady state;
//  4. one shard lost, in the steady state and during a cold restart.

#ifndef TIR_BENCH_FLEET_SCENARIOS_H_
#define TIR_BENCH_FLEET_SCENARIOS_H_

#include <functional>
#include <string>
#include <vector>

#include "bench/fleet/calibration.h"
#include "bench/fleet/fleet_sim.h"

namespace tir::fleet {

// Scenario names, as the table and the plots refer to them.
inline constexpr char kSteadyWarm[] = "steady, host tier";
inline constexpr char kSteadyDirect[] = "steady, no host tier";
inline constexpr char kRestartWarm[] = "restart, warm hosts";
inline constexpr char kRestartCold[] = "restart, cold hosts";
inline constexpr char kRestartColdOwner[] = "restart, cold, to owner";
inline constexpr char kNewModel[] = "new model";
inline constexpr char kLossSteady[] = "shard lost, steady";
inline constexpr char kLossRestart[] = "shard lost, cold restart";

struct ScenarioOptions {
  std::vector<int> shard_counts = {1, 3, 8, 16};
  // Shard counts for the new-model and shard-loss scenarios.
  std::vector<int> tuning_shard_counts = {3, 8, 16};
  double steady_window_s = 300;
  uint64_t seed = 1;
};

std::vector<RunSpec> ScenarioSpecs(const Calibration &calibration, const ScenarioOptions &options);

// Runs every spec on `threads` threads (each run is independent and
// deterministic, so the results do not depend on the thread count), calling
// `progress` after each run, one call at a time; results in spec order.
std::vector<RunResult> RunScenarios(const Calibration &calibration, const std::vector<RunSpec> &specs, int threads,
                                    const std::function<void(const RunResult &)> &progress);

}  // namespace tir::fleet

#endif  // TIR_BENCH_FLEET_SCENARIOS_H_
