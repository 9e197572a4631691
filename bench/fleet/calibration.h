// Every input of the fleet model in one place, each with where it comes
// from: measured (the file and figure in this repository that recorded it),
// read from tir's code (a configured default, not a measurement), or assumed
// (and why). The binary prints this table before its results.

#ifndef TIR_BENCH_FLEET_CALIBRATION_H_
#define TIR_BENCH_FLEET_CALIBRATION_H_

#include <string>
#include <vector>

namespace tir::fleet {

// The costs of tir's own parts.
struct Costs {
  // A cache hit answered by a service on the same machine (the host tier:
  // the per-host local service is the coordinator's code over loopback).
  double host_hit_p50_s = 0;
  double host_hit_p99_s = 0;
  // Hits one coordinator shard answers per second at saturation.
  double shard_hits_per_s = 0;
  // A bare unary gRPC call of the same bytes: what a coordinator spends
  // forwarding a request to the key's owner.
  double forward_s = 0;
  // Planning one graph: per op.
  double planning_s_per_op = 0;
  int planning_threads_per_shard = 0;
  // Tuning one kernel (successive halving): candidates per round, the
  // round-0 timing budget per candidate (doubled each round), the worker's
  // parallel compiles.
  std::vector<int> round_candidates;
  double round0_budget_s = 0;
  int compile_threads = 0;
  // The GPU-side cost of one candidate measurement besides its timing
  // budget: correctness check, launches, flushes.
  double measure_overhead_s = 0;
  // NVRTC compile of one candidate on the worker's CPU, per kernel kind
  // (pointwise, reduction, matmul).
  std::vector<double> compile_s_by_kind;
  // Making a work item current on the worker (inputs, reference outputs).
  double prepare_s = 0;
  // Round-trip time between a host and the fleet, and between coordinators.
  double host_fleet_rtt_s = 0;
  double fleet_rtt_s = 0;
  // Spread of a tuning round's and a plan's duration (lognormal sigma).
  double duration_sigma = 0;
  // A host re-sends a request whose shard went away after this long.
  double retry_s = 0;
};

// The fleet and its users.
struct FleetShape {
  int hosts = 0;
  int gpus_per_host = 0;
  long processes = 0;
  // Share of hosts (and so GPUs) per arch; a key is tuned per arch.
  std::vector<double> arch_share;
  // Share of GPUs whose worker takes tuning work at a time.
  double tuning_gpu_share = 0;
  int models = 0;
  double zipf_s = 0;
  int graphs_min = 0, graphs_max = 0;
  int kernels_min = 0, kernels_max = 0;
  int ops_min = 0, ops_max = 0;
  // Share of kernels of each kind (as Costs::compile_s_by_kind).
  std::vector<double> kernel_kind_share;
  // Steady state: a process lives this long on average (starts are Poisson
  // at processes / lifetime per second).
  double process_lifetime_s = 0;
  // Fleet-wide restart: every process starts within this window.
  double restart_ramp_s = 0;
  // A host's store, warm: the models its last `warm_history` process
  // starts ran.
  int warm_history_starts = 0;
  // A new model's share of process starts once released.
  double new_model_share = 0;
};

struct InputRow {
  std::string name;
  std::string value;
  std::string source;  // "measured", "code" or "assumed"
  std::string where;   // file and figure, or why
};

struct Calibration {
  Costs costs;
  FleetShape shape;
  std::vector<InputRow> rows;
};

// The calibration this model runs with (see NOTES.md for the runs cited).
Calibration DefaultCalibration();

// `--quick`: the same costs over a fleet a hundredth the size.
Calibration QuickCalibration();

}  // namespace tir::fleet

#endif  // TIR_BENCH_FLEET_CALIBRATION_H_
