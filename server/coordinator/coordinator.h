// The coordinator's logic, without the RPC layer: compile requests, the
// kernel cache and tuning jobs (here), over its parts, each with one job and
// its own test:
//  - OperationTable (operation_table.h): operations, their names and ids;
//  - LeaseQueue (lease_queue.h): queued work items and leases;
//  - WorkerRegistry (worker_registry.h): workers, heartbeats, quarantine;
//  - KernelTuner (kernel_tuner.h): the rounds of one kernel's tuning;
//  - StoreWriter and WorkPool (work_queue.h): every RocksDB write runs on
//    the writer outside mu_; planning, emission and default compiles on a
//    bounded pool, not on gRPC's threads.
// mu_ guards the tables; no RocksDB I/O and no planning happens under it.
//
// Algorithm of a compile request:
//  1. parse and verify the graph, fingerprint it, derive the cache key
//     (fingerprint, arch, codegen version, NVRTC version, tuning policy);
//  2. a stored bundle under the key answers at once (cache hit);
//  3. else an identical job in flight takes the request (one tuning for all);
//  4. else plan the graph, persist the job (so a restart resumes it), and
//     queue round 0 of every kernel's tuning (KernelTuner) for workers of the
//     arch; each reported round queues the next;
//  5. when every kernel has a winner, the bundle is signed and stored
//     (synced, by the writer) and every operation waiting on the job
//     completes with it.
// Without a worker of the arch (or in heuristic-now mode) the request is
// answered at once with the default candidates compiled here, marked
// untuned, while the job waits for a worker.
//
// A graph with dynamic dims (`?` extents, index inputs) is compiled for the
// shape its request's hints give (reference/DynamicShapes.h): the key holds
// the shape's bucket, not the sizes, and the bundle is tuned at the
// bucket's representative shape (its upper ends) with dynamic kernels. It
// serves every shape of the bucket, but only once its kernels have been
// verified at that exact shape: the first request for a shape queues one
// check per kernel (the chosen candidate, verified on a worker, no timing);
// when all pass, the record is stored ("shape/<key>/<shape>") and the
// request is answered with the bundle sized for the shape; later requests
// for it are cache hits. A kernel wrong at the shape fails the request
// (WRONG_AT_SHAPE) and the record keeps the refusal.

#ifndef TIR_SERVER_COORDINATOR_COORDINATOR_H_
#define TIR_SERVER_COORDINATOR_COORDINATOR_H_

#include <atomic>
#include <deque>
#include <map>
#include <random>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "compiler/nvrtc/compile_cache.h"
#include "compiler/planning/Calibration.h"
#include "compiler/reference/DynamicShapes.h"
#include "prometheus/counter.h"
#include "prometheus/registry.h"
#include "server/coordinator/kernel_tuner.h"
#include "server/coordinator/lease_queue.h"
#include "server/coordinator/operation_table.h"
#include "server/coordinator/shape_records.h"
#include "server/coordinator/work_queue.h"
#include "server/coordinator/worker_registry.h"
#include "server/store/kernel_store.h"
#include "server/tuning/work_items.h"
#include "tir/v1/compiler_service.grpc.pb.h"
#include "tir/v1/status.pb.h"
#include "tir/v1/worker_service.grpc.pb.h"

namespace tir::coordinator {

// Caps on what requests may ask of a coordinator; past one a request is
// refused with RESOURCE_EXHAUSTED, reason LIMIT_EXCEEDED, naming the limit.
struct Limits {
  uint32_t max_ops_per_graph = 20000;
  uint32_t max_jobs = 256;             // tuning jobs in flight
  uint32_t max_jobs_per_client = 32;   // of them started by one client
  uint32_t max_queue_items = 100000;   // work items queued for workers
  uint32_t max_operations = 100000;    // operations kept in memory
  uint32_t max_planning_queue = 256;   // requests waiting for the planning pool
};

struct CoordinatorOptions {
  // Workers heartbeat this often and count as lost after `lost_after` without one.
  absl::Duration heartbeat_interval = absl::Seconds(1);
  absl::Duration lost_after = absl::Seconds(5);
  // A work item whose lease is lost this many times fails its candidates.
  int max_attempts = 3;
  // A lease not reported by its deadline (this long after it is given) is
  // re-queued and counts as an attempt, heartbeats or not: a lost reply or a
  // compile that never ends does not hold a job forever.
  absl::Duration lease_timeout = absl::Minutes(15);
  TunerConfig tuner;
  // Without a worker of the arch: answer with the default candidates
  // compiled here (true) or fail with NO_WORKER_FOR_ARCH (false).
  bool default_without_worker = true;
  // Where the coordinator builds default candidates (host objects, cubins).
  std::string work_dir = "/tmp/tir-coordinator";
  Limits limits;
  // Threads planning, emitting and compiling defaults (0: one per core).
  int planning_threads = 0;
  // Signs every bundle served (HMAC-SHA256) when not empty.
  std::string bundle_key;
  // A worker whose reports have every candidate fault or time out on this
  // many different kernels in a row is quarantined: it is leased one probe
  // item every `quarantine_probe`, and a probe with a passing candidate lets
  // it back (0: never quarantine).
  int quarantine_after = 3;
  absl::Duration quarantine_probe = absl::Minutes(1);
  // How a dynamic graph's sizes fall into buckets (reference::BucketPolicy:
  // "pow2", "multiple:N", "bound").
  std::string shape_buckets = "pow2";
};

class Coordinator {
 public:
  Coordinator(CoordinatorOptions options, std::shared_ptr<store::KernelStore> store,
              std::shared_ptr<prometheus::Registry> registry);
  ~Coordinator();

  // Resumes the jobs the store holds and starts the lease reaper.
  absl::Status Start();
  void Shutdown();

  // Client API.
  // `client` names the caller for the per-client job limit.
  absl::StatusOr<tir::v1::Operation> Compile(const tir::v1::CompileRequest &request, const std::string &client = "");
  // The answer to a compile request from the cache alone, without parsing,
  // planning or mu_: the cached operation of a request seen before whose
  // bundle is stored; nullopt when Compile must answer (a request not seen
  // yet, no bundle, force_retune, a bad arch).
  absl::StatusOr<std::optional<tir::v1::Operation>> CompileIfCached(const tir::v1::CompileRequest &request);
  // LookupKernel for a request seen before (nullopt: LookupKernel must parse).
  absl::StatusOr<std::optional<tir::v1::LookupKernelResponse>> LookupIfKnown(
      const tir::v1::LookupKernelRequest &request);
  absl::StatusOr<tir::v1::Operation> GetOperation(const std::string &name);
  // Waits until the operation is done, its progress changes past `version`
  // (when >= 0), or `timeout`; `version` is updated.
  absl::StatusOr<tir::v1::Operation> WaitOperation(const std::string &name, absl::Duration timeout,
                                                   int64_t *version = nullptr);
  absl::StatusOr<tir::v1::Operation> CancelOperation(const std::string &name);
  absl::StatusOr<tir::v1::LookupKernelResponse> LookupKernel(const tir::v1::LookupKernelRequest &request);
  absl::StatusOr<tir::v1::KernelBundle> GetKernel(const std::string &name, bool metadata_only);
  absl::StatusOr<tir::v1::ListKernelsResponse> ListKernels(const tir::v1::ListKernelsRequest &request);
  absl::StatusOr<tir::v1::DeleteKernelResponse> DeleteKernel(const std::string &name);
  tir::v1::ListWorkersResponse ListWorkers(const std::string &arch);

  // Worker API.
  absl::StatusOr<tir::v1::RegisterWorkerResponse> RegisterWorker(const tir::v1::RegisterWorkerRequest &request);
  absl::StatusOr<tir::v1::HeartbeatResponse> Heartbeat(const tir::v1::HeartbeatRequest &request);
  // Long-polls up to the request's wait (capped by `deadline`).
  absl::StatusOr<tir::v1::LeaseWorkResponse> LeaseWork(const tir::v1::LeaseWorkRequest &request, absl::Time deadline);
  absl::StatusOr<tir::v1::ReportResultResponse> ReportResult(const tir::v1::ReportResultRequest &request);
  absl::StatusOr<tir::v1::DrainResponse> Drain(const tir::v1::DrainRequest &request);
  // Re-queues leases a worker gives back unfinished (without counting an
  // attempt); the worker stays registered.
  absl::StatusOr<tir::v1::ReturnWorkResponse> ReturnWork(const tir::v1::ReturnWorkRequest &request);

  // A snapshot for the dashboard: workers, running and recent jobs, cache
  // counts and the sampled series.
  tir::v1::ServiceStatus Status();

  // Jobs in flight and items queued (for tests and metrics).
  int jobs_in_flight() const;
  int queue_depth() const;

  // A shape asked of a dynamic graph: the hints of every input, and their
  // canonical text (reference::FormatShapes).
  struct Shape {
    std::vector<tir::v1::ShapeHint> hints;
    std::string text;
  };

 private:
  struct Metrics;
  struct KernelJob {
    tuning::KernelWork work;
    std::unique_ptr<KernelTuner> tuner;
    std::map<int, std::string> binaries;            // position -> latest passing binary
    std::map<int, tir::v1::CandidateResult> best;   // position -> latest passing result
    std::map<int, std::string> workers;             // position -> worker that measured it
  };
  struct Job {
    std::string key;
    tir::v1::CompileRequest request;
    std::string fingerprint;
    std::string arch;
    std::string graph_name;
    std::string policy;  // the tuning policy in the key
    tir::v1::KernelBundle signature;
    std::vector<KernelJob> kernels;
    std::vector<std::string> operations;  // waiting for the tuned bundle
    std::map<std::string, Shape> op_shapes;  // a dynamic graph's: each operation's shape
    std::string client;                   // who started it (per-client limit)
    // Rounds stored before a restart, by (kernel, round): replayed into the
    // tuners instead of measured again.
    std::map<std::pair<int, int>, tir::v1::ReportResultRequest> stored_rounds;
    int priority = 0;
    bool cancelled = false;
    bool storing = false;  // the bundle is being written (StoreWriter)
    absl::Time start;
  };
  // Persists operation `name` as waiting for job `key`.
  void PersistOperation(const std::string &name, const std::string &key, const std::string &shape = "")
      ABSL_LOCKS_EXCLUDED(mu_);
  // An operation from before a restart that is not in memory: its job's
  // bundle if one is stored; NOT_FOUND otherwise.
  absl::StatusOr<tir::v1::Operation> RestoredOperation(const std::string &name);
  struct Parsed {
    std::string key;
    std::string fingerprint;
    std::string policy;
    std::string graph_name;
    // Inputs, outputs and intermediates (filled when planned); for a
    // dynamic graph also its bucket (buckets, bucket_policy, shape_bucket,
    // tuned_shape).
    tir::v1::KernelBundle signature;
    // A dynamic graph: the shape asked, and the shapes tuned at (per graph
    // argument, for planning).
    bool dynamic = false;
    Shape shape;
    std::vector<std::vector<int64_t>> tuned_args;
    std::string bucket_text;
    // What the request asked that was ignored.
    std::vector<std::string> notes;
  };
  // A dynamic bundle being verified at one shape: one work item per kernel.
  struct ShapeCheck {
    std::string id;  // "check/<key>/<shape>", the QueuedWork's job
    std::string key;
    Shape shape;
    tir::v1::KernelBundle sized;  // the bundle at the shape (unsigned)
    std::vector<std::optional<tir::v1::Verification>> results;
    std::string worker;
    std::vector<std::string> operations;
    absl::Time start;
  };

  // `resume`: a persisted job after a restart (never answered with defaults).
  absl::StatusOr<tir::v1::Operation> CompileInternal(const tir::v1::CompileRequest &request, bool resume,
                                                     const std::string &client);
  absl::StatusOr<Parsed> KeyOf(const tir::v1::GraphSource &source, const tir::v1::CompileOptions &options,
                               const std::string &arch, std::vector<tuning::KernelWork> *plan)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The stored bundle of `parsed.key` as a cache-hit operation (counted),
  // for a dynamic graph sized for its shape; nullopt when none is stored,
  // or (setting `unchecked` to the stored bundle) when a dynamic graph's
  // bundle is not verified at the shape yet. Errors: WRONG_AT_SHAPE when
  // the record says a kernel is wrong there.
  absl::StatusOr<std::optional<tir::v1::Operation>> CacheHit(const Parsed &parsed,
                                                             tir::v1::KernelBundle *unchecked = nullptr);
  // The verified, sized, signed bundle `stored` serves for `shape`; nullopt
  // when the shape is not verified. Errors: WRONG_AT_SHAPE, store errors.
  absl::StatusOr<std::optional<tir::v1::KernelBundle>> ServedAtShape(const tir::v1::KernelBundle &stored,
                                                                     const Shape &shape);
  // LookupKernel's answer for `parsed` (hit or miss, counted).
  absl::StatusOr<tir::v1::LookupKernelResponse> LookupByKey(const Parsed &parsed);
  // Queues the check of `stored` at `shape` (or joins one in flight) for
  // operations `ops`; sizing runs on the planning pool.
  void CheckShape(const tir::v1::KernelBundle &stored, const Shape &shape, std::vector<std::string> ops,
                  int priority) ABSL_LOCKS_EXCLUDED(mu_);
  void RecordCheck(const QueuedWork &work, const std::vector<tir::v1::CandidateResult> &results,
                   const std::string &worker) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Every kernel of the check has its verdict: the record, the answers.
  void CompleteCheck(std::map<std::string, ShapeCheck>::iterator check) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Answers `ops` with `stored` sized for `shape`, checking it there first
  // when it is not verified yet.
  void AnswerAtShape(const tir::v1::KernelBundle &stored, const Shape &shape, std::vector<std::string> ops, int priority)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Drops the persisted records of operations that ended for good.
  void ForgetOperations(const std::vector<std::string> &ops);
  void UpdateCheckProgress(const ShapeCheck &check) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops the shape records of `key` (memory and store): a new bundle.
  void ForgetShapes(const std::string &key) ABSL_LOCKS_EXCLUDED(mu_);
  // The served copy of a sized bundle: served_shape set, signed.
  tir::v1::KernelBundle ServedCopy(tir::v1::KernelBundle sized, const tir::v1::ShapeVerification &record) const;
  // Sets an operation's shape metadata (a dynamic graph's shape, bucket, notes).
  static void DescribeShape(tir::v1::Operation &op, const Parsed &parsed);
  // The hash of a request's bytes that parsed_ maps to its key.
  static std::string RawKey(const tir::v1::GraphSource &source, const tir::v1::CompileOptions &options,
                            const std::string &arch);
  std::shared_ptr<const Parsed> Known(const tir::v1::GraphSource &source, const tir::v1::CompileOptions &options,
                                      const std::string &arch);
  // Errors: LIMIT_EXCEEDED when max_operations are kept and none is done.
  absl::StatusOr<std::string> NewOperation(const std::string &arch, const std::string &key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // OK when a new job of `kernels` kernels for `client` fits the limits.
  absl::Status CheckJobLimits(const std::string &client, size_t kernels) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Signs `bundle` when a bundle key is configured (Served: unless it is
  // signed with the key already).
  void Sign(tir::v1::KernelBundle &bundle) const;
  void Served(tir::v1::KernelBundle &bundle) const;
  // After `worker` reported `results` for kernel `kernel` of `job`: its
  // quarantine starts, goes on or ends.
  void NoteHealth(const std::string &worker, const std::string &job, int kernel,
                  const std::vector<tir::v1::CandidateResult> &results) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FinishOperation(const std::string &name, const absl::StatusOr<tir::v1::KernelBundle> &result)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StartJob(const std::string &key, const tir::v1::CompileRequest &request, const Parsed &parsed,
                std::vector<tuning::KernelWork> plan,
                std::map<std::pair<int, int>, tir::v1::ReportResultRequest> stored_rounds, const std::string &client)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Advance(const std::string &job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EndJob(const std::string &job, const absl::StatusOr<tir::v1::KernelBundle> &result)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `replayed`: a round stored before a restart (not stored again, not
  // counted in the metrics).
  void RecordRound(QueuedWork &work, const std::vector<tir::v1::CandidateResult> &results, const std::string &worker,
                   bool replayed = false) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Requeue(Lease lease, bool count_attempt) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Re-queues the leases `ids` that `worker` holds and gives back unfinished
  // (no attempt counted); returns how many.
  uint32_t RequeueReturned(const std::string &worker, const google::protobuf::RepeatedPtrField<std::string> &ids)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<tir::v1::KernelBundle> DefaultBundle(const std::string &key, const Parsed &parsed,
                                                      const std::string &arch,
                                                      const std::vector<tuning::KernelWork> &plan);
  bool HasLiveWorker(const std::string &arch) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UpdateProgress(const std::string &job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Reap();
  // A done operation for a cache hit, named "operations/cached.{key}".
  static tir::v1::Operation CachedOperation(tir::v1::KernelBundle bundle);
  void Touch() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  tir::v1::JobStatus JobStatusOf(const Job &job) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Appends a series sample (rates since the previous one).
  void Sample(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  CoordinatorOptions options_;
  std::shared_ptr<store::KernelStore> store_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Metrics> metrics_;
  nvrtc::CompileCache compile_cache_;
  const std::string bundle_key_id_;

  mutable absl::Mutex mu_;
  absl::CondVar changed_;
  std::map<std::string, Job> jobs_ ABSL_GUARDED_BY(mu_);              // by key
  LeaseQueue lq_ ABSL_GUARDED_BY(mu_);
  WorkerRegistry workers_ ABSL_GUARDED_BY(mu_);
  OperationTable ops_ ABSL_GUARDED_BY(mu_);
  // Each operation attached to a job is persisted ("op/<name>" -> key).
  absl::Time last_prune_ ABSL_GUARDED_BY(mu_);
  // Dashboard state: finished jobs (newest last) and the sampled series.
  std::deque<tir::v1::JobStatus> recent_ ABSL_GUARDED_BY(mu_);
  std::deque<tir::v1::StatusSample> series_ ABSL_GUARDED_BY(mu_);
  absl::Time last_sample_ ABSL_GUARDED_BY(mu_);
  uint64_t sampled_requests_ ABSL_GUARDED_BY(mu_) = 0, sampled_hits_ ABSL_GUARDED_BY(mu_) = 0,
           sampled_misses_ ABSL_GUARDED_BY(mu_) = 0, sampled_measured_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t measured_total_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> requests_{0}, hits_{0}, misses_{0};
  uint64_t stored_kernels_ ABSL_GUARDED_BY(mu_) = 0, stored_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Mutex parsed_mu_;
  std::map<std::string, std::shared_ptr<const Parsed>> parsed_ ABSL_GUARDED_BY(parsed_mu_);  // request hash -> key
  reference::BucketPolicy bucket_policy_;
  ShapeRecords shape_records_;
  std::map<std::string, ShapeCheck> checks_ ABSL_GUARDED_BY(mu_);  // by id
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // The cost model's corrections fit from the trial ledger: at start, then
  // again after every 32 stored trials.
  void Refit();
  absl::Mutex calibration_mu_;
  std::shared_ptr<const planning::Calibration> calibration_ ABSL_GUARDED_BY(calibration_mu_);
  std::atomic<int> trials_since_fit_{0};
  std::atomic<bool> refit_due_{false};
  std::thread reaper_;
  // Notified once Start() has resumed the stored jobs and their operations.
  absl::Notification resumed_;
  // Last: they stop (running what they hold) before the state above goes.
  WorkPool planner_;
  StoreWriter writer_;
};

// The tuning policy string folded into cache keys.
std::string TuningPolicy(const TunerConfig &config);

}  // namespace tir::coordinator

#endif  // TIR_SERVER_COORDINATOR_COORDINATOR_H_
