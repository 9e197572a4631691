#include "server/operations/operation_table.h"

#include "compiler/support/digest.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "compiler/support/status.h"
#include "google/protobuf/util/time_util.h"

namespace tir::operations {

using google::protobuf::util::TimeUtil;

namespace {

// TimeUtil::GetCurrentTime has whole seconds here; operations are ordered
// (and evicted) by their end times, so these carry nanoseconds.
google::protobuf::Timestamp Now() { return TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(absl::Now())); }

}  // namespace

tir::v1::Error ErrorOf(const absl::Status &s) {
  tir::v1::Error e;
  e.set_code(static_cast<int>(s.code()));
  e.set_reason(ReasonOf(s));
  e.set_message(std::string(s.message()));
  return e;
}

OperationTable::OperationTable(uint32_t max_operations, std::string prefix)
    : max_(std::max(1u, max_operations)), prefix_(std::move(prefix)) {}

absl::StatusOr<std::string> OperationTable::New(const std::string &arch, const std::string &key) {
  if (entries_.size() >= max_) {
    std::vector<std::pair<int64_t, std::string>> done;
    for (const auto &[n, e] : entries_) {
      if (e.op.done()) done.emplace_back(TimeUtil::TimestampToNanoseconds(e.op.metadata().end_time()), n);
    }
    if (done.empty()) {
      return MakeError(absl::StatusCode::kResourceExhausted, "LIMIT_EXCEEDED",
                       absl::StrCat("limit maxOperations=", max_, " reached: ", entries_.size(),
                                    " operations are in flight"));
    }
    std::sort(done.begin(), done.end());
    done.resize(std::max<size_t>(1, std::min(done.size(), entries_.size() / 10)));
    for (const auto &[t, n] : done) entries_.erase(n);
  }
  std::string name;
  do {
    name = "operations/" + prefix_ + RandomHex(8);
  } while (entries_.count(name));
  Restore(name, arch, key);
  return name;
}

void OperationTable::Restore(const std::string &name, const std::string &arch, const std::string &key) {
  if (entries_.count(name)) return;
  Entry &e = entries_[name];
  e.op.set_name(name);
  e.op.mutable_metadata()->set_key(key);
  e.op.mutable_metadata()->set_target_arch(arch);
  *e.op.mutable_metadata()->mutable_create_time() = Now();
  e.op.mutable_metadata()->mutable_progress()->set_stage(tir::v1::STAGE_VERIFYING);
}

OperationTable::Entry *OperationTable::Find(const std::string &name) {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second;
}

const OperationTable::Entry *OperationTable::Find(const std::string &name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second;
}

bool OperationTable::Finish(const std::string &name, const absl::StatusOr<tir::v1::KernelBundle> &result) {
  Entry *e = Find(name);
  if (e == nullptr || e->op.done()) return false;
  tir::v1::Operation &op = e->op;
  op.set_done(true);
  op.mutable_metadata()->mutable_progress()->set_stage(tir::v1::STAGE_DONE);
  *op.mutable_metadata()->mutable_end_time() = Now();
  if (result.ok()) {
    *op.mutable_response() = *result;
  } else {
    *op.mutable_error() = ErrorOf(result.status());
  }
  ++e->version;
  e->job.clear();
  return true;
}

void OperationTable::SetProgress(const std::string &name, const tir::v1::CompileProgress &progress) {
  Entry *e = Find(name);
  if (e == nullptr || e->op.done()) return;
  *e->op.mutable_metadata()->mutable_progress() = progress;
  ++e->version;
}

void OperationTable::RememberRequest(const std::string &request_id, const std::string &name) {
  if (!request_id.empty()) requests_[request_id] = name;
}

const OperationTable::Entry *OperationTable::ByRequest(const std::string &request_id) const {
  if (request_id.empty()) return nullptr;
  auto it = requests_.find(request_id);
  if (it == requests_.end()) return nullptr;
  auto e = entries_.find(it->second);
  return e == entries_.end() ? nullptr : &e->second;
}

void OperationTable::Prune(absl::Time now, absl::Duration keep) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    const auto &end = it->second.op.metadata().end_time();
    if (it->second.op.done() && now - absl::FromUnixNanos(TimeUtil::TimestampToNanoseconds(end)) > keep) {
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = requests_.begin(); it != requests_.end();) {
    it = entries_.count(it->second) ? std::next(it) : requests_.erase(it);
  }
}

}  // namespace tir::operations
