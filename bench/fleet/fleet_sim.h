// A discrete-event model of the tir fleet (DESIGN.md, "Scale-out").
//
// What is simulated, per event:
//  1. Process starts, fleet-wide, as one Poisson stream (steady state: at
//     processes / lifetime per second; restart: every process within the
//     ramp), each on a host drawn uniformly: the per-host streams are the
//     fleet stream split, so no per-host event is needed. A started process
//     asks for every graph of its model (one cache key per graph on its
//     host's arch).
//  2. The host tier (one local service per host, a read-through cache):
//     a key in its store is a hit, counted and not simulated further (its
//     latency is the measured loopback hit; a host's own load is far below
//     its capacity); a key already asked for upstream waits on that request
//     (coalesced); a key the fleet answered "tuning" gets the heuristic
//     answer at once; any other key is one fleet request. Without a host
//     tier every lookup is a fleet request.
//  3. A fleet request goes to a coordinator drawn uniformly; if it is not
//     the key's owner (rendezvous hashing over the live shards) it forwards
//     (one unary call's cost on that coordinator, one more round trip);
//     with `route_to_owner` the host sends it to the owner itself.
//     Each coordinator is a FIFO queue in front of `servers` parallel
//     servers whose service time is the measured one-client hit latency;
//     `servers` is chosen so their rate is the measured saturated rate.
//  4. The owner answers from its store (a hit), or starts a tuning job (a
//     miss: the host serves the heuristic answer meanwhile): planning on the
//     owner's planning pool, then one work item per kernel per round of
//     successive halving, queued FIFO per (shard, arch). Each idle worker of
//     that arch leases the oldest head item over all shards. A round takes
//     the prepare time, the compiles (compile_threads at once) and each
//     candidate's measurement overhead plus its timing budget.
//  5. When a job's kernels are all tuned, the owner stores the bundle and
//     sends it to every host that asked (the host stores it).
//  6. Losing a shard: its store, queues and jobs are gone; its keys' owner is
//     the next shard in their hash order, which has to tune them again when
//     asked; hosts waiting on it ask again after the retry delay.

#ifndef TIR_BENCH_FLEET_FLEET_SIM_H_
#define TIR_BENCH_FLEET_FLEET_SIM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "bench/fleet/calibration.h"
#include "bench/fleet/stats.h"

namespace tir::fleet {

enum class HostTier { kWarm, kCold, kNone };
enum class Arrivals { kSteady, kRestart };

struct RunSpec {
  std::string name;
  int shards = 1;
  HostTier host_tier = HostTier::kWarm;
  Arrivals arrivals = Arrivals::kSteady;
  // Process starts happen in [0, window_s); the run goes on until the
  // tuning started by then is done, or until horizon_s.
  double window_s = 600;
  double horizon_s = 3600;
  // A new model released at new_model_at_s (< 0: none).
  double new_model_at_s = -1;
  // Hosts send each request to its key's owner (they know the shard list)
  // instead of to any coordinator, which forwards.
  bool route_to_owner = false;
  // Shard `lose_shard` lost at lose_at_s (< 0: none).
  int lose_shard = -1;
  double lose_at_s = 0;
  uint64_t seed = 1;
};

struct RunResult {
  RunSpec spec;
  uint64_t process_starts = 0;
  uint64_t lookups = 0;            // graph lookups by processes
  uint64_t host_hits = 0;          // answered from the host's store
  uint64_t host_coalesced = 0;     // waited on a request already upstream
  uint64_t heuristic_answers = 0;  // answered untuned while the fleet tuned
  uint64_t local_heuristic = 0;    // of those, by the host at once
  uint64_t fleet_requests = 0;     // requests that reached a coordinator
  uint64_t fleet_hits = 0;
  uint64_t fleet_misses = 0;
  uint64_t forwards = 0;
  // Per shard: hits answered by it as owner, per second; and all requests
  // it served (hits, misses, forwards), per second.
  std::vector<TimeSeries> shard_hits;
  std::vector<TimeSeries> shard_served;
  // Per shard: the share of its servers busy, per second (above 1: its
  // queue grows); forwards count.
  std::vector<TimeSeries> shard_busy;
  TimeSeries fleet_request_rate;
  double shard_capacity_per_s = 0;
  int servers_per_shard = 0;
  // A host-tier miss until the host had an answer (bundle or "tuning").
  LogHistogram fleet_latency;
  LogHistogram fleet_hit_latency;  // of those, answered with a bundle
  // Every lookup a process made: answered by its host at once (the measured
  // host-tier hit latency's distribution) or through the fleet as above.
  LogHistogram lookup_latency;
  LogHistogram queue_wait;         // work item enqueued -> leased
  LogHistogram queue_wait_new_model;
  LogHistogram queue_wait_retune;
  TimeSeries queued_items{5.0};    // items waiting, sampled each 5 s
  TimeSeries busy_workers{5.0};
  int tuning_workers = 0;
  uint64_t jobs = 0;
  uint64_t kernels_tuned = 0;
  double gpu_seconds = 0;
  // New model: first request, each kernel's tuned time (from release), all.
  double new_model_first_request_s = -1;
  int new_model_kernels = 0;
  std::vector<double> new_model_kernel_done_s;
  double new_model_all_tuned_s = -1;
  // Shard loss: keys tuned again, their GPU time, when the last was done
  // (from the loss), and the items that were lost with the shard.
  uint64_t retuned_keys = 0;
  double retune_gpu_seconds = 0;
  double retune_last_done_s = -1;
  uint64_t lost_requests = 0;
  double end_s = 0;
  uint64_t events = 0;
  double wall_s = 0;
};

// Runs one scenario to its end. Deterministic for a given spec and seed.
RunResult RunFleet(const Calibration &calibration, const RunSpec &spec);

}  // namespace tir::fleet

#endif  // TIR_BENCH_FLEET_FLEET_SIM_H_
