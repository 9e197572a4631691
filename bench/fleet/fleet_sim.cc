#include "bench/fleet/fleet_sim.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <random>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "bench/fleet/catalog.h"
#include "bench/fleet/event_queue.h"
#include "bench/fleet/rendezvous.h"

namespace tir::fleet {
namespace {

enum Kind {
  kProcessStart,
  kArrive,       // a = coordinator, b = request
  kServeDone,    // a = coordinator, b = request
  kReply,        // b = request: the answer reaches its host
  kBundle,       // a = host, b = key: a finished job's bundle reaches a host
  kAskAgain,     // a = host, b = key: a host's job was lost with its shard
  kPlanDone,     // b = job
  kItemDone,     // b = item
  kLoseShard,
  kReleaseModel,
  kSample,
};

constexpr double kSampleEvery = 5.0;

struct Request {
  int host = 0;
  int key = 0;
  double sent = 0;
  bool at_owner = false;   // forwarded (or sent) to the owner already
  bool forwarded = false;
  bool hit = false;
};

struct Job {
  int key = 0;
  int shard = 0;
  int kernels_left = 0;
  std::vector<int> hosts;  // hosts to send the bundle to
  bool dead = false;
  bool retune = false;
  bool new_model = false;
};

struct Item {
  int job = 0;
  int round = 0;
  double enqueued = 0;
  double compile_s = 0;  // per candidate, by the kernel's kind
};

struct Shard {
  bool up = true;
  int busy = 0;
  std::deque<int64_t> waiting;
  std::vector<uint8_t> stored;  // per key
  std::vector<int> job;         // per key, -1: none
  int planning_busy = 0;
  std::deque<int> planning_queue;
  std::vector<std::deque<int>> items;  // per arch
  size_t queued_items = 0;
};

// A host-tier key asked upstream: the lookups waiting for the first answer
// (their start times); once the fleet said "tuning", later lookups get the
// heuristic answer until the bundle arrives.
struct Pending {
  bool answered = false;
  absl::InlinedVector<double, 2> waiters;
};

class Fleet {
 public:
  Fleet(const Calibration &calibration, const RunSpec &spec)
      : c_(calibration.costs), shape_(calibration.shape), spec_(spec), catalog_(shape_, 7), rng_(spec.seed) {
    if (spec.new_model_at_s >= 0) new_model_ = catalog_.AddModel(rng_);
    nkeys_ = static_cast<int>(catalog_.keys().size());
    words_per_host_ = (nkeys_ + 63) / 64;
    result_.spec = spec;
  }

  RunResult Run() {
    auto wall0 = std::chrono::steady_clock::now();
    Setup();
    while (!q_.empty() && q_.next_time() <= spec_.horizon_s) Dispatch(q_.Pop());
    AddLocalAnswers();
    result_.end_s = q_.now();
    result_.events = q_.popped();
    result_.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    return std::move(result_);
  }

 private:
  // Lookups the host answered at once take the measured host-tier hit
  // latency: a lognormal through its p50 and p99, added as 1,000 equal
  // slices at their quantiles (drawing tens of millions of samples would
  // cost more than the rest of the run and say nothing more).
  void AddLocalAnswers() {
    result_.lookup_latency = result_.fleet_latency;
    const uint64_t local = result_.host_hits + result_.local_heuristic;
    constexpr int kSlices = 1000;
    for (int i = 0; i < kSlices; ++i) {
      uint64_t count = local * (i + 1) / kSlices - local * i / kSlices;
      if (count == 0) continue;
      double z = NormalQuantile((i + 0.5) / kSlices);
      result_.lookup_latency.Add(c_.host_hit_p50_s * std::exp(lookup_sigma_ * z), count);
    }
  }

  // The standard normal's q-quantile, by bisection on its CDF.
  static double NormalQuantile(double q) {
    double lo = -10, hi = 10;
    for (int i = 0; i < 80; ++i) {
      double mid = (lo + hi) / 2;
      if (0.5 * std::erfc(-mid / std::sqrt(2.0)) < q) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    return (lo + hi) / 2;
  }

  // --- setup -------------------------------------------------------------

  void Setup() {
    const int shards = spec_.shards;
    result_.shard_hits.assign(shards, TimeSeries());
    result_.shard_served.assign(shards, TimeSeries());
    result_.shard_busy.assign(shards, TimeSeries());
    shards_.resize(shards);
    for (Shard &s : shards_) {
      s.stored.assign(nkeys_, 0);
      s.job.assign(nkeys_, -1);
      s.items.resize(catalog_.archs());
    }
    owner_.resize(nkeys_);
    for (int k = 0; k < nkeys_; ++k) owner_[k] = RendezvousOwner(catalog_.keys()[k].hash, shards);
    // Steady state: every existing model was tuned long ago.
    for (int k = 0; k < nkeys_; ++k) {
      if (catalog_.keys()[k].model != new_model_) shards_[owner_[k]].stored[k] = 1;
    }

    // Coordinator servers: as many one-client hit latencies in parallel as
    // make the measured saturated rate (Little's law), the service time
    // scaled so the rate is exact.
    lookup_sigma_ = std::log(c_.host_hit_p99_s / c_.host_hit_p50_s) / 2.326;
    double mean_service = c_.host_hit_p50_s * std::exp(lookup_sigma_ * lookup_sigma_ / 2);
    servers_ = std::max(1, static_cast<int>(std::lround(c_.shard_hits_per_s * mean_service)));
    service_scale_ = servers_ / (c_.shard_hits_per_s * mean_service);
    result_.servers_per_shard = servers_;
    result_.shard_capacity_per_s = c_.shard_hits_per_s;

    // Hosts by arch, in blocks.
    host_arch_.resize(shape_.hosts);
    double cumulative = 0;
    int h = 0;
    for (int a = 0; a < catalog_.archs(); ++a) {
      cumulative += shape_.arch_share[a];
      int end = a + 1 == catalog_.archs() ? shape_.hosts : static_cast<int>(std::lround(cumulative * shape_.hosts));
      for (; h < end; ++h) host_arch_[h] = a;
    }
    idle_workers_.assign(catalog_.archs(), 0);
    for (int a = 0; a < catalog_.archs(); ++a) {
      idle_workers_[a] = std::max(
          1, static_cast<int>(std::lround(shape_.hosts * shape_.gpus_per_host * shape_.tuning_gpu_share * shape_.arch_share[a])));
      result_.tuning_workers += idle_workers_[a];
    }

    if (spec_.host_tier != HostTier::kNone) {
      host_store_.assign(static_cast<size_t>(shape_.hosts) * words_per_host_, 0);
      if (spec_.host_tier == HostTier::kWarm) {
        for (int host = 0; host < shape_.hosts; ++host) {
          for (int i = 0; i < shape_.warm_history_starts; ++i) {
            int model = catalog_.SampleZipf(rng_);
            int first = catalog_.first_key(model, host_arch_[host]);
            for (int g = 0; g < catalog_.graphs(model); ++g) SetHostHas(host, first + g);
          }
        }
      }
    }

    double rate = spec_.arrivals == Arrivals::kSteady ? shape_.processes / shape_.process_lifetime_s
                                                      : shape_.processes / shape_.restart_ramp_s;
    start_rate_ = rate;
    q_.Push(NextGap(), kProcessStart);
    if (spec_.new_model_at_s >= 0) q_.Push(spec_.new_model_at_s, kReleaseModel);
    if (spec_.lose_shard >= 0) q_.Push(spec_.lose_at_s, kLoseShard, spec_.lose_shard);
    q_.Push(0, kSample);
  }

  double NextGap() { return std::exponential_distribution<double>(start_rate_)(rng_); }
  double Lognormal(double median, double sigma) {
    return median * std::exp(sigma * std::normal_distribution<double>(0, 1)(rng_));
  }

  bool HostHas(int host, int key) const {
    return host_store_[static_cast<size_t>(host) * words_per_host_ + key / 64] >> (key % 64) & 1;
  }
  void SetHostHas(int host, int key) {
    host_store_[static_cast<size_t>(host) * words_per_host_ + key / 64] |= uint64_t{1} << (key % 64);
  }
  uint64_t PendingId(int host, int key) const { return static_cast<uint64_t>(host) * nkeys_ + key; }

  int RandomUpShard() {
    std::uniform_int_distribution<int> pick(0, spec_.shards - 1);
    for (;;) {
      int s = pick(rng_);
      if (shards_[s].up) return s;
    }
  }

  // The coordinator a host sends a request for `key` to.
  int EntryShard(int key) { return spec_.route_to_owner ? owner_[key] : RandomUpShard(); }

  // --- events ------------------------------------------------------------

  void Dispatch(const Event &e) {
    switch (e.kind) {
      case kProcessStart: return ProcessStart();
      case kArrive: return Arrive(e.a, e.b);
      case kServeDone: return ServeDone(e.a, e.b);
      case kReply: return Reply(e.b);
      case kBundle: return Bundle(e.a, static_cast<int>(e.b));
      case kAskAgain: return SendUpstream(e.a, static_cast<int>(e.b), q_.now());
      case kPlanDone: return PlanDone(static_cast<int>(e.b));
      case kItemDone: return ItemDone(static_cast<int>(e.b));
      case kLoseShard: return LoseShard(e.a);
      case kReleaseModel: released_ = true; return;
      case kSample: return Sample();
    }
  }

  void ProcessStart() {
    double now = q_.now();
    ++result_.process_starts;
    bool more = spec_.arrivals == Arrivals::kSteady || static_cast<long>(result_.process_starts) < shape_.processes;
    double next = now + NextGap();
    if (more && next < spec_.window_s) q_.Push(next, kProcessStart);

    int host = std::uniform_int_distribution<int>(0, shape_.hosts - 1)(rng_);
    int model = released_ && std::uniform_real_distribution<double>(0, 1)(rng_) < shape_.new_model_share
                    ? new_model_
                    : catalog_.SampleZipf(rng_);
    int first = catalog_.first_key(model, host_arch_[host]);
    if (model == new_model_ && result_.new_model_first_request_s < 0) result_.new_model_first_request_s = now;
    for (int g = 0; g < catalog_.graphs(model); ++g) Lookup(host, first + g, now);
  }

  void Lookup(int host, int key, double now) {
    ++result_.lookups;
    if (spec_.host_tier == HostTier::kNone) return Send(host, key, now);
    if (HostHas(host, key)) {
      ++result_.host_hits;
      return;
    }
    auto it = pending_.find(PendingId(host, key));
    if (it != pending_.end()) {
      if (it->second.answered) {
        ++result_.heuristic_answers;
        ++result_.local_heuristic;
      } else {
        ++result_.host_coalesced;
        it->second.waiters.push_back(now);
      }
      return;
    }
    pending_[PendingId(host, key)].waiters.push_back(now);
    SendUpstream(host, key, now);
  }

  // A host-tier miss goes up after the local lookup that missed.
  void SendUpstream(int host, int key, double now) { Send(host, key, now + c_.host_hit_p50_s); }

  void Send(int host, int key, double at) {
    int64_t id;
    if (!free_requests_.empty()) {
      id = free_requests_.back();
      free_requests_.pop_back();
    } else {
      id = static_cast<int64_t>(requests_.size());
      requests_.emplace_back();
    }
    requests_[id] = Request{host, key, at, false, false, false};
    ++result_.fleet_requests;
    result_.fleet_request_rate.Add(at);
    q_.Push(at + c_.host_fleet_rtt_s / 2, kArrive, EntryShard(key), id);
  }

  void Arrive(int shard, int64_t id) {
    Shard &s = shards_[shard];
    if (!s.up) return Lost(id);
    if (s.busy < servers_) {
      StartService(shard, id);
    } else {
      s.waiting.push_back(id);
    }
  }

  void StartService(int shard, int64_t id) {
    Shard &s = shards_[shard];
    ++s.busy;
    const Request &r = requests_[id];
    bool forwarding = !r.at_owner && owner_[r.key] != shard;
    double service = forwarding ? c_.forward_s : service_scale_ * Lognormal(c_.host_hit_p50_s, lookup_sigma_);
    result_.shard_busy[shard].Add(q_.now(), service / servers_);
    q_.Push(q_.now() + service, kServeDone, shard, id);
  }

  void ServeDone(int shard, int64_t id) {
    Shard &s = shards_[shard];
    --s.busy;
    if (!s.waiting.empty() && s.up) {
      int64_t next = s.waiting.front();
      s.waiting.pop_front();
      StartService(shard, next);
    }
    if (!s.up) return Lost(id);
    double now = q_.now();
    Request &r = requests_[id];
    result_.shard_served[shard].Add(now);
    if (!r.at_owner && owner_[r.key] != shard) {
      ++result_.forwards;
      r.at_owner = r.forwarded = true;
      q_.Push(now + c_.fleet_rtt_s / 2, kArrive, owner_[r.key], id);
      return;
    }
    r.at_owner = true;
    double back = c_.host_fleet_rtt_s / 2 + (r.forwarded ? c_.fleet_rtt_s / 2 : 0);
    if (s.stored[r.key]) {
      ++result_.fleet_hits;
      result_.shard_hits[shard].Add(now);
      r.hit = true;
    } else {
      ++result_.fleet_misses;
      int job = s.job[r.key] >= 0 ? s.job[r.key] : StartJob(shard, r.key);
      if (spec_.host_tier != HostTier::kNone) jobs_[job].hosts.push_back(r.host);
    }
    q_.Push(now + back, kReply, 0, id);
  }

  // A request whose shard went away: its host asks again after the retry
  // delay, through another coordinator.
  void Lost(int64_t id) {
    ++result_.lost_requests;
    Request &r = requests_[id];
    r.at_owner = r.forwarded = false;
    q_.Push(q_.now() + c_.retry_s, kArrive, EntryShard(r.key), id);
  }

  void Reply(int64_t id) {
    double now = q_.now();
    Request r = requests_[id];
    free_requests_.push_back(id);
    if (spec_.host_tier == HostTier::kNone) {
      result_.fleet_latency.Add(now - r.sent);
      if (r.hit) {
        result_.fleet_hit_latency.Add(now - r.sent);
      } else {
        ++result_.heuristic_answers;
      }
      return;
    }
    auto it = pending_.find(PendingId(r.host, r.key));
    if (it == pending_.end()) return;  // the bundle came first
    for (double w : it->second.waiters) {
      result_.fleet_latency.Add(now - w);
      if (r.hit) result_.fleet_hit_latency.Add(now - w);
    }
    if (r.hit) {
      SetHostHas(r.host, r.key);
      pending_.erase(it);
    } else {
      result_.heuristic_answers += it->second.waiters.size();
      it->second.waiters.clear();
      it->second.answered = true;
    }
  }

  void Bundle(int host, int key) {
    if (spec_.host_tier == HostTier::kNone) return;
    SetHostHas(host, key);
    auto it = pending_.find(PendingId(host, key));
    if (it == pending_.end()) return;
    // Lookups still waiting for a first answer get the bundle.
    for (double w : it->second.waiters) {
      result_.fleet_latency.Add(q_.now() - w);
      result_.fleet_hit_latency.Add(q_.now() - w);
    }
    pending_.erase(it);
  }

  // --- tuning ------------------------------------------------------------

  int StartJob(int shard, int key) {
    int id = static_cast<int>(jobs_.size());
    const CacheKey &k = catalog_.keys()[key];
    Job job;
    job.key = key;
    job.shard = shard;
    job.kernels_left = k.kernels;
    job.new_model = k.model == new_model_;
    job.retune = !lost_stored_.empty() && lost_stored_[key];
    if (job.retune) ++result_.retuned_keys;
    jobs_.push_back(std::move(job));
    ++result_.jobs;
    ++active_jobs_;
    Shard &s = shards_[shard];
    s.job[key] = id;
    if (s.planning_busy < c_.planning_threads_per_shard) {
      StartPlanning(shard, id);
    } else {
      s.planning_queue.push_back(id);
    }
    return id;
  }

  void StartPlanning(int shard, int job) {
    ++shards_[shard].planning_busy;
    const CacheKey &k = catalog_.keys()[jobs_[job].key];
    double plan = Lognormal(k.ops * c_.planning_s_per_op, c_.duration_sigma);
    q_.Push(q_.now() + plan, kPlanDone, shard, job);
  }

  void PlanDone(int job_id) {
    Job &job = jobs_[job_id];
    Shard &s = shards_[job.shard];
    --s.planning_busy;
    if (s.up && !s.planning_queue.empty()) {
      int next = s.planning_queue.front();
      s.planning_queue.pop_front();
      StartPlanning(job.shard, next);
    }
    if (job.dead) return;
    std::discrete_distribution<int> kind(shape_.kernel_kind_share.begin(), shape_.kernel_kind_share.end());
    for (int kernel = 0; kernel < job.kernels_left; ++kernel) Enqueue(job_id, 0, c_.compile_s_by_kind[kind(rng_)]);
  }

  void Enqueue(int job_id, int round, double compile_s) {
    const Job &job = jobs_[job_id];
    int arch = catalog_.keys()[job.key].arch;
    int id = static_cast<int>(items_.size());
    items_.push_back(Item{job_id, round, q_.now(), compile_s});
    Shard &s = shards_[job.shard];
    s.items[arch].push_back(id);
    ++s.queued_items;
    ++queued_items_;
    Lease(arch);
  }

  // Idle workers of `arch` lease the oldest waiting item over all shards.
  void Lease(int arch) {
    while (idle_workers_[arch] > 0) {
      int best = -1;
      double oldest = 0;
      for (int sh = 0; sh < spec_.shards; ++sh) {
        const auto &queue = shards_[sh].items[arch];
        if (queue.empty()) continue;
        double t = items_[queue.front()].enqueued;
        if (best < 0 || t < oldest) {
          best = sh;
          oldest = t;
        }
      }
      if (best < 0) return;
      Shard &s = shards_[best];
      int id = s.items[arch].front();
      s.items[arch].pop_front();
      --s.queued_items;
      --queued_items_;
      --idle_workers_[arch];
      ++busy_workers_;
      const Item &item = items_[id];
      const Job &job = jobs_[item.job];
      double wait = q_.now() - item.enqueued;
      result_.queue_wait.Add(wait);
      if (job.new_model) result_.queue_wait_new_model.Add(wait);
      if (job.retune) result_.queue_wait_retune.Add(wait);
      double duration = RoundSeconds(item.round, item.compile_s);
      result_.gpu_seconds += duration;
      if (job.retune) result_.retune_gpu_seconds += duration;
      q_.Push(q_.now() + duration, kItemDone, arch, id);
    }
  }

  // One round of successive halving for one kernel on one worker.
  double RoundSeconds(int round, double compile_s) {
    int n = c_.round_candidates[round];
    int compile_batches = (n + c_.compile_threads - 1) / c_.compile_threads;
    double budget = c_.round0_budget_s * std::pow(2.0, round);
    double median = c_.prepare_s + compile_batches * compile_s + n * (c_.measure_overhead_s + budget);
    return Lognormal(median, c_.duration_sigma);
  }

  void ItemDone(int id) {
    const Item item = items_[id];
    Job &job = jobs_[item.job];
    int arch = catalog_.keys()[job.key].arch;
    ++idle_workers_[arch];
    --busy_workers_;
    if (!job.dead) {
      if (item.round + 1 < static_cast<int>(c_.round_candidates.size())) {
        Enqueue(item.job, item.round + 1, item.compile_s);
      } else {
        KernelDone(item.job);
      }
    }
    Lease(arch);
  }

  void KernelDone(int job_id) {
    Job &job = jobs_[job_id];
    double now = q_.now();
    ++result_.kernels_tuned;
    if (job.new_model) result_.new_model_kernel_done_s.push_back(now - spec_.new_model_at_s);
    if (--job.kernels_left > 0) return;
    Shard &s = shards_[job.shard];
    s.stored[job.key] = 1;
    s.job[job.key] = -1;
    --active_jobs_;
    if (job.retune) result_.retune_last_done_s = now - spec_.lose_at_s;
    if (job.new_model && ++new_model_keys_done_ == catalog_.graphs(new_model_) * catalog_.archs()) {
      result_.new_model_all_tuned_s = now - spec_.new_model_at_s;
    }
    for (int host : job.hosts) q_.Push(now + c_.host_fleet_rtt_s / 2, kBundle, host, job.key);
    job.hosts.clear();
    job.hosts.shrink_to_fit();
  }

  // --- losing a shard ----------------------------------------------------

  void LoseShard(int shard) {
    Shard &s = shards_[shard];
    s.up = false;
    down_mask_ |= uint64_t{1} << shard;
    lost_stored_.assign(nkeys_, 0);
    for (int k = 0; k < nkeys_; ++k) {
      if (owner_[k] != shard) continue;
      lost_stored_[k] = s.stored[k];
      owner_[k] = RendezvousOwner(catalog_.keys()[k].hash, spec_.shards, down_mask_);
    }
    std::fill(s.stored.begin(), s.stored.end(), 0);
    // Its jobs end; the hosts waiting on them ask again.
    for (int k = 0; k < nkeys_; ++k) {
      if (s.job[k] < 0) continue;
      Job &job = jobs_[s.job[k]];
      job.dead = true;
      --active_jobs_;
      for (int host : job.hosts) q_.Push(q_.now() + c_.retry_s, kAskAgain, host, k);
      s.job[k] = -1;
    }
    for (auto &queue : s.items) queue.clear();
    queued_items_ -= s.queued_items;
    s.queued_items = 0;
    s.planning_queue.clear();
    while (!s.waiting.empty()) {
      Lost(s.waiting.front());
      s.waiting.pop_front();
    }
  }

  void Sample() {
    double now = q_.now();
    result_.queued_items.Add(now, static_cast<double>(queued_items_));
    result_.busy_workers.Add(now, busy_workers_);
    if (now < spec_.window_s || active_jobs_ > 0) q_.Push(now + kSampleEvery, kSample);
  }

  const Costs &c_;
  const FleetShape &shape_;
  RunSpec spec_;
  Catalog catalog_;
  std::mt19937_64 rng_;
  EventQueue q_;
  RunResult result_;

  int nkeys_ = 0;
  int new_model_ = -1;
  bool released_ = false;
  int new_model_keys_done_ = 0;
  double start_rate_ = 0;
  double lookup_sigma_ = 0;
  double service_scale_ = 1;
  int servers_ = 1;
  uint64_t down_mask_ = 0;

  std::vector<Shard> shards_;
  std::vector<int> owner_;
  std::vector<uint8_t> lost_stored_;
  std::vector<int> host_arch_;
  size_t words_per_host_ = 0;
  std::vector<uint64_t> host_store_;
  absl::flat_hash_map<uint64_t, Pending> pending_;
  std::vector<Request> requests_;
  std::vector<int64_t> free_requests_;
  std::vector<Job> jobs_;
  std::vector<Item> items_;
  std::vector<int> idle_workers_;
  int busy_workers_ = 0;
  size_t queued_items_ = 0;
  int active_jobs_ = 0;
};

}  // namespace

RunResult RunFleet(const Calibration &calibration, const RunSpec &spec) { return Fleet(calibration, spec).Run(); }

}  // namespace tir::fleet
