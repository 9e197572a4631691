// The coordinator's operations, thread-safe: the OperationTable under its
// own lock, with waits for a change, and their records in the ledger (an
// operation attached to a job is kept there, so a restarted coordinator
// answers it under its name). Nothing else is locked while its lock is
// held: it calls nothing out.
//
// A cache hit's operation is not kept: it is named "operations/cached.<key>"
// (a dynamic graph's "...<key>@<shape>") and answered from the store again.
//
// Each kept operation has an owner: the authenticated identity that asked
// for it ("" for the shared client token or an open service), persisted
// with its record. Only its owner, or an admin, cancels it (CanCancel).

#ifndef TIR_SERVER_OPERATIONS_OPERATIONS_H_
#define TIR_SERVER_OPERATIONS_OPERATIONS_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/common/limits.h"
#include "server/ledger/ledger.h"
#include "server/operations/operation_table.h"
#include "tir/v1/compiler_service.pb.h"

namespace tir::operations {

inline constexpr char kCachedPrefix[] = "operations/cached.";

// A done operation for a cache hit of `bundle`.
tir::v1::Operation CachedOperation(tir::v1::KernelBundle bundle);
// The key and the shape text ("" for none) of a cache hit's name; nullopt
// when `name` is not one.
std::optional<std::pair<std::string, std::string>> ParseCachedName(const std::string &name);

class Operations {
 public:
  // `name_prefix`: OperationTable's.
  Operations(uint32_t max_operations, common::LimitCounter &limits, ledger::Ledger &ledger,
             std::string name_prefix = "");

  // A new operation for `key` on `arch` waiting for `job` ("" for none),
  // `describe` filling its metadata, `request_id` naming it, owned by
  // `owner`. Errors: LIMIT_EXCEEDED (maxOperations).
  absl::StatusOr<tir::v1::Operation> New(const std::string &arch, const std::string &key, const std::string &job,
                                         const std::string &request_id,
                                         const std::function<void(tir::v1::Operation &)> &describe,
                                         const std::string &owner);
  // Puts back an operation from before a restart (false when it is kept).
  // `owner`: who may cancel it (set with the entry, so no caller sees it
  // unowned).
  bool Restore(const std::string &name, const std::string &arch, const std::string &key, const std::string &job,
               const std::string &owner = "");
  // OK when `identity` may cancel operation `name`: its owner, or an admin.
  // Errors: NOT_FOUND (not kept), PERMISSION_DENIED / NOT_OWNER.
  absl::Status CanCancel(const std::string &name, const std::string &identity, bool admin) const;

  std::optional<tir::v1::Operation> Get(const std::string &name) const;
  std::optional<tir::v1::Operation> ByRequest(const std::string &request_id);
  bool Contains(const std::string &name) const;
  // The job (or check) it waits for ("" when done or unknown).
  std::string JobOf(const std::string &name) const;
  void SetJob(const std::vector<std::string> &names, const std::string &job);

  void Finish(const std::vector<std::string> &names, const absl::StatusOr<tir::v1::KernelBundle> &result);
  void SetProgress(const std::vector<std::string> &names, const tir::v1::CompileProgress &progress);

  // Waits until it is done, its version moves past `*version` (when >= 0),
  // `end`, or Stop; sets `*version`. nullopt when it is not kept.
  std::optional<tir::v1::Operation> Wait(const std::string &name, absl::Time end, int64_t *version);
  void Stop();

  // The ledger's side (outside the lock: a store write). Persist is synced:
  // durable before the client learns the name; the record carries the
  // operation's owner.
  void Persist(const std::string &name, const std::string &key, const std::string &shape);
  // Ended for good (cancelled, refused): a restart does not bring them back.
  void Forget(const std::vector<std::string> &names);

 private:
  void PruneIfDue(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  common::LimitCounter &limits_;
  ledger::Ledger &ledger_;
  mutable absl::Mutex mu_;
  absl::CondVar changed_;
  OperationTable table_ ABSL_GUARDED_BY(mu_);
  absl::Time last_prune_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace tir::operations

#endif  // TIR_SERVER_OPERATIONS_OPERATIONS_H_
