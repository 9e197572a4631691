#include "bench/fleet/scenarios.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

namespace tir::fleet {

std::vector<RunSpec> ScenarioSpecs(const Calibration &calibration, const ScenarioOptions &options) {
  std::vector<RunSpec> specs;
  auto add = [&](const char *name, int shards, HostTier tier, Arrivals arrivals, double window) -> RunSpec & {
    RunSpec spec;
    spec.name = name;
    spec.shards = shards;
    spec.host_tier = tier;
    spec.arrivals = arrivals;
    spec.window_s = window;
    spec.horizon_s = window + 3600;
    spec.seed = options.seed;
    specs.push_back(spec);
    return specs.back();
  };
  const double ramp = calibration.shape.restart_ramp_s;
  for (int shards : options.shard_counts) {
    add(kSteadyWarm, shards, HostTier::kWarm, Arrivals::kSteady, options.steady_window_s);
    add(kSteadyDirect, shards, HostTier::kNone, Arrivals::kSteady, options.steady_window_s);
    add(kRestartWarm, shards, HostTier::kWarm, Arrivals::kRestart, ramp);
    add(kRestartCold, shards, HostTier::kCold, Arrivals::kRestart, ramp);
    if (shards > 1) add(kRestartColdOwner, shards, HostTier::kCold, Arrivals::kRestart, ramp).route_to_owner = true;
  }
  for (int shards : options.tuning_shard_counts) {
    RunSpec &released = add(kNewModel, shards, HostTier::kWarm, Arrivals::kSteady, options.steady_window_s);
    released.new_model_at_s = 30;
    RunSpec &lost = add(kLossSteady, shards, HostTier::kWarm, Arrivals::kSteady, options.steady_window_s);
    lost.lose_shard = 0;
    lost.lose_at_s = 30;
    RunSpec &lost_restart = add(kLossRestart, shards, HostTier::kCold, Arrivals::kRestart, ramp);
    lost_restart.lose_shard = 0;
    lost_restart.lose_at_s = 60;
  }
  return specs;
}

std::vector<RunResult> RunScenarios(const Calibration &calibration, const std::vector<RunSpec> &specs, int threads,
                                    const std::function<void(const RunResult &)> &progress) {
  // Longest runs first, so the threads finish together: a cold restart
  // (every host asks the fleet) costs most, the more so with fewer shards
  // (their queues grow).
  auto cost = [](const RunSpec &s) {
    bool heavy = s.arrivals == Arrivals::kRestart && s.host_tier != HostTier::kWarm;
    return (heavy ? 100.0 : 0.0) + (s.lose_shard >= 0 ? 50.0 : 0.0) - s.shards;
  };
  std::vector<size_t> order(specs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return cost(specs[a]) > cost(specs[b]); });
  std::vector<RunResult> results(specs.size());
  std::atomic<size_t> next{0};
  std::mutex progress_mu;
  auto work = [&] {
    for (size_t n = next++; n < specs.size(); n = next++) {
      size_t i = order[n];
      results[i] = RunFleet(calibration, specs[i]);
      std::lock_guard<std::mutex> lock(progress_mu);
      if (progress) progress(results[i]);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::max(1, threads); ++t) pool.emplace_back(work);
  work();
  for (std::thread &t : pool) t.join();
  return results;
}

}  // namespace tir::fleet
