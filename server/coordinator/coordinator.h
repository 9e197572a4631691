// The coordinator: its parts wired together, and the compile request's path
// through them. Each part has one job, its own lock where it keeps state,
// and its own tests:
//  - frontend/    RequestKeyer: a request's key from its graph, parsed once;
//                 the cost models planning ranks with;
//  - bundles/     where served bundles come from (store, sized for a shape,
//                 signed), and the untuned defaults compiled here;
//  - tuning/      the tuning jobs (a SearchStrategy per kernel) and the shape
//                 checks: the two owners of work items;
//  - dispatch/    work items, leases, workers, the reaper and quarantine;
//  - operations/  operations and their waits;
//  - ledger/      the typed records a restart resumes from;
//  - status/      the status page, built from each part's snapshot;
//  - api/         the gRPC services over this class.
// Lock order: tuning jobs or shape checks, then operations or dispatch; no
// lock is held across RocksDB I/O, planning, emission or a status render
// (planning and default compiles run on the planning pool, store writes on
// the writer).
//
// A compile request:
//  1. parse and verify the graph, fingerprint it, derive the cache key
//     (fingerprint, arch, codegen version, NVRTC version, tuning policy);
//  2. a stored bundle under the key answers at once (cache hit); a dynamic
//     graph's bundle is served at a shape of its bucket once verified there
//     (the first request for a shape queues a check per kernel);
//  3. else an identical job in flight takes the request (one tuning for all);
//  4. else plan the graph, persist the job (so a restart resumes it), and
//     tune every kernel on workers of the arch; when every kernel has a
//     winner the bundle is signed, stored and every operation waiting on the
//     job completes with it.
// Without a worker of the arch (or in heuristic-now mode) the request is
// answered at once with the default candidates compiled here, marked
// untuned, while the job waits for a worker.

#ifndef TIR_SERVER_COORDINATOR_COORDINATOR_H_
#define TIR_SERVER_COORDINATOR_COORDINATOR_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "prometheus/counter.h"
#include "prometheus/registry.h"
#include "server/bundles/assembly.h"
#include "server/bundles/kernel_admin.h"
#include "server/bundles/shape_sizer.h"
#include "server/bundles/shape_source.h"
#include "server/bundles/signer.h"
#include "server/bundles/signing_source.h"
#include "server/bundles/store_source.h"
#include "server/common/limits.h"
#include "server/common/work_queue.h"
#include "server/dispatch/dispatcher.h"
#include "server/frontend/request_keyer.h"
#include "server/ledger/ledger.h"
#include "server/operations/operations.h"
#include "server/status/status_board.h"
#include "server/store/kernel_store.h"
#include "server/tuning/shape_checks.h"
#include "server/tuning/successive_halving.h"
#include "server/tuning/tuning_jobs.h"
#include "server/upstream/read_through.h"
#include "server/upstream/upstream.h"
#include "tir/v1/compiler_service.grpc.pb.h"
#include "tir/v1/status.pb.h"
#include "tir/v1/worker_service.grpc.pb.h"

namespace tir::coordinator {

using common::Limits;
using tuning::TunerConfig;

// Longest CompileRequest.request_id taken (LIMIT_EXCEEDED past it).
inline constexpr size_t kMaxRequestIdBytes = 256;

struct CoordinatorOptions {
  // Workers heartbeat this often and count as lost after `lost_after` without one.
  absl::Duration heartbeat_interval = absl::Seconds(1);
  absl::Duration lost_after = absl::Seconds(5);
  // A work item whose lease is lost this many times fails its candidates.
  int max_attempts = 3;
  // A lease not reported by its deadline (this long after it is given) is
  // re-queued and counts as an attempt, heartbeats or not.
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
  // item every `quarantine_probe` (0: never quarantine).
  int quarantine_after = 3;
  absl::Duration quarantine_probe = absl::Minutes(1);
  // LeaseWork calls that may wait for work at once (half the server's
  // threads: the rest answer heartbeats and everything else).
  uint32_t max_lease_waits = 128;
  // How a dynamic graph's sizes fall into buckets ("pow2", "multiple:N", "bound").
  std::string shape_buckets = "pow2";
  // A request answered at once (heuristic-now, or no worker) leaves a job
  // to tune behind the answer; its record (the request, graph included) is
  // stored for a restart to resume only when it has at most
  // `answered_job_record_bytes` and the job records stored stay within
  // `answered_jobs_store_bytes` with it. Past either, the job tunes while
  // this process lives (its operation, answered already, keeps its record:
  // after a restart it answers with the tuned bundle if one was stored, else
  // NOT_FOUND, compile again). Requests that wait for tuning are always
  // stored (the limits on jobs bound them).
  size_t answered_job_record_bytes = size_t{1} << 20;
  size_t answered_jobs_store_bytes = size_t{16} << 20;
  // The tier above this coordinator, asked on a miss (address "" : none;
  // server/upstream/read_through.h).
  upstream::UpstreamOptions upstream;
  // In a sharded fleet, this shard's tag: its operation names carry it
  // ("operations/<tag>-<id>"), so any shard knows where one lives.
  std::string shard_tag;
  // In a sharded fleet, the bundle another shard stores under a key this
  // one misses (shards::Forwarder::FindElsewhere): kept here and served,
  // not tuned again. Null: none.
  std::function<std::optional<tir::v1::KernelBundle>(const std::string &key)> find_elsewhere;
  // Adds the fleet's shards to the status page (null: not sharded).
  std::function<void(tir::v1::ServiceStatus &)> describe_shards;
};

class Coordinator {
 public:
  Coordinator(CoordinatorOptions options, std::shared_ptr<store::KernelStore> store,
              std::shared_ptr<prometheus::Registry> registry);
  ~Coordinator();

  // Resumes the jobs the ledger holds and starts the reaper and the sampler.
  absl::Status Start();
  void Shutdown();

  // Client API. `client` names the caller for the per-client job limit;
  // `owner` is its authenticated identity ("" for the shared client token
  // or an open service): it owns the operation, and is recorded as a
  // requester of the bundle (bundles/kernel_admin.h).
  absl::StatusOr<tir::v1::Operation> Compile(const tir::v1::CompileRequest &request, const std::string &client = "",
                                             const std::string &owner = "");
  // The answer from the cache alone, without parsing or planning: the cached
  // operation of a request seen before whose bundle is stored; nullopt when
  // Compile must answer.
  absl::StatusOr<std::optional<tir::v1::Operation>> CompileIfCached(const tir::v1::CompileRequest &request,
                                                                    const std::string &owner = "");
  // LookupKernel for a request seen before (nullopt: LookupKernel must parse).
  absl::StatusOr<std::optional<tir::v1::LookupKernelResponse>> LookupIfKnown(
      const tir::v1::LookupKernelRequest &request);
  absl::StatusOr<tir::v1::Operation> GetOperation(const std::string &name);
  // Waits until the operation is done, its progress changes past `version`
  // (when >= 0), or `timeout`; `version` is updated.
  absl::StatusOr<tir::v1::Operation> WaitOperation(const std::string &name, absl::Duration timeout,
                                                   int64_t *version = nullptr);
  // Cancelled for its owner (`identity`) or an admin; PERMISSION_DENIED /
  // NOT_OWNER for anyone else.
  absl::StatusOr<tir::v1::Operation> CancelOperation(const std::string &name, const std::string &identity,
                                                     bool admin);
  absl::StatusOr<tir::v1::LookupKernelResponse> LookupKernel(const tir::v1::LookupKernelRequest &request);
  // The cache key of a graph with `options` (parsed unless seen before): what
  // a sharded fleet routes a request by. Errors: the parse's.
  absl::StatusOr<std::string> KeyOf(const tir::v1::GraphSource &graph, const tir::v1::CompileOptions &options);
  // Kernel admin (bundles/kernel_admin.h).
  absl::StatusOr<tir::v1::KernelBundle> GetKernel(const std::string &name, bool metadata_only) {
    return admin_.Get(name, metadata_only);
  }
  absl::StatusOr<tir::v1::ListKernelsResponse> ListKernels(const tir::v1::ListKernelsRequest &request) {
    return admin_.List(request);
  }
  // Deleted for its only requester or an admin (bundles/kernel_admin.h).
  absl::StatusOr<tir::v1::DeleteKernelResponse> DeleteKernel(const std::string &name, const std::string &identity,
                                                             bool admin) {
    return admin_.Delete(name, identity, admin);
  }
  tir::v1::ListWorkersResponse ListWorkers(const std::string &arch) { return dispatcher_.ListWorkers(arch); }

  // Worker API (dispatch/).
  absl::StatusOr<tir::v1::RegisterWorkerResponse> RegisterWorker(const tir::v1::RegisterWorkerRequest &request,
                                                                 const std::string &session = "",
                                                                 const std::string &identity = "") {
    return dispatcher_.Register(request, session, identity);
  }
  absl::Status CheckWorkerSession(const std::string &name, const std::string &session,
                                  const std::string &identity = "") const {
    return dispatcher_.CheckSession(name, session, identity);
  }
  absl::StatusOr<tir::v1::HeartbeatResponse> Heartbeat(const tir::v1::HeartbeatRequest &request) {
    return dispatcher_.Heartbeat(request);
  }
  absl::StatusOr<tir::v1::LeaseWorkResponse> LeaseWork(const tir::v1::LeaseWorkRequest &request, absl::Time deadline) {
    return dispatcher_.Lease(request, deadline);
  }
  absl::StatusOr<tir::v1::ReportResultResponse> ReportResult(const tir::v1::ReportResultRequest &request) {
    return dispatcher_.Report(request);
  }
  absl::StatusOr<tir::v1::DrainResponse> Drain(const tir::v1::DrainRequest &request) {
    return dispatcher_.Drain(request);
  }
  absl::StatusOr<tir::v1::ReturnWorkResponse> ReturnWork(const tir::v1::ReturnWorkRequest &request) {
    return dispatcher_.Return(request);
  }

  // The dashboard's snapshot.
  tir::v1::ServiceStatus Status();
  // Jobs in flight (compiles following the upstream's tuning among them) and
  // items queued (for tests and metrics).
  int jobs_in_flight() const {
    return static_cast<int>(tuning_.size()) + (read_through_ ? static_cast<int>(read_through_->following()) : 0);
  }
  int queue_depth() const { return static_cast<int>(dispatcher_.queued()); }

 private:
  // `resume`: a job from the ledger after a restart (never answered with defaults).
  // `ask_upstream`: false for the local path of a request the upstream did
  // not answer.
  absl::StatusOr<tir::v1::Operation> CompileInternal(const tir::v1::CompileRequest &request, bool resume,
                                                     const std::string &client, const std::string &owner,
                                                     bool ask_upstream = true);
  // The served bundle of `parsed` as a cache-hit operation (counted); nullopt
  // when none is stored, or (setting `unchecked` to the stored bundle) when a
  // dynamic graph's bundle is not verified at the shape yet.
  absl::StatusOr<std::optional<tir::v1::Operation>> CacheHit(const frontend::Parsed &parsed,
                                                             tir::v1::KernelBundle *unchecked);
  // `ask_upstream`: a miss here is looked up there (never on a callback
  // thread: LookupIfKnown leaves such a miss to LookupKernel).
  absl::StatusOr<tir::v1::LookupKernelResponse> LookupByKey(const frontend::Parsed &parsed,
                                                            const tir::v1::LookupKernelRequest &request,
                                                            bool ask_upstream);
  // An operation from before a restart that is not in memory: its job's
  // bundle if one is stored (a dynamic graph's checked at its shape first).
  absl::StatusOr<tir::v1::Operation> RestoredOperation(const std::string &name);
  void CountLookup(bool hit);

  const CoordinatorOptions options_;
  std::shared_ptr<store::KernelStore> store_;
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter> &cache_;
  status::CacheCounts counts_;
  common::LimitCounter limits_;
  ledger::Ledger ledger_;
  bundles::BundleSigner signer_;
  bundles::ShapeSizer sizer_;
  bundles::StoreSource store_source_;
  bundles::ShapeSource shape_source_;
  bundles::SigningSource served_;
  bundles::BinaryBuilder builder_;
  bundles::DefaultBundles defaults_;
  bundles::KernelAdmin admin_;
  frontend::RequestKeyer keyer_;
  frontend::CostModels models_;
  operations::Operations ops_;
  dispatch::Dispatcher dispatcher_;
  tuning::ShapeChecks checks_;
  tuning::TuningJobs tuning_;
  status::StatusBoard status_;
  // The upstream (null without one, or when it could not be set up:
  // `upstream_error`, which Start returns).
  std::unique_ptr<upstream::Upstream> upstream_;
  absl::Status upstream_error_;
  std::unique_ptr<upstream::ReadThrough> read_through_;
  // Notified once Start() has resumed the stored jobs and their operations.
  absl::Notification resumed_;
  // Last: they stop (running what they hold) before the parts above go.
  // The writer outlives the planner: a planning task may post to it.
  common::StoreWriter writer_;
  common::WorkPool planner_;
};

}  // namespace tir::coordinator

#endif  // TIR_SERVER_COORDINATOR_COORDINATOR_H_
