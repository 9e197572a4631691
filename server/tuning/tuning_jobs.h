// The tuning jobs in flight: one per cache key, each kernel's candidates
// searched round by round (a SearchStrategy) on workers (the Dispatcher),
// and, when every kernel has a winner, the tuned bundle assembled, signed,
// stored (synced, on the writer) and given to every operation waiting. A
// job's request and its reported rounds are in the ledger, so a restarted
// coordinator resumes it: the stored rounds are replayed into the new
// strategies instead of measured again. The owner of its work items, beside
// the shape checks; under its own lock (order: jobs, then operations or
// dispatch; nothing is held while it calls the pool or the writer).

#ifndef TIR_SERVER_TUNING_TUNING_JOBS_H_
#define TIR_SERVER_TUNING_TUNING_JOBS_H_

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "prometheus/counter.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "server/bundles/assembly.h"
#include "server/bundles/signer.h"
#include "server/common/limits.h"
#include "server/common/shape.h"
#include "server/common/work_queue.h"
#include "server/dispatch/dispatcher.h"
#include "server/ledger/ledger.h"
#include "server/operations/operations.h"
#include "server/store/kernel_store.h"
#include "server/tuning/search_strategy.h"
#include "server/tuning/shape_checks.h"
#include "server/tuning/work_items.h"
#include "tir/v1/status.pb.h"

namespace tir::tuning {

// A request's job: what it tunes and for whom.
struct JobSpec {
  bundles::BundleIdentity identity;  // key, fingerprint, arch, policy, signature
  tir::v1::CompileRequest request;   // as persisted (no request id)
  std::string graph_name;
  std::string client;  // who started it (per-client limit)
  int priority = 0;
  int width = 0;       // the request's candidates per kernel (0: configured)
  bool persist = true;  // its record stored, so a restart resumes it
};

// An operation to create for a request: its request id, its metadata, a
// dynamic graph's shape, and its owner (the identity that asked).
struct Waiter {
  std::string request_id;
  std::function<void(tir::v1::Operation &)> describe;
  std::optional<common::Shape> shape;
  std::string owner;
};

class TuningJobs : public dispatch::WorkOwner {
 public:
  struct Parts {
    dispatch::Dispatcher &dispatcher;
    operations::Operations &operations;
    ShapeChecks &checks;
    ledger::Ledger &ledger;
    store::KernelStore &store;
    const bundles::BundleSigner &signer;
    bundles::BinaryBuilder &builder;
    common::WorkPool &pool;
    common::StoreWriter &writer;
    common::LimitCounter &limits;
    prometheus::Registry &registry;
  };
  // `stored` runs on the writer once a tuned bundle is stored (the shapes
  // verified for the bundle it replaced were for other kernels); `trials`
  // with the count of results each report brings.
  TuningJobs(Parts parts, StrategyFactory strategies, common::Limits limits,
             std::function<void(const std::string &key)> stored, std::function<void(int)> trials);

  // A new operation waiting for the job of `key` in flight (not
  // cancelled), its priority raised to `priority`; nullopt when none.
  absl::StatusOr<std::optional<tir::v1::Operation>> Join(const std::string &key, const std::string &arch, int priority,
                                                         const Waiter &waiter) ABSL_LOCKS_EXCLUDED(mu_);
  // The operation for a request whose plan is ready: answered with
  // `untuned` when given (a job still tunes it later, within the limits),
  // else waiting for the job, started when none is in flight. `resume`: a
  // job from the ledger (no limits, nothing persisted again, `rounds`
  // replayed). Errors: LIMIT_EXCEEDED (maxJobs, maxJobsPerClient,
  // maxQueueItems) for a request that would wait, maxOperations.
  absl::StatusOr<tir::v1::Operation> Open(JobSpec spec, std::vector<KernelWork> plan,
                                          std::optional<absl::StatusOr<tir::v1::KernelBundle>> untuned,
                                          const Waiter &waiter, bool resume, ledger::Rounds rounds)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Puts operation `name` from before a restart back on its resumed job;
  // false when no job of `key` is in flight.
  bool Restore(const std::string &name, const std::string &key, const std::string &shape,
               const std::string &owner = "") ABSL_LOCKS_EXCLUDED(mu_);
  // Operation `op` no longer waits for job `key`; the job stops once none does.
  void Cancel(const std::string &op, const std::string &key) ABSL_LOCKS_EXCLUDED(mu_);

  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);
  // Whether a job for `key` is open (tuning, or waiting for a worker).
  bool Tuning(const std::string &key) const ABSL_LOCKS_EXCLUDED(mu_);
  // Candidates measured by workers since the start (the status series).
  uint64_t measured() const { return measured_.load(); }
  // Running and recently finished jobs (newest first), for the status page.
  void Snapshot(std::vector<tir::v1::JobStatus> *running, std::vector<tir::v1::JobStatus> *recent) const
      ABSL_LOCKS_EXCLUDED(mu_);

  void OnResults(dispatch::QueuedWork work, std::vector<tir::v1::CandidateResult> results,
                 const std::string &worker) ABSL_LOCKS_EXCLUDED(mu_) override;
  void OnLeased(const std::string &job) ABSL_LOCKS_EXCLUDED(mu_) override;

 private:
  struct KernelJob {
    KernelWork work;
    std::unique_ptr<SearchStrategy> strategy;
    std::map<int, std::string> hashes;              // position -> SHA-256 of the binary its worker ran
    std::map<int, tir::v1::CandidateResult> best;   // position -> latest passing result
    std::map<int, std::string> workers;             // position -> worker that measured it
    std::map<int, std::set<std::string>> wrong_by;  // position -> workers that reported it WRONG
  };
  struct Job {
    JobSpec spec;
    std::vector<KernelJob> kernels;
    std::vector<std::string> operations;           // waiting for the tuned bundle
    std::map<std::string, common::Shape> shapes;  // a dynamic graph's: each operation's shape
    ledger::Rounds stored_rounds;                  // from before a restart, replayed
    bool cancelled = false;
    bool storing = false;  // the bundle is being written
    int remeasured = 0;    // times measured again from round 0 (BINARY_MISMATCH, UNCONFIRMED_WINNER)
    // Workers whose winner was refused (a binary not the coordinator's build,
    // or one it could not check): they measure none of the job's items again.
    std::set<std::string> excluded;
    // Per kernel, the candidate indices a lone worker reported WRONG (every
    // candidate it measured, failing the kernel) before the job was measured
    // again without it: a winner among them contradicts it.
    std::map<std::pair<int, std::string>, std::set<uint32_t>> wrong_claims;
    uint64_t epoch = 0;    // which opening of the key this is (work items carry it)
    absl::Time start;
  };
  absl::Status Fits(const std::string &client, size_t kernels) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Attaches a new operation to `job`.
  absl::StatusOr<tir::v1::Operation> Attach(Job &job, const Waiter &waiter) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues the kernels' next rounds (replaying stored ones); assembles the
  // bundle once every kernel is done.
  void Advance(const std::string &key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What the worker that measured a kernel's winner says it ran.
  struct Measured {
    std::string worker;
    std::string sha256;
    std::string toolchain;  // the worker's, for the bundle's arch
    bool known = false;     // its worker is registered (its toolchain known)
    std::vector<std::string> options;
  };
  // The bundle without binaries, and per kernel what was measured.
  tir::v1::KernelBundle Assemble(const Job &job, std::vector<Measured> *measured) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Builds every kernel's winner here and checks it against what its worker
  // measured, whatever toolchain that worker names: the same hash, else
  // BINARY_MISMATCH and the worker is distrusted; a worker whose toolchain
  // is not the coordinator's, or that named no hash, cannot be confirmed
  // (UNCONFIRMED_WINNER): its winner is not served. `*blame`: the worker
  // refused. Signs. Outside mu_ (compiles take seconds).
  absl::Status Build(tir::v1::KernelBundle &b, const std::vector<Measured> &measured, std::string *blame)
      ABSL_LOCKS_EXCLUDED(mu_);
  // After a winner's worker was found to have measured another binary
  // (BINARY_MISMATCH, the worker distrusted) or could not be confirmed
  // (UNCONFIRMED_WINNER, the worker excluded from the job): every kernel of
  // `key`'s job measured again from round 0 by the workers left (its rounds
  // forgotten, its operations kept), at most kMaxRemeasures times; false
  // when spent.
  bool Remeasure(const std::string &key, const absl::Status &why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static constexpr int kMaxRemeasures = 2;
  void End(const std::string &key, const absl::StatusOr<tir::v1::KernelBundle> &result)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `replayed`: a round stored before a restart (not stored again, not counted).
  void Record(Job &job, const dispatch::QueuedWork &work, const std::vector<tir::v1::CandidateResult> &results,
              const std::string &worker, bool replayed) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Progress(const Job &job) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  tir::v1::JobStatus StatusOf(const Job &job) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Parts parts_;
  const StrategyFactory strategies_;
  const common::Limits limits_;
  const std::function<void(const std::string &)> stored_;
  const std::function<void(int)> trials_;
  prometheus::Counter &measured_counter_;
  prometheus::Histogram &tune_seconds_, &speedup_;
  std::atomic<uint64_t> measured_{0};
  mutable absl::Mutex mu_;
  std::map<std::string, Job> jobs_ ABSL_GUARDED_BY(mu_);  // by key
  uint64_t epochs_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<tir::v1::JobStatus> recent_ ABSL_GUARDED_BY(mu_);  // newest last
};

}  // namespace tir::tuning

#endif  // TIR_SERVER_TUNING_TUNING_JOBS_H_
