#include "server/api/operation_waits.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"
#include "server/api/rpc_status.h"

namespace tir::api {

// Answered once: by the poller (done, or the wait is over), by a
// cancellation, or at its start (refused, or done already). Finish runs
// after the lock is released, last of all (OnDone may drop the wait).
class OperationWaits::Wait : public grpc::ServerUnaryReactor {
 public:
  Wait(OperationWaits *owner, std::string name, absl::Time end, std::string client, tir::v1::Operation *out)
      : owner_(owner), name_(std::move(name)), end_(end), client_(std::move(client)), out_(out) {}

  // Answers with `s` now, unless it was answered.
  void Answer(const absl::Status &s) ABSL_LOCKS_EXCLUDED(mu_) {
    {
      absl::MutexLock l(&mu_);
      if (answered_) return;
      answered_ = true;
    }
    owner_->done_(s);
    Finish(ToGrpc(s));
  }
  // Answers with the operation when it is done or the wait is over (the
  // operation is read without the lock: reading it may wait for the store).
  void Look(coordinator::Coordinator *c, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_) {
    {
      absl::MutexLock l(&mu_);
      if (answered_) return;
    }
    absl::StatusOr<tir::v1::Operation> op = c->WaitOperation(name_, absl::ZeroDuration());
    if (!op.ok()) {
      Answer(op.status());
      return;
    }
    if (!op->done() && now < end_) return;
    {
      absl::MutexLock l(&mu_);
      if (answered_) return;
      answered_ = true;
      *out_ = *std::move(op);
    }
    owner_->done_(absl::OkStatus());
    Finish(grpc::Status::OK);
  }
  void OnCancel() override { Answer(MakeError(absl::StatusCode::kCancelled, "CANCELLED", "the wait was cancelled")); }
  void OnDone() override { owner_->Remove(this); }  // the last reference may go with it
  const std::string &client() const { return client_; }

 private:
  OperationWaits *const owner_;
  const std::string name_;
  const absl::Time end_;
  const std::string client_;
  tir::v1::Operation *const out_;
  absl::Mutex mu_;
  bool answered_ ABSL_GUARDED_BY(mu_) = false;
};

OperationWaits::OperationWaits(coordinator::Coordinator *c, std::function<void(const absl::Status &)> done)
    : c_(c), done_(std::move(done)), poller_([this] { Poll(); }) {}

OperationWaits::~OperationWaits() { Stop(); }

void OperationWaits::Stop() {
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
  }
  if (poller_.joinable()) poller_.join();
}

size_t OperationWaits::size() const {
  absl::MutexLock l(&mu_);
  return waits_.size();
}

grpc::ServerUnaryReactor *OperationWaits::Start(const std::string &name, absl::Time end, const std::string &client,
                                                tir::v1::Operation *out, absl::Status allowed) {
  auto owned = std::make_shared<Wait>(this, name, end, client, out);
  Wait *w = owned.get();
  {
    absl::MutexLock l(&mu_);
    if (allowed.ok() && waits_.size() >= kMaxWaits) {
      allowed = MakeError(absl::StatusCode::kResourceExhausted, "LIMIT_EXCEEDED",
                          absl::StrCat("maxWaits: ", kMaxWaits, " WaitOperation calls are waiting"));
    }
    if (allowed.ok() && per_client_[client] >= kMaxPerClient) {
      allowed = MakeError(absl::StatusCode::kResourceExhausted, "LIMIT_EXCEEDED",
                          absl::StrCat("maxWaits: this client has ", kMaxPerClient,
                                       " WaitOperation calls waiting; wait for one to end"));
    }
    const bool anonymous = !IsIdentity(client);
    if (allowed.ok() && anonymous && anonymous_ >= kMaxAnonymous) {
      allowed = MakeError(absl::StatusCode::kResourceExhausted, "LIMIT_EXCEEDED",
                          absl::StrCat("maxWaits: callers without a credential of their own have ", kMaxAnonymous,
                                       " WaitOperation calls waiting (the rest is kept for identities)"));
    }
    waits_.emplace(w, std::move(owned));
    ++per_client_[client];
    if (anonymous) ++anonymous_;
  }
  if (!allowed.ok()) {
    w->Answer(allowed);
  } else {
    w->Look(c_, absl::Now());  // done already, or nothing to wait for: answered now
  }
  return w;
}

void OperationWaits::Remove(Wait *w) {
  std::shared_ptr<Wait> last;  // dropped after the lock
  absl::MutexLock l(&mu_);
  auto found = waits_.find(w);
  if (found == waits_.end()) return;
  auto it = per_client_.find(w->client());
  if (it != per_client_.end() && --it->second == 0) per_client_.erase(it);
  if (!IsIdentity(w->client())) --anonymous_;
  last = std::move(found->second);
  waits_.erase(found);
}

void OperationWaits::Poll() {
  for (;;) {
    // References held for the look: a wait answered meanwhile (OnDone)
    // stays alive until the poller lets go of it.
    std::vector<std::shared_ptr<Wait>> now;
    {
      absl::MutexLock l(&mu_);
      if (stopping_) return;
      for (const auto &[raw, w] : waits_) now.push_back(w);
    }
    const absl::Time t = absl::Now();
    for (const std::shared_ptr<Wait> &w : now) w->Look(c_, t);
    now.clear();
    absl::SleepFor(absl::Milliseconds(50));
  }
}

}  // namespace tir::api
