#include "server/dispatch/lease_queue.h"

#include "compiler/support/digest.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "google/protobuf/util/time_util.h"

namespace tir::dispatch {

using google::protobuf::util::TimeUtil;

LeaseQueue::LeaseQueue() = default;

void LeaseQueue::Push(QueuedWork work) {
  work.seq = ++seq_;
  work.item.clear_lease_id();
  queue_.push_back(std::move(work));
}

void LeaseQueue::Reprioritize(const std::string &job, int priority) {
  for (QueuedWork &q : queue_) {
    if (q.job == job) q.priority = std::max(q.priority, priority);
  }
}

Lease *LeaseQueue::LeaseNext(const std::string &arch, const std::string &worker, absl::Time deadline) {
  auto best = queue_.end();
  for (auto q = queue_.begin(); q != queue_.end(); ++q) {
    if (q->item.arch() != arch || q->not_for.count(worker)) continue;
    if (best == queue_.end() || q->priority > best->priority || (q->priority == best->priority && q->seq < best->seq)) {
      best = q;
    }
  }
  if (best == queue_.end()) return nullptr;
  Lease lease{std::move(*best), worker, deadline};
  queue_.erase(best);
  std::string id;
  do {
    id = "leases/" + RandomHex(16);
  } while (leases_.count(id) || reported_.count(id));
  lease.work.item.set_lease_id(id);
  lease.work.item.set_attempt(lease.work.attempts + 1);
  *lease.work.item.mutable_deadline() = TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(deadline));
  return &(leases_[id] = std::move(lease));
}

LeaseQueue::Report LeaseQueue::TakeReported(const std::string &id, const std::string &worker, Lease *out) {
  auto it = leases_.find(id);
  if (it == leases_.end()) return reported_.count(id) ? Report::kDuplicate : Report::kNotHeld;
  if (it->second.worker != worker) return Report::kOtherWorker;
  *out = std::move(it->second);
  leases_.erase(it);
  MarkReported(id);
  return Report::kTaken;
}

const Lease *LeaseQueue::Find(const std::string &id) const {
  auto it = leases_.find(id);
  return it == leases_.end() ? nullptr : &it->second;
}

void LeaseQueue::DropJob(const std::string &job) {
  queue_.erase(std::remove_if(queue_.begin(), queue_.end(), [&](const QueuedWork &q) { return q.job == job; }),
               queue_.end());
  for (auto l = leases_.begin(); l != leases_.end();) {
    if (l->second.work.job == job) {
      MarkReported(l->first);
      l = leases_.erase(l);
    } else {
      ++l;
    }
  }
}

std::vector<Lease> LeaseQueue::TakeHeldBy(const std::string &worker) {
  std::vector<Lease> out;
  for (auto it = leases_.begin(); it != leases_.end();) {
    if (it->second.worker == worker) {
      out.push_back(std::move(it->second));
      it = leases_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

std::vector<Lease> LeaseQueue::TakeReturned(const std::string &worker, const std::vector<std::string> &ids) {
  std::vector<Lease> out;
  for (const std::string &id : ids) {
    auto it = leases_.find(id);
    if (it == leases_.end() || it->second.worker != worker) continue;
    out.push_back(std::move(it->second));
    leases_.erase(it);
  }
  return out;
}

std::vector<Lease> LeaseQueue::TakeExpired(absl::Time now) {
  std::vector<Lease> out;
  for (auto it = leases_.begin(); it != leases_.end();) {
    if (now > it->second.deadline) {
      out.push_back(std::move(it->second));
      it = leases_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

bool LeaseQueue::Holds(const std::string &id, const std::string &worker) const {
  auto it = leases_.find(id);
  return it != leases_.end() && it->second.worker == worker && !it->second.work.job.empty();
}

std::vector<std::string> LeaseQueue::HeldBy(const std::string &worker) const {
  std::vector<std::string> ids;
  for (const auto &[id, lease] : leases_) {
    if (lease.worker == worker) ids.push_back(id);
  }
  return ids;
}

bool LeaseQueue::Leased(const std::string &job) const {
  return std::any_of(leases_.begin(), leases_.end(), [&](const auto &l) { return l.second.work.job == job; });
}

std::map<std::string, int> LeaseQueue::QueuedByArch() const {
  std::map<std::string, int> out;
  for (const QueuedWork &q : queue_) ++out[q.item.arch()];
  return out;
}

void LeaseQueue::MarkReported(const std::string &id) {
  if (reported_.insert(id).second) reported_order_.push_back(id);
  while (reported_order_.size() > 100000) {
    reported_.erase(reported_order_.front());
    reported_order_.pop_front();
  }
}

}  // namespace tir::dispatch
