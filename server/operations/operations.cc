#include "server/operations/operations.h"

#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "compiler/reference/DynamicShapes.h"
#include "compiler/support/status.h"
#include "google/protobuf/util/time_util.h"
#include "server/bundles/shape_records.h"
#include "server/common/shape.h"

namespace tir::operations {

using google::protobuf::util::TimeUtil;

tir::v1::Operation CachedOperation(tir::v1::KernelBundle bundle) {
  tir::v1::Operation op;
  op.set_name(absl::StrCat(kCachedPrefix, bundle.key()));
  if (bundle.has_served_shape()) {
    const std::string shape =
        reference::FormatShapes({bundle.served_shape().shape().begin(), bundle.served_shape().shape().end()});
    op.set_name(absl::StrCat(kCachedPrefix, bundle.key(), "@", common::ShapeInName(shape)));
    op.mutable_metadata()->set_shape(shape);
    op.mutable_metadata()->set_shape_bucket(bundles::BucketText(bundle));
  }
  op.set_done(true);
  tir::v1::CompileMetadata *m = op.mutable_metadata();
  m->set_key(bundle.key());
  m->set_cache_hit(true);
  m->set_target_arch(bundle.arch());
  m->mutable_progress()->set_stage(tir::v1::STAGE_DONE);
  *m->mutable_create_time() = *m->mutable_end_time() = TimeUtil::GetCurrentTime();
  *op.mutable_response() = std::move(bundle);
  return op;
}

std::optional<std::pair<std::string, std::string>> ParseCachedName(const std::string &name) {
  if (!absl::StartsWith(name, kCachedPrefix)) return std::nullopt;
  const std::string rest = name.substr(std::strlen(kCachedPrefix));
  const size_t at = rest.find('@');
  if (at == std::string::npos) return std::make_pair(rest, std::string());
  return std::make_pair(rest.substr(0, at), rest.substr(at + 1));
}

Operations::Operations(uint32_t max_operations, common::LimitCounter &limits, ledger::Ledger &ledger,
                       std::string name_prefix)
    : limits_(limits), ledger_(ledger), table_(max_operations, std::move(name_prefix)) {}

absl::StatusOr<tir::v1::Operation> Operations::New(const std::string &arch, const std::string &key,
                                                   const std::string &job, const std::string &request_id,
                                                   const std::function<void(tir::v1::Operation &)> &describe,
                                                   const std::string &owner) {
  absl::MutexLock l(&mu_);
  PruneIfDue(absl::Now());
  absl::StatusOr<std::string> name = table_.New(arch, key);
  if (!name.ok()) {
    limits_.Count("maxOperations");
    return name.status();
  }
  OperationTable::Entry *e = table_.Find(*name);
  e->job = job;
  e->owner = owner;
  if (describe) describe(e->op);
  table_.RememberRequest(request_id, *name);
  return e->op;
}

bool Operations::Restore(const std::string &name, const std::string &arch, const std::string &key,
                         const std::string &job, const std::string &owner) {
  absl::MutexLock l(&mu_);
  if (table_.Contains(name)) return false;
  table_.Restore(name, arch, key);
  OperationTable::Entry *e = table_.Find(name);
  e->job = job;
  e->owner = owner;
  return true;
}

absl::Status Operations::CanCancel(const std::string &name, const std::string &identity, bool admin) const {
  absl::MutexLock l(&mu_);
  const OperationTable::Entry *e = table_.Find(name);
  if (e == nullptr) return MakeError(absl::StatusCode::kNotFound, "NOT_FOUND", "no operation " + name);
  if (admin || e->owner == identity) return absl::OkStatus();
  return MakeError(absl::StatusCode::kPermissionDenied, "NOT_OWNER",
                   absl::StrCat("operation ", name, " was asked for by another client: only its owner or an admin cancels it"));
}

std::optional<tir::v1::Operation> Operations::Get(const std::string &name) const {
  absl::MutexLock l(&mu_);
  if (const OperationTable::Entry *e = table_.Find(name)) return e->op;
  return std::nullopt;
}

std::optional<tir::v1::Operation> Operations::ByRequest(const std::string &request_id) {
  absl::MutexLock l(&mu_);
  PruneIfDue(absl::Now());  // a request id of an operation no longer kept names nothing
  if (const OperationTable::Entry *e = table_.ByRequest(request_id)) return e->op;
  return std::nullopt;
}

bool Operations::Contains(const std::string &name) const {
  absl::MutexLock l(&mu_);
  return table_.Contains(name);
}

std::string Operations::JobOf(const std::string &name) const {
  absl::MutexLock l(&mu_);
  const OperationTable::Entry *e = table_.Find(name);
  return e == nullptr ? "" : e->job;
}

void Operations::SetJob(const std::vector<std::string> &names, const std::string &job) {
  absl::MutexLock l(&mu_);
  for (const std::string &n : names) {
    if (OperationTable::Entry *e = table_.Find(n); e != nullptr && !e->op.done()) e->job = job;
  }
}

void Operations::Finish(const std::vector<std::string> &names, const absl::StatusOr<tir::v1::KernelBundle> &result) {
  absl::MutexLock l(&mu_);
  PruneIfDue(absl::Now());
  for (const std::string &n : names) table_.Finish(n, result);
  changed_.SignalAll();
}

void Operations::SetProgress(const std::vector<std::string> &names, const tir::v1::CompileProgress &progress) {
  absl::MutexLock l(&mu_);
  for (const std::string &n : names) table_.SetProgress(n, progress);
  changed_.SignalAll();
}

std::optional<tir::v1::Operation> Operations::Wait(const std::string &name, absl::Time end, int64_t *version) {
  absl::MutexLock l(&mu_);
  for (;;) {
    const OperationTable::Entry *e = table_.Find(name);
    if (e == nullptr) return std::nullopt;  // dropped while waited on: the store answers
    const bool changed = version != nullptr && *version >= 0 && e->version != *version;
    if (e->op.done() || changed || absl::Now() >= end || stopping_) {
      if (version != nullptr) *version = e->version;
      return e->op;
    }
    changed_.WaitWithDeadline(&mu_, end);
  }
}

void Operations::Stop() {
  absl::MutexLock l(&mu_);
  stopping_ = true;
  changed_.SignalAll();
}

void Operations::PruneIfDue(absl::Time now) {
  // Finished operations are kept for ten minutes.
  if (now - last_prune_ < absl::Seconds(10)) return;
  last_prune_ = now;
  table_.Prune(now, absl::Minutes(10));
}

void Operations::Persist(const std::string &name, const std::string &key, const std::string &shape) {
  tir::v1::OperationRecord r;
  r.set_key(key);
  r.set_shape(shape);
  {
    absl::MutexLock l(&mu_);
    if (const OperationTable::Entry *e = table_.Find(name)) r.set_owner(e->owner);
  }
  ledger_.PutOperation(name, r);
}

void Operations::Forget(const std::vector<std::string> &names) { ledger_.DropOperations(names); }

}  // namespace tir::operations
