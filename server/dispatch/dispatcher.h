// Dispatch: the work items queued for workers, the leases given out, the
// worker registry with its heartbeats and quarantine, and the reaper that
// re-queues what lost workers and expired leases held. Under its own lock
// (mu_), which nothing else is held under while it calls out: the owner of
// a work item (a tuning job, a shape check) is told the item's results
// after mu_ is released, so an owner may hold its own lock while it queues
// items here (lock order: owner, then dispatch).
//
// An item whose report has every candidate fault or time out is measured
// again (the device may be to blame) until `max_attempts`; one whose lease
// is lost that many times (worker lost, lease past its deadline) is given
// up: its owner gets every candidate as a fault, from worker "".

#ifndef TIR_SERVER_DISPATCH_DISPATCHER_H_
#define TIR_SERVER_DISPATCH_DISPATCHER_H_

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "server/common/limits.h"
#include "server/dispatch/lease_queue.h"
#include "server/dispatch/worker_registry.h"
#include "tir/v1/compiler_service.pb.h"
#include "tir/v1/status.pb.h"
#include "tir/v1/worker_service.pb.h"

namespace tir::dispatch {

// What queues work items: told the outcome of each, never under a dispatch
// lock.
class WorkOwner {
 public:
  virtual ~WorkOwner() = default;
  // `worker` reported `results` for `work` ("" with every candidate a fault:
  // the item was given up).
  virtual void OnResults(QueuedWork work, std::vector<tir::v1::CandidateResult> results,
                         const std::string &worker) = 0;
  // An item of `job` was leased (its progress may show it).
  virtual void OnLeased(const std::string &job) = 0;
};

// Bounds on what workers may ask for and leave behind.
inline constexpr size_t kMaxWorkers = 1024;        // registered, lost ones included
inline constexpr size_t kMaxWorkerField = 256;     // bytes of each capabilities string
inline constexpr uint32_t kMaxLeaseItems = 16;     // items one LeaseWork takes
inline constexpr int kUnconfirmedToDistrust = 2;   // unconfirmable winners a worker may measure

struct DispatchOptions {
  absl::Duration heartbeat_interval = absl::Seconds(1);
  absl::Duration lost_after = absl::Seconds(5);
  int max_attempts = 3;
  absl::Duration lease_timeout = absl::Minutes(15);
  int quarantine_after = 3;
  absl::Duration quarantine_probe = absl::Minutes(1);
  uint32_t max_queue_items = 100000;
  // LeaseWork calls that wait for work at once (each holds a server thread
  // while it waits); past it a call takes what is queued and answers at
  // once, so long polls never take the threads heartbeats need.
  uint32_t max_lease_waits = 128;
};

// The workers and the queue as the status page shows them.
struct DispatchSnapshot {
  std::vector<tir::v1::WorkerStatus> workers;
  uint32_t queued = 0;
  uint32_t alive = 0;
};

// What the coordinator takes from a worker's result for one candidate: its
// index, verdict (free text bounded as error messages are), measurement,
// compile figures and the SHA-256 of what it ran; nothing else (the fields
// the coordinator fills from its own work item, and unknown fields, where
// a payload could ride into bundles, the ledger and clients, are dropped).
// INVALID_REPORT for a hash longer than 64 bytes, or a passing time that is
// not finite and >= 0 (a failed candidate's time is dropped).
absl::StatusOr<tir::v1::CandidateResult> TakenFromWorker(const tir::v1::CandidateResult &result);

// What is wrong with `results` (in `work`'s item order) for `work`: a
// passing median below its candidate's floor_seconds (no device runs the
// kernel that fast); nullopt when nothing is, or the work has no floors.
std::optional<std::string> BelowFloor(const QueuedWork &work, const std::vector<tir::v1::CandidateResult> &results);

class Dispatcher {
 public:
  Dispatcher(DispatchOptions options, prometheus::Registry &registry, common::LimitCounter &limits);
  ~Dispatcher();
  // The reaper (expired leases, lost workers, worker gauges).
  void Start();
  // Wakes every long poll and stops the reaper.
  void Stop();

  // Worker API.
  // `session`: the metadata the call presented (a known name keeps its
  // entry only with its secret). `identity`: the worker credential the call
  // presented ("" for the shared token or none): such a worker is named
  // "workers/<identity>", one registration per identity (a new one
  // re-queues the leases of the one before), and a distrusted identity is
  // refused (PERMISSION_DENIED, WORKER_DISTRUSTED).
  absl::StatusOr<tir::v1::RegisterWorkerResponse> Register(const tir::v1::RegisterWorkerRequest &request,
                                                           const std::string &session = "",
                                                           const std::string &identity = "");
  // PERMISSION_DENIED unless `session` is known worker `name`'s secret
  // (WORKER_SESSION_MISMATCH) and `identity` the one it registered with
  // (WORKER_IDENTITY_MISMATCH); OK for an unknown name: the call reports it.
  absl::Status CheckSession(const std::string &name, const std::string &session, const std::string &identity = "") const;
  tir::v1::HeartbeatResponse Heartbeat(const tir::v1::HeartbeatRequest &request);
  // Long-polls up to the request's wait (at most 30 s), capped by `deadline`,
  // while fewer than max_lease_waits calls wait (else answers at once).
  absl::StatusOr<tir::v1::LeaseWorkResponse> Lease(const tir::v1::LeaseWorkRequest &request, absl::Time deadline);
  absl::StatusOr<tir::v1::ReportResultResponse> Report(const tir::v1::ReportResultRequest &request);
  tir::v1::DrainResponse Drain(const tir::v1::DrainRequest &request);
  absl::StatusOr<tir::v1::ReturnWorkResponse> Return(const tir::v1::ReturnWorkRequest &request);
  tir::v1::ListWorkersResponse ListWorkers(const std::string &arch) const;
  // `worker`'s word was found false (it measured something other than what
  // it was given, or a second party contradicted its verdict): it takes no
  // more work (its leases are re-queued). `why` is logged and shown.
  void Distrust(const std::string &worker, const std::string &why);
  // A winner `worker` measured cannot be confirmed (its toolchain is not the
  // coordinator's, or it named no hash): it does not win, and after
  // kUnconfirmedToDistrust of them the worker is distrusted.
  void Unconfirmed(const std::string &worker, const std::string &why);

  // Owners' API.
  void Push(QueuedWork work);
  void Reprioritize(const std::string &job, int priority);
  // Drops `job`'s items and leases (a late report is a duplicate).
  void DropJob(const std::string &job);
  bool Leased(const std::string &job) const;
  size_t queued() const;
  // OK when `items` more fit the queue's bound; else LIMIT_EXCEEDED
  // (maxQueueItems) saying what wanted them.
  absl::Status Room(size_t items, const std::string &what) const;
  bool HasHealthy(const std::string &arch) const;
  // Whether another healthy worker of `arch` than those in `besides` exists:
  // a second party that can check their word.
  bool HasHealthyOtherThan(const std::string &arch, const std::set<std::string> &besides) const;
  // The device most healthy workers of `arch` report ("" when none).
  std::string DeviceOf(const std::string &arch) const;
  std::optional<tir::v1::WorkerCapabilities> CapabilitiesOf(const std::string &worker) const;

  // Status: a copy, taken under mu_ briefly (rates since the last call).
  DispatchSnapshot Snapshot(absl::Time now, bool sample);

 private:
  struct Delivery {
    QueuedWork work;
    std::vector<tir::v1::CandidateResult> results;
    std::string worker;
  };
  // Re-queues a lease (counting an attempt or not), or gives it up into
  // `given_up` after max_attempts.
  void Requeue(dispatch::Lease lease, bool count_attempt, std::vector<Delivery> *given_up) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint32_t RequeueReturned(const std::string &worker, const google::protobuf::RepeatedPtrField<std::string> &ids,
                           std::vector<Delivery> *given_up) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Tells the owners, outside mu_.
  static void Deliver(std::vector<Delivery> deliveries) ABSL_LOCKS_EXCLUDED(mu_);
  // Distrust under mu_: the leases it held join `given_up`'s re-queue.
  void DistrustHeld(const std::string &worker, const std::string &why, std::vector<Delivery> *given_up)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void NoteHealth(const std::string &worker, const std::string &job, int kernel,
                  const std::vector<tir::v1::CandidateResult> &results) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gauges and the long polls' wake-up.
  void Touch() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Reap() ABSL_LOCKS_EXCLUDED(mu_);

  const DispatchOptions options_;
  common::LimitCounter &limits_;
  struct Metrics;
  std::unique_ptr<Metrics> metrics_;
  mutable absl::Mutex mu_;
  absl::CondVar changed_;
  LeaseQueue queue_ ABSL_GUARDED_BY(mu_);
  WorkerRegistry workers_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> gauge_arches_ ABSL_GUARDED_BY(mu_);  // every arch the queue gauge has shown
  absl::Time last_sample_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint32_t lease_waits_ ABSL_GUARDED_BY(mu_) = 0;  // LeaseWork calls waiting now
  std::thread reaper_;
};

}  // namespace tir::dispatch

#endif  // TIR_SERVER_DISPATCH_DISPATCHER_H_
