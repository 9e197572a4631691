#include "server/ledger/ledger.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "compiler/support/status.h"

namespace tir::ledger {
namespace {

constexpr char kJob[] = "job/";
constexpr char kRound[] = "round/";
constexpr char kOperation[] = "op/";
constexpr char kShape[] = "shape/";
constexpr char kOwner[] = "owner/";

std::string RoundPrefix(const std::string &key) { return absl::StrCat(kRound, key, "/"); }
std::string ShapePrefix(const std::string &key) { return absl::StrCat(kShape, key, "/"); }
std::string OwnerPrefix(const std::string &key) { return absl::StrCat(kOwner, key, "/"); }

// An operation record: the typed one, or the text one stores from before it
// ("<key>" or "<key>\n<shape>").
tir::v1::OperationRecord ParseOperation(const std::string &value) {
  tir::v1::OperationRecord r;
  // A typed record starts with field 1's tag; the text form with a hex digit.
  if (!value.empty() && value[0] == '\x0a' && r.ParseFromString(value) && !r.key().empty()) return r;
  r.Clear();
  const size_t nl = value.find('\n');
  r.set_key(value.substr(0, nl));
  if (nl != std::string::npos) r.set_shape(value.substr(nl + 1));
  return r;
}

}  // namespace

Ledger::Ledger(std::shared_ptr<store::KernelStore> store, common::StoreWriter *writer)
    : store_(std::move(store)), writer_(writer) {}

void Ledger::Post(std::function<void()> task) {
  if (writer_ != nullptr) {
    writer_->Post(std::move(task));
  } else {
    task();
  }
}

absl::Status Ledger::PutJob(const std::string &key, const tir::v1::CompileRequest &request, bool sync) {
  const std::string value = request.SerializeAsString();
  TIR_RETURN_IF_ERROR(store_->Put(store::Family::kJobs, kJob + key, value, sync));
  absl::MutexLock l(&mu_);
  size_t &bytes = job_bytes_[key];
  job_total_ = job_total_ - bytes + value.size();
  bytes = value.size();
  return absl::OkStatus();
}

absl::StatusOr<std::vector<tir::v1::CompileRequest>> Ledger::Jobs() const {
  std::vector<tir::v1::CompileRequest> out;
  std::map<std::string, size_t> bytes;
  size_t total = 0;
  TIR_RETURN_IF_ERROR(store_->Scan(store::Family::kJobs, kJob, [&](absl::string_view k, absl::string_view value) {
    bytes[std::string(k.substr(sizeof(kJob) - 1))] = value.size();
    total += value.size();
    tir::v1::CompileRequest r;
    if (r.ParseFromString(std::string(value))) out.push_back(std::move(r));
    return true;
  }));
  absl::MutexLock l(&mu_);
  job_bytes_ = std::move(bytes);
  job_total_ = total;
  return out;
}

size_t Ledger::JobBytes() const {
  absl::MutexLock l(&mu_);
  return job_total_;
}

void Ledger::DropPrefix(const std::string &prefix, const char *what) {
  std::vector<std::string> keys;
  IgnoreError(store_->Scan(store::Family::kJobs, prefix,
                           [&](absl::string_view k, absl::string_view) {
                             keys.emplace_back(k);
                             return true;
                           }),
              what);
  for (const std::string &k : keys) IgnoreError(store_->Delete(store::Family::kJobs, k), what);
}

void Ledger::DropJob(const std::string &key) {
  Post([this, key] {
    IgnoreError(store_->Delete(store::Family::kJobs, kJob + key), "a finished job's record stays until the next resume");
    DropPrefix(RoundPrefix(key), "a finished job's rounds stay until the next resume");
    absl::MutexLock l(&mu_);
    if (auto it = job_bytes_.find(key); it != job_bytes_.end()) {
      job_total_ -= it->second;
      job_bytes_.erase(it);
    }
  });
}

void Ledger::DropRounds(const std::string &key) {
  Post([this, key] { DropPrefix(RoundPrefix(key), "rounds measured again overwrite those left"); });
}

void Ledger::PutRound(const std::string &key, int kernel, int round, const tir::v1::ReportResultRequest &report) {
  Post([this, k = absl::StrCat(RoundPrefix(key), kernel, "/", round), v = report.SerializeAsString()] {
    IgnoreError(store_->Put(store::Family::kJobs, k, v, false), "a round not stored is measured again after a restart");
  });
}

absl::StatusOr<Rounds> Ledger::RoundsOf(const std::string &key) const {
  Rounds out;
  const std::string prefix = RoundPrefix(key);
  TIR_RETURN_IF_ERROR(store_->Scan(store::Family::kJobs, prefix, [&](absl::string_view k, absl::string_view value) {
    const std::vector<absl::string_view> parts = absl::StrSplit(k.substr(prefix.size()), '/');
    int kernel = -1, round = -1;
    tir::v1::ReportResultRequest r;
    if (parts.size() == 2 && absl::SimpleAtoi(parts[0], &kernel) && absl::SimpleAtoi(parts[1], &round) &&
        r.ParseFromString(std::string(value))) {
      out[{kernel, round}] = std::move(r);
    }
    return true;
  }));
  return out;
}

void Ledger::PutOperation(const std::string &name, const tir::v1::OperationRecord &record) {
  IgnoreError(store_->Put(store::Family::kJobs, kOperation + name, record.SerializeAsString(), true),
              "an operation not persisted answers only until the coordinator restarts");
}

absl::StatusOr<tir::v1::OperationRecord> Ledger::GetOperation(const std::string &name) const {
  TIR_ASSIGN_OR_RETURN(std::string value, store_->Get(store::Family::kJobs, kOperation + name));
  return ParseOperation(value);
}

absl::StatusOr<std::vector<std::pair<std::string, tir::v1::OperationRecord>>> Ledger::Operations() const {
  std::vector<std::pair<std::string, tir::v1::OperationRecord>> out;
  TIR_RETURN_IF_ERROR(store_->Scan(store::Family::kJobs, kOperation, [&](absl::string_view k, absl::string_view value) {
    out.emplace_back(std::string(k.substr(sizeof(kOperation) - 1)), ParseOperation(std::string(value)));
    return true;
  }));
  return out;
}

void Ledger::DropOperations(const std::vector<std::string> &names) {
  Post([this, names] {
    for (const std::string &n : names) {
      IgnoreError(store_->Delete(store::Family::kJobs, kOperation + n), "a stale operation record stays");
    }
  });
}

void Ledger::PutShape(const std::string &key, const std::string &shape, const tir::v1::ShapeVerification &record) {
  Post([this, k = ShapePrefix(key) + shape, v = record.SerializeAsString()] {
    IgnoreError(store_->Put(store::Family::kJobs, k, v, false), "a shape record not stored is checked again");
  });
}

absl::StatusOr<std::optional<tir::v1::ShapeVerification>> Ledger::GetShape(const std::string &key,
                                                                           const std::string &shape) const {
  absl::StatusOr<std::string> value = store_->Get(store::Family::kJobs, ShapePrefix(key) + shape);
  if (absl::IsNotFound(value.status())) return std::nullopt;
  TIR_RETURN_IF_ERROR(value.status());
  tir::v1::ShapeVerification r;
  if (!r.ParseFromString(*value)) return std::nullopt;  // checked again
  return r;
}

void Ledger::DropShapes(const std::string &key) { DropPrefix(ShapePrefix(key), "stale shape records stay in the store"); }

void Ledger::AddRequester(const std::string &key, const std::string &identity) {
  Post([this, k = OwnerPrefix(key) + identity] {
    IgnoreError(store_->Put(store::Family::kJobs, k, "", false),
                "a requester not recorded may see the bundle deleted by another");
  });
}

absl::StatusOr<std::vector<std::string>> Ledger::RequestersOf(const std::string &key) const {
  std::vector<std::string> out;
  const std::string prefix = OwnerPrefix(key);
  TIR_RETURN_IF_ERROR(store_->Scan(store::Family::kJobs, prefix, [&](absl::string_view k, absl::string_view) {
    out.emplace_back(k.substr(prefix.size()));
    return true;
  }));
  return out;
}

void Ledger::DropRequesters(const std::string &key) {
  Post([this, key] { DropPrefix(OwnerPrefix(key), "a deleted bundle's requesters stay recorded"); });
}

void Ledger::PutTrial(const std::string &job, int kernel, int round, const std::string &lease,
                      const tir::v1::CandidateResult &trial) {
  Post([this, k = absl::StrCat(job, "/", kernel, "/", trial.candidate_index(), "/", round, "/", lease),
        v = trial.SerializeAsString()] {
    IgnoreError(store_->Put(store::Family::kTrials, k, v, false), "a trial record is kept for analysis only");
  });
}

absl::Status Ledger::ScanTrials(
    const std::function<void(const std::string &id, const tir::v1::CandidateResult &)> &fn) const {
  return store_->Scan(store::Family::kTrials, "", [&](absl::string_view key, absl::string_view value) {
    tir::v1::CandidateResult r;
    if (r.ParseFromString(std::string(value))) fn(std::string(key), r);
    return true;
  });
}

}  // namespace tir::ledger
