// Work items waiting for a worker and the leases given out: the queue is
// served highest priority first, then oldest, to workers of the item's
// arch; a lease has a random id ("leases/" and 16 hex digits, so a report
// from before a coordinator restart never matches a lease given since), a
// holder and a deadline; a report is accepted once per lease (a repeat is a
// duplicate, remembered for the newest 100,000 leases).
//
// Not thread-safe: the Dispatcher's mutex guards it.

#ifndef TIR_SERVER_DISPATCH_LEASE_QUEUE_H_
#define TIR_SERVER_DISPATCH_LEASE_QUEUE_H_

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "tir/v1/worker_service.pb.h"

namespace tir::dispatch {

class WorkOwner;

// One round of one kernel's tuning, or one kernel's check at a shape.
struct QueuedWork {
  std::string job;  // the job's key or the check's id ("" once it is gone)
  WorkOwner *owner = nullptr;  // told its results (Dispatcher)
  uint64_t epoch = 0;          // the owner's: which opening of `job` queued it
  int kernel = 0;
  int round = 0;
  tir::v1::WorkItem item;
  int priority = 0;
  int attempts = 0;  // leases of it lost so far
  uint64_t seq = 0;  // order of arrival (set by Push)
  absl::Time queued_at;
  // Workers that may not lease it: a second opinion is another worker's
  // (one name per identity, so this excludes the identity).
  std::set<std::string> not_for;
  // Per candidate of `item`: the least time its kernel can take (a passing
  // median below it is a lie, see tuning/time_floor.h); empty where the
  // item's times are not used (a shape check).
  std::vector<double> floor_seconds;
};

struct Lease {
  QueuedWork work;
  std::string worker;
  absl::Time deadline = absl::InfiniteFuture();
};

class LeaseQueue {
 public:
  // Lease ids: "leases/" and 32 hex digits from the CSPRNG.
  LeaseQueue();

  void Push(QueuedWork work);
  // Raises the priority of `job`'s queued items to `priority`.
  void Reprioritize(const std::string &job, int priority);

  // Leases the next item of `arch` that `worker` may take (not in its
  // not_for) until `deadline`: its item gets the lease id, attempt number
  // and deadline. Null when none waits.
  Lease *LeaseNext(const std::string &arch, const std::string &worker, absl::Time deadline);

  enum class Report { kTaken, kDuplicate, kNotHeld, kOtherWorker };
  // A report of lease `id` by `worker`: kTaken moves the lease to `*out`.
  Report TakeReported(const std::string &id, const std::string &worker, Lease *out);
  // The lease `id` while it is held; null otherwise.
  const Lease *Find(const std::string &id) const;

  // Drops `job`'s queued items and leases (a late report for one is a
  // duplicate).
  void DropJob(const std::string &job);
  // Removes and returns leases: those `worker` holds (all, or those named in
  // `ids`), and those past their deadline at `now`.
  std::vector<Lease> TakeHeldBy(const std::string &worker);
  std::vector<Lease> TakeReturned(const std::string &worker, const std::vector<std::string> &ids);
  std::vector<Lease> TakeExpired(absl::Time now);

  // Lease `id` is held by `worker` for a job still running.
  bool Holds(const std::string &id, const std::string &worker) const;
  std::vector<std::string> HeldBy(const std::string &worker) const;
  bool Leased(const std::string &job) const;

  size_t queued() const { return queue_.size(); }
  size_t leased() const { return leases_.size(); }
  std::map<std::string, int> QueuedByArch() const;

 private:
  void MarkReported(const std::string &id);
  uint64_t seq_ = 0;
  std::vector<QueuedWork> queue_;
  std::map<std::string, Lease> leases_;  // by id
  std::set<std::string> reported_;
  std::deque<std::string> reported_order_;  // oldest first
};

}  // namespace tir::dispatch

#endif  // TIR_SERVER_DISPATCH_LEASE_QUEUE_H_
