#include "server/api/watch_streams.h"

#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"
#include "server/api/rpc_status.h"

namespace tir::api {
namespace {

// A ByteBuffer over `bytes` without copying them: the slice holds a
// reference that it drops when gRPC is done with it.
grpc::ByteBuffer Shared(const std::shared_ptr<const std::string> &bytes) {
  auto *hold = new std::shared_ptr<const std::string>(bytes);
  grpc::Slice slice(const_cast<char *>(bytes->data()), bytes->size(),
                    [](void *p) { delete static_cast<std::shared_ptr<const std::string> *>(p); }, hold);
  return grpc::ByteBuffer(&slice, 1);
}

}  // namespace

// Under its lock a stream decides; StartWrite and Finish run after the
// lock is released (either may call back at once), Finish last of all (it
// may end the stream, and OnDone drop it, before it returns).
class WatchStreams::Stream : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  // (Nothing of the call's context is kept: it is the stream's only while
  // the stream lives, and the pump may outlive neither.)
  Stream(WatchStreams *owner, grpc::CallbackServerContext * /*ctx*/, std::string name, std::string client)
      : owner_(owner), name_(std::move(name)), client_(std::move(client)) {}

  // Ends the stream with `s` (once; after a write in flight).
  void End(const absl::Status &s) ABSL_LOCKS_EXCLUDED(mu_) {
    std::optional<absl::Status> finish;
    {
      absl::MutexLock l(&mu_);
      finish = Ending(s);
    }
    if (finish) FinishWith(*finish);
  }
  // The pump's look: writes the operation when it changed, ends the stream
  // once the done operation is written or the operation is gone. The
  // operation is read without the stream's lock (reading it may wait for
  // the store); a stream whose client does not read keeps its one write in
  // flight until the client reads or goes away.
  void Look(coordinator::Coordinator *c,
            std::map<std::pair<std::string, int64_t>, std::shared_ptr<const std::string>> &seen) ABSL_LOCKS_EXCLUDED(mu_) {
    int64_t before;
    {
      absl::MutexLock l(&mu_);
      if (ended_ || writing_) return;
      before = version_;
    }
    int64_t version = before;
    absl::StatusOr<tir::v1::Operation> op = c->WaitOperation(name_, absl::ZeroDuration(), &version);
    std::optional<absl::Status> finish;
    bool write = false;
    {
      absl::MutexLock l(&mu_);
      if (ended_ || writing_ || version_ != before) return;  // it moved on meanwhile
      if (!op.ok()) {
        finish = Ending(op.status());
      } else if (version != version_ || version_ < 0 || op->done()) {
        version_ = version;
        std::shared_ptr<const std::string> &bytes = seen[{name_, op->done() ? -2 : version}];
        if (!bytes) bytes = std::make_shared<const std::string>(op->SerializeAsString());
        buffer_ = Shared(bytes);
        writing_ = true;
        sent_done_ = op->done();
        write = true;
      }
    }
    if (write) StartWrite(&buffer_);
    if (finish) FinishWith(*finish);
  }

  void OnWriteDone(bool ok) override ABSL_LOCKS_EXCLUDED(mu_) {
    std::optional<absl::Status> finish;
    {
      absl::MutexLock l(&mu_);
      writing_ = false;
      if (!ok) {
        finish = Ending(MakeError(absl::StatusCode::kCancelled, "CANCELLED", "the client went away"));
      } else if (sent_done_ || pending_) {
        finish = Ending(pending_.value_or(absl::OkStatus()));
      }
    }
    if (finish) FinishWith(*finish);
  }
  void OnCancel() override ABSL_LOCKS_EXCLUDED(mu_) {
    End(MakeError(absl::StatusCode::kCancelled, "CANCELLED", "the stream was cancelled"));
  }
  void OnDone() override { owner_->Remove(this); }  // the last reference may go with it
  const std::string &client() const { return client_; }

 private:
  // What to Finish with now (nullopt: nothing, or after the write in flight).
  std::optional<absl::Status> Ending(const absl::Status &s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (ended_) return std::nullopt;
    if (writing_) {
      if (!pending_) pending_ = s;
      return std::nullopt;
    }
    ended_ = true;
    return s;
  }
  void FinishWith(const absl::Status &s) {
    owner_->done_(s);
    Finish(ToGrpc(s));  // last: the stream may be gone once it returns
  }

  WatchStreams *const owner_;
  const std::string name_, client_;
  absl::Mutex mu_;
  int64_t version_ ABSL_GUARDED_BY(mu_) = -1;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool sent_done_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<absl::Status> pending_ ABSL_GUARDED_BY(mu_);  // an end that waits for the write
  grpc::ByteBuffer buffer_;  // the write in flight (set only while none is)
};

WatchStreams::WatchStreams(coordinator::Coordinator *c, std::function<void(const absl::Status &)> done)
    : c_(c), done_(std::move(done)), pump_([this] { Pump(); }) {}

WatchStreams::~WatchStreams() { Stop(); }

void WatchStreams::Stop() {
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
  }
  if (pump_.joinable()) pump_.join();
}

size_t WatchStreams::size() const {
  absl::MutexLock l(&mu_);
  return streams_.size();
}

grpc::ServerWriteReactor<grpc::ByteBuffer> *WatchStreams::Start(grpc::CallbackServerContext *ctx, const std::string &name,
                                                               const std::string &client, absl::Status allowed) {
  auto owned = std::make_shared<Stream>(this, ctx, name, client);
  Stream *s = owned.get();
  {
    absl::MutexLock l(&mu_);
    if (allowed.ok() && streams_.size() >= kMaxStreams) {
      allowed = MakeError(absl::StatusCode::kResourceExhausted, "LIMIT_EXCEEDED",
                          absl::StrCat("maxWatchStreams: ", kMaxStreams, " WatchOperation streams are open"));
    }
    if (allowed.ok() && per_client_[client] >= kMaxPerClient) {
      allowed = MakeError(absl::StatusCode::kResourceExhausted, "LIMIT_EXCEEDED",
                          absl::StrCat("maxWatchStreams: this client has ", kMaxPerClient,
                                       " WatchOperation streams open; read or close one"));
    }
    const bool anonymous = !IsIdentity(client);
    if (allowed.ok() && anonymous && anonymous_ >= kMaxAnonymous) {
      allowed = MakeError(absl::StatusCode::kResourceExhausted, "LIMIT_EXCEEDED",
                          absl::StrCat("maxWatchStreams: callers without a credential of their own have ", kMaxAnonymous,
                                       " WatchOperation streams open (the rest is kept for identities)"));
    }
    streams_.emplace(s, std::move(owned));
    ++per_client_[client];
    if (anonymous) ++anonymous_;
  }
  if (!allowed.ok()) s->End(allowed);
  return s;
}

void WatchStreams::Remove(Stream *s) {
  std::shared_ptr<Stream> last;  // dropped after the lock
  absl::MutexLock l(&mu_);
  auto found = streams_.find(s);
  if (found == streams_.end()) return;
  auto it = per_client_.find(s->client());
  if (it != per_client_.end() && --it->second == 0) per_client_.erase(it);
  if (!IsIdentity(s->client())) --anonymous_;
  last = std::move(found->second);
  streams_.erase(found);
}

void WatchStreams::Pump() {
  for (;;) {
    // References held for the look: a stream that ends meanwhile (OnDone)
    // stays alive until the pump lets go of it.
    std::vector<std::shared_ptr<Stream>> now;
    {
      absl::MutexLock l(&mu_);
      if (stopping_) return;
      for (const auto &[raw, s] : streams_) now.push_back(s);
    }
    std::map<std::pair<std::string, int64_t>, std::shared_ptr<const std::string>> seen;
    for (const std::shared_ptr<Stream> &s : now) s->Look(c_, seen);
    now.clear();
    absl::SleepFor(absl::Milliseconds(100));
  }
}

}  // namespace tir::api
