#include "bench/fleet/calibration.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tir::fleet {
namespace {

std::string Us(double s) { return absl::StrFormat("%.0f us", s * 1e6); }
std::string Ms(double s) { return absl::StrFormat("%.1f ms", s * 1e3); }

}  // namespace

Calibration DefaultCalibration() {
  Calibration cal;
  Costs &c = cal.costs;
  FleetShape &f = cal.shape;
  auto row = [&cal](std::string name, std::string value, std::string source, std::string where) {
    cal.rows.push_back(InputRow{std::move(name), std::move(value), std::move(source), std::move(where)});
  };

  // --- measured -----------------------------------------------------------
  // bench/service over loopback gRPC (NOTES.md records the run and its date).
  c.host_hit_p50_s = 138e-6;
  c.host_hit_p99_s = 289e-6;
  row("host-tier hit latency p50 / p99", absl::StrCat(Us(c.host_hit_p50_s), " / ", Us(c.host_hit_p99_s)), "measured",
      "bench/fleet/NOTES.md, 2026-12-06 run 2: //bench/service Compile hit, 1 client, loopback");
  c.shard_hits_per_s = 8922;
  row("one shard's hit capacity", absl::StrFormat("%.0f hits/s", c.shard_hits_per_s), "measured",
      "bench/fleet/NOTES.md, 2026-12-06 run 2: //bench/service Compile hit, 8 clients (its best rate; 2 cores shared with the clients)");
  c.forward_s = 103e-6;
  row("a forward to the key's owner", Us(c.forward_s), "measured",
      "bench/fleet/NOTES.md, 2026-12-06 run 2: //bench/service gRPC echo of the same bytes, 1 client p50");
  c.planning_s_per_op = 1.0 / 19990;
  row("planning, per op of a graph", Us(c.planning_s_per_op), "measured",
      "README.md, Limits: a 19,990-op chain plans in 1.0 s");
  c.measure_overhead_s = 13.0 / 150;
  row("GPU cost of one candidate measurement", Ms(c.measure_overhead_s), "measured",
      "bench/gpu/NOTES.md 2026-12-04: the suite ran in 13 s for 150 kernel sets on an H200 (check + 26 timed runs)");

  // --- tir's configuration (read from the code, not measured) ------------
  c.round_candidates = {8, 4, 2, 3};
  row("candidates per tuning round", "8, 4, 2, then 3 confirming", "code",
      "server/tuning/successive_halving.h: TunerConfig width 8, halved to 2, finalists + default");
  c.round0_budget_s = 0.02;
  row("timing budget per candidate, round 0", "20 ms, doubled each round", "code",
      "server/tuning/successive_halving.h: TunerConfig budget_seconds");
  c.compile_threads = 2;
  row("compiles at once per worker", "2", "code", "worker/worker.h: WorkerOptions compile_threads");
  c.planning_threads_per_shard = 3;
  row("planning threads per shard", "3", "code", "README.md: the planning pool has at least three");

  // --- assumed --------------------------------------------------------------
  c.compile_s_by_kind = {0.1104, 0.1644, 1.9186};
  row("NVRTC compile of one candidate: pointwise / reduction / matmul", "110 / 164 / 1919 ms", "measured",
      "bench/fleet/NOTES.md, 2026-12-06: bazel run -c opt //bench/codegen, median per candidate, sm_90a, 2 cores");
  c.prepare_s = 0.5;
  row("making a work item current (inputs, reference)", "0.5 s", "assumed", "no recorded figure");
  c.host_fleet_rtt_s = 0.5e-3;
  c.fleet_rtt_s = 0.2e-3;
  row("round trip host -> fleet / coordinator -> coordinator", "500 us / 200 us", "assumed",
      "same region, one data center network");
  c.duration_sigma = 0.3;
  row("spread of a round's and a plan's duration", "lognormal sigma 0.3", "assumed", "kernels differ");
  c.retry_s = 1.0;
  row("a host asks again after its shard went away", "1 s", "assumed", "a client deadline and retry");

  f.hosts = 1250;
  f.gpus_per_host = 8;
  row("GPUs", "10,000 (1,250 hosts x 8)", "assumed", "the issue's fleet");
  f.processes = 1000000;
  row("framework processes", "1,000,000 (800 a host)", "assumed", "the issue's fleet");
  f.arch_share = {0.7, 0.3};
  row("archs", "2: 70% / 30% of hosts (e.g. sm_90a, sm_100a)", "assumed", "a key is tuned per arch");
  f.tuning_gpu_share = 0.10;
  row("GPUs whose worker tunes at a time", "10% (1,000)", "assumed", "the rest run the jobs the fleet serves");
  f.models = 300;
  f.zipf_s = 1.0;
  row("distinct models, popularity", "300, Zipf s = 1", "assumed", "a few hundred models, a few popular");
  f.graphs_min = 24;
  f.graphs_max = 48;
  row("graphs per model", "24..48 uniform", "assumed", "a few dozen regions and shapes");
  f.kernels_min = 1;
  f.kernels_max = 6;
  row("kernels per graph", "1..6 uniform", "assumed", "tir's partitions of typical regions");
  f.kernel_kind_share = {0.4, 0.25, 0.35};
  row("kernels: pointwise / reduction / matmul", "40% / 25% / 35%", "assumed", "transformer-like graphs");
  f.ops_min = 50;
  f.ops_max = 500;
  row("ops per graph", "50..500 uniform", "assumed", "sets planning time");
  f.process_lifetime_s = 1800;
  row("process lifetime (steady state)", "30 min mean", "assumed", "about 560 process starts a second");
  f.restart_ramp_s = 600;
  row("fleet-wide restart", "all processes within 10 min", "assumed", "the issue");
  f.warm_history_starts = 1600;
  row("a warm host's store", "models of its last 1,600 process starts", "assumed", "two lifetimes of its 800");
  f.new_model_share = 0.05;
  row("a new model's share of process starts", "5%", "assumed", "a popular release");
  row("while the fleet tunes a key", "the heuristic answer at once; lookups coalesce per host", "assumed",
      "DESIGN.md: the fleet down means the heuristic, never an error");
  row("a process's lookups", "all its model's graphs at its start", "assumed", "a burst: conservative");
  return cal;
}

Calibration QuickCalibration() {
  Calibration cal = DefaultCalibration();
  cal.shape.hosts = 125;
  cal.shape.processes = 100000;
  cal.shape.models = 100;
  cal.rows.push_back(InputRow{"--quick", "125 hosts, 100,000 processes, 100 models", "assumed", "a covering run"});
  return cal;
}

}  // namespace tir::fleet
