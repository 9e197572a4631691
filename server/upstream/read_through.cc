#include "server/upstream/read_through.h"

#include <cstdio>
#include <map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"

namespace tir::upstream {

struct ReadThrough::Follow {
  std::string id;  // "key@shape"
  std::string upstream_name;
  tir::v1::CompileRequest request;
  Miss miss;
  std::vector<std::string> names;  // guarded by ReadThrough::mu_
  bool ended = false;              // guarded by ReadThrough::mu_
};

namespace {

void SetTier(tir::v1::Operation &op, const std::string &tier, const std::string &note) {
  op.mutable_metadata()->set_tier(tier);
  if (!note.empty()) op.mutable_metadata()->add_notes(note);
}

// For a dynamic graph: the upstream's answer is sized for the shape asked
// (each input's shape as the request gave it).
bool SizedFor(const tir::v1::KernelBundle &b, const tir::v1::CompileRequest &request) {
  if (!b.has_served_shape()) return false;
  std::map<uint32_t, std::vector<int64_t>> asked, served;
  for (const tir::v1::ShapeHint &h : request.options().shape_hints()) asked[h.input()] = {h.shape().begin(), h.shape().end()};
  for (const tir::v1::ShapeHint &h : b.served_shape().shape()) served[h.input()] = {h.shape().begin(), h.shape().end()};
  return asked == served;
}

absl::Status ErrorOf(const tir::v1::Operation &op) {
  return MakeError(static_cast<absl::StatusCode>(op.error().code()), op.error().reason(), op.error().message());
}

}  // namespace

ReadThrough::ReadThrough(Parts parts, absl::Duration give_up_after)
    : parts_(std::move(parts)), give_up_after_(give_up_after) {}

ReadThrough::~ReadThrough() { Stop(); }

uint32_t ReadThrough::following() const {
  absl::MutexLock l(&mu_);
  return static_cast<uint32_t>(follows_.size());
}

void ReadThrough::Stop() {
  absl::MutexLock l(&mu_);
  stopping_ = true;
  // Each follow notices within one poll of the upstream (2 s) or of a
  // local operation (2 s); a fallback's local compile is bounded by the
  // planning budget. They use the coordinator's parts: none may outlive it.
  mu_.Await(absl::Condition(+[](int *n) { return *n == 0; }, &threads_));
}

tir::v1::KernelBundle ReadThrough::Served(tir::v1::KernelBundle bundle) const {
  bundle.clear_signature();
  parts_.signer.Sign(bundle);
  return bundle;
}

void ReadThrough::Keep(const tir::v1::KernelBundle &bundle, const Miss &miss) {
  tir::v1::KernelBundle kept;
  if (miss.shape.empty()) {
    kept = bundle;
  } else {
    // The answer is sized for one shape; the bucket's bundle is what serves
    // the others.
    absl::StatusOr<tir::v1::KernelBundle> bucket = parts_.upstream.Kernel(miss.key);
    if (!bucket.ok() || bucket->has_served_shape() || !bucket->tuning().tuned() ||
        !parts_.upstream.Check(*bucket, miss.key, miss.arch).ok()) {
      std::fprintf(stderr, "tir-coordinator: the upstream's bucket bundle of %s is not kept here: %s\n",
                   miss.key.substr(0, 16).c_str(),
                   bucket.ok() ? "it is not a bucket's bundle or failed its checks"
                               : std::string(bucket.status().message()).c_str());
      return;
    }
    kept = *std::move(bucket);
  }
  kept = Served(std::move(kept));
  IgnoreError(parts_.store.PutKernel(kept), "the upstream's bundle is served but not kept here");
}

absl::StatusOr<tir::v1::Operation> ReadThrough::NewOperation(const Miss &miss, const std::string &note) {
  return parts_.operations.New(
      miss.arch, miss.key, "", miss.request_id,
      [&](tir::v1::Operation &o) {
        if (miss.describe) miss.describe(o);
        SetTier(o, "upstream", note);
      },
      miss.owner);
}

std::optional<tir::v1::Operation> ReadThrough::Compile(const tir::v1::CompileRequest &request, const Miss &miss,
                                                       std::string *note) {
  Upstream &up = parts_.upstream;
  const bool now = request.options().mode() == tir::v1::COMPILE_MODE_HEURISTIC_NOW;
  if (!up.Available()) {
    up.Count(Outcome::kSkipped);
    *note = absl::StrCat("upstream ", up.address(), " is down (", up.LastError(), "): answered here");
    return std::nullopt;
  }
  const std::string id = absl::StrCat(miss.key, "@", miss.shape);
  {
    absl::MutexLock l(&mu_);
    if (stopping_) return std::nullopt;
    auto nw = no_worker_.find(miss.arch);
    if (!now && nw != no_worker_.end() && absl::Now() < nw->second) {
      *note = absl::StrCat("upstream ", up.address(), " has no worker for ", miss.arch, ": tuned here");
      return std::nullopt;
    }
    // Tuning under way there for the same key and shape: this request
    // waits on it too (a host asks once).
    auto it = follows_.find(id);
    if (!now && it != follows_.end() && !it->second->ended) {
      absl::StatusOr<tir::v1::Operation> op =
          NewOperation(miss, absl::StrCat("tuning upstream (", up.address(), ", ", it->second->upstream_name, ")"));
      if (!op.ok()) return std::nullopt;
      it->second->names.push_back(op->name());
      return *op;
    }
  }
  if (up.read_only()) return FromLookup(request, miss, note);
  absl::StatusOr<tir::v1::Operation> asked = up.Compile(request);
  if (ReasonOf(asked.status()) == "READ_ONLY_ROLE") {
    // A read token: the upstream's store is looked up, nothing tuned there.
    up.set_read_only();
    return FromLookup(request, miss, note);
  }
  if (!asked.ok()) {
    up.Count(Outcome::kFailed);
    *note = absl::StrCat("upstream ", up.address(), " did not answer (", ReasonOf(asked.status()), ": ",
                         asked.status().message(), "): answered here");
    return std::nullopt;
  }
  if (asked->done() && !asked->has_response()) {
    up.Count(Outcome::kFailed);
    *note = absl::StrCat("upstream ", up.address(), " failed the request (", asked->error().reason(), ": ",
                         asked->error().message(), "): answered here");
    return std::nullopt;
  }
  if (asked->done()) {
    const tir::v1::KernelBundle &b = asked->response();
    absl::Status checked = up.Check(b, miss.key, miss.arch);
    if (checked.ok() && !miss.shape.empty() && !SizedFor(b, request)) {
      checked = MakeError(absl::StatusCode::kFailedPrecondition, "UPSTREAM_BUNDLE_REFUSED",
                          "the upstream's answer is not sized for the shape asked");
    }
    if (!checked.ok()) {
      up.Count(Outcome::kFailed);
      *note = absl::StrCat("upstream ", up.address(), ": ", checked.message(), ": answered here");
      return std::nullopt;
    }
    if (!b.tuning().tuned()) {
      if (!now) {
        // Asked to wait and answered at once, untuned: nothing there tunes
        // this arch. Tuned here; the upstream is asked again later.
        absl::MutexLock l(&mu_);
        no_worker_[miss.arch] = absl::Now() + absl::Minutes(1);
        *note = absl::StrCat("upstream ", up.address(), " has no worker for ", miss.arch, ": tuned here");
        return std::nullopt;
      }
      // Heuristic now: its default, tuned there behind the answer (the next
      // request finds the tuned bundle there, and keeps it here).
      up.Count(Outcome::kPending);
      absl::StatusOr<tir::v1::Operation> op =
          NewOperation(miss, absl::StrCat("untuned: tuning upstream (", up.address(), ")"));
      if (!op.ok()) return std::nullopt;
      parts_.operations.Finish({op->name()}, Served(b));
      return parts_.operations.Get(op->name()).value_or(*op);
    }
    up.Count(Outcome::kHit);
    Keep(b, miss);
    absl::StatusOr<tir::v1::Operation> op = NewOperation(miss, "");
    if (!op.ok()) return std::nullopt;
    parts_.operations.Finish({op->name()}, Served(b));
    std::optional<tir::v1::Operation> done = parts_.operations.Get(op->name());
    if (!done) return std::nullopt;
    done->mutable_metadata()->set_cache_hit(true);
    return done;
  }
  // Tuning there: an operation here follows it.
  absl::MutexLock l(&mu_);
  if (stopping_ || follows_.size() >= kMaxFollows) {
    *note = absl::StrCat("upstream ", up.address(), " is tuning it; ", follows_.size(),
                         " operations follow the upstream already: answered here");
    return std::nullopt;
  }
  absl::StatusOr<tir::v1::Operation> op =
      NewOperation(miss, absl::StrCat("tuning upstream (", up.address(), ", ", asked->name(), ")"));
  if (!op.ok()) return std::nullopt;
  up.Count(Outcome::kPending);
  auto follow = std::make_shared<Follow>();
  follow->id = id;
  follow->upstream_name = asked->name();
  follow->request = request;
  follow->miss = miss;
  follow->miss.describe = nullptr;  // it refers to the caller's frame
  follow->names = {op->name()};
  follows_[id] = follow;
  ++threads_;
  std::thread([this, follow] { Run(follow); }).detach();
  return *op;
}

std::optional<tir::v1::Operation> ReadThrough::FromLookup(const tir::v1::CompileRequest &request, const Miss &miss,
                                                          std::string *note) {
  tir::v1::LookupKernelRequest lookup;
  *lookup.mutable_graph() = request.graph();
  *lookup.mutable_options() = request.options();
  std::optional<tir::v1::LookupKernelResponse> found = Lookup(lookup, miss);
  if (!found || (!miss.shape.empty() && !found->shape_verified())) {
    *note = absl::StrCat("upstream ", parts_.upstream.address(),
                         " answers lookups only (a read token) and has no tuned bundle for it: answered here");
    return std::nullopt;
  }
  absl::StatusOr<tir::v1::Operation> op = NewOperation(miss, "");
  if (!op.ok()) return std::nullopt;
  parts_.operations.Finish({op->name()}, found->bundle());
  std::optional<tir::v1::Operation> done = parts_.operations.Get(op->name());
  if (done) done->mutable_metadata()->set_cache_hit(true);
  return done;
}

std::vector<std::string> ReadThrough::End(Follow &follow) {
  absl::MutexLock l(&mu_);
  follow.ended = true;
  auto it = follows_.find(follow.id);
  if (it != follows_.end() && it->second.get() == &follow) follows_.erase(it);
  return follow.names;
}

void ReadThrough::Answer(Follow &follow, const absl::StatusOr<tir::v1::KernelBundle> &answer) {
  parts_.operations.Finish(End(follow), answer);
}

void ReadThrough::Run(std::shared_ptr<Follow> follow) {
  Upstream &up = parts_.upstream;
  absl::Time down_since = absl::InfinitePast();
  const absl::Time give_up = absl::Now() + kMaxFollow;
  for (;;) {
    {
      absl::MutexLock l(&mu_);
      if (stopping_) break;
    }
    if (absl::Now() >= give_up) {
      Fallback(*follow, absl::StrCat("upstream ", up.address(), " did not finish it within ",
                                     absl::FormatDuration(kMaxFollow)));
      break;
    }
    absl::StatusOr<tir::v1::Operation> op = up.Wait(follow->upstream_name, absl::Seconds(2));
    if (!op.ok()) {
      const absl::Time now = absl::Now();
      if (IsUpstreamFailure(op.status())) {
        if (down_since == absl::InfinitePast()) down_since = now;
        if (now - down_since < give_up_after_) {
          absl::MutexLock l(&mu_);
          mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::Seconds(1));
          continue;
        }
      }
      Fallback(*follow, absl::StrCat("upstream ", up.address(), " lost the operation (", ReasonOf(op.status()), ": ",
                                     op.status().message(), ")"));
      break;
    }
    down_since = absl::InfinitePast();
    if (!op->done()) {
      std::vector<std::string> names;
      {
        absl::MutexLock l(&mu_);
        names = follow->names;
      }
      parts_.operations.SetProgress(names, op->metadata().progress());
      continue;
    }
    if (!op->has_response()) {
      Fallback(*follow, absl::StrCat("upstream ", up.address(), " failed it (", op->error().reason(), ": ",
                                     op->error().message(), ")"));
      break;
    }
    const tir::v1::KernelBundle &b = op->response();
    absl::Status checked = up.Check(b, follow->miss.key, follow->miss.arch);
    if (checked.ok() && !follow->miss.shape.empty() && !SizedFor(b, follow->request)) {
      checked = MakeError(absl::StatusCode::kFailedPrecondition, "UPSTREAM_BUNDLE_REFUSED",
                          "the upstream's answer is not sized for the shape asked");
    }
    if (checked.ok() && !b.tuning().tuned()) checked = MakeError(absl::StatusCode::kUnavailable, "UNTUNED", "it ended untuned");
    if (!checked.ok()) {
      Fallback(*follow, absl::StrCat("upstream ", up.address(), ": ", checked.message()));
      break;
    }
    Keep(b, follow->miss);
    Answer(*follow, Served(b));
    break;
  }
  {
    absl::MutexLock l(&mu_);
    if (stopping_ && !follow->ended) {
      follow->ended = true;
      follows_.erase(follow->id);
      parts_.operations.Finish(follow->names, MakeError(absl::StatusCode::kUnavailable, "SHUTTING_DOWN",
                                                         "the coordinator stopped while the upstream tuned it"));
    }
  }
  absl::MutexLock l(&mu_);
  --threads_;
}

void ReadThrough::Fallback(Follow &follow, const std::string &why) {
  std::fprintf(stderr, "tir-coordinator: %s; compiling %s here\n", why.c_str(), follow.miss.key.substr(0, 16).c_str());
  const std::vector<std::string> names = End(follow);
  parts_.operations.SetProgress(names, tir::v1::CompileProgress());
  absl::StatusOr<tir::v1::Operation> op = parts_.local(follow.request, follow.miss.owner);
  int64_t version = -1;
  while (op.ok() && !op->done()) {
    {
      absl::MutexLock l(&mu_);
      if (stopping_) break;
    }
    std::optional<tir::v1::Operation> now =
        parts_.operations.Wait(op->name(), absl::Now() + absl::Seconds(2), &version);
    if (!now) {
      op = MakeError(absl::StatusCode::kNotFound, "NOT_FOUND", "the operation compiling it here was dropped");
      break;
    }
    op = *std::move(now);
    if (!op->done()) parts_.operations.SetProgress(names, op->metadata().progress());
  }
  if (!op.ok()) {
    parts_.operations.Finish(names, op.status());
  } else if (!op->done()) {
    parts_.operations.Finish(names, MakeError(absl::StatusCode::kUnavailable, "SHUTTING_DOWN",
                                              "the coordinator stopped while compiling it"));
  } else if (op->has_response()) {
    parts_.operations.Finish(names, op->response());
  } else {
    parts_.operations.Finish(names, ErrorOf(*op));
  }
}

std::optional<tir::v1::LookupKernelResponse> ReadThrough::Lookup(const tir::v1::LookupKernelRequest &request,
                                                                 const Miss &miss) {
  Upstream &up = parts_.upstream;
  if (!up.Available()) {
    up.Count(Outcome::kSkipped);
    return std::nullopt;
  }
  absl::StatusOr<tir::v1::LookupKernelResponse> found = up.Lookup(request);
  if (!found.ok()) {
    up.Count(Outcome::kFailed);
    return std::nullopt;
  }
  if (!found->found()) return std::nullopt;
  if (!up.Check(found->bundle(), miss.key, miss.arch).ok() || !found->bundle().tuning().tuned()) {
    up.Count(Outcome::kFailed);
    return std::nullopt;
  }
  up.Count(Outcome::kHit);
  Keep(found->bundle(), miss);
  *found->mutable_bundle() = Served(std::move(*found->mutable_bundle()));
  return *std::move(found);
}

}  // namespace tir::upstream
