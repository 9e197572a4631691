// The tuning ledger: what the coordinator keeps in the store besides the
// bundles, as typed records, and the only code that knows how they are
// keyed. Jobs family:
//   job/<key>                        tir.v1.CompileRequest: a job to resume
//   round/<key>/<kernel>/<round>     tir.v1.ReportResultRequest: a round as
//                                    reported (replayed on resume)
//   op/<name>                        tir.v1.OperationRecord: an operation
//                                    waiting for a job or a shape check
//   shape/<key>/<shape>              tir.v1.ShapeVerification
//   owner/<key>/<identity>           (empty) an identity that asked for the
//                                    bundle of <key> ("" for anonymous)
// Trials family (the cost model's data, never read back by tuning):
//   <job>/<kernel>/<candidate>/<round>/<lease>   tir.v1.CandidateResult
//
// Writes marked "posted" run on the StoreWriter, after everything posted
// before them and outside every lock of their caller; the others write
// directly. A failed write that only loses what a restart would resume is
// reported on stderr and does not fail the caller (IgnoreError).
//
// Thread-safe (the store is; the ledger's own state, the bytes of the job
// records stored, is under its lock).

#ifndef TIR_SERVER_LEDGER_LEDGER_H_
#define TIR_SERVER_LEDGER_LEDGER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/common/work_queue.h"
#include "server/store/kernel_store.h"
#include "tir/v1/compiler_service.pb.h"
#include "tir/v1/ledger.pb.h"
#include "tir/v1/worker_service.pb.h"

namespace tir::ledger {

// Rounds of one job by (kernel, round).
using Rounds = std::map<std::pair<int, int>, tir::v1::ReportResultRequest>;

class Ledger {
 public:
  // `writer` runs the posted writes (null: they run at once, for tools that
  // only read).
  Ledger(std::shared_ptr<store::KernelStore> store, common::StoreWriter *writer);

  // Jobs.
  absl::Status PutJob(const std::string &key, const tir::v1::CompileRequest &request, bool sync);
  absl::StatusOr<std::vector<tir::v1::CompileRequest>> Jobs() const ABSL_LOCKS_EXCLUDED(mu_);
  // Bytes of the job records stored: as Jobs() found them, and as PutJob
  // and DropJob changed them since.
  size_t JobBytes() const ABSL_LOCKS_EXCLUDED(mu_);
  // Posted: the job's record and its rounds.
  void DropJob(const std::string &key);
  // Posted.
  void PutRound(const std::string &key, int kernel, int round, const tir::v1::ReportResultRequest &report);
  // Forgets every round of job `key` (a job measured again from round 0).
  void DropRounds(const std::string &key);
  // The stored rounds of `key` (a bad record is skipped).
  absl::StatusOr<Rounds> RoundsOf(const std::string &key) const;

  // Operations. Synced: durable before the client learns the name.
  void PutOperation(const std::string &name, const tir::v1::OperationRecord &record);
  // NOT_FOUND when none is kept.
  absl::StatusOr<tir::v1::OperationRecord> GetOperation(const std::string &name) const;
  absl::StatusOr<std::vector<std::pair<std::string, tir::v1::OperationRecord>>> Operations() const;
  // Posted: operations that ended for good (cancelled, refused).
  void DropOperations(const std::vector<std::string> &names);

  // Shape verifications. Posted.
  void PutShape(const std::string &key, const std::string &shape, const tir::v1::ShapeVerification &record);
  // nullopt when none is kept.
  absl::StatusOr<std::optional<tir::v1::ShapeVerification>> GetShape(const std::string &key,
                                                                    const std::string &shape) const;
  // Direct: every shape record of `key` (a new or deleted bundle).
  void DropShapes(const std::string &key);

  // Who asked for the bundle of `key` (ownership). Posted; idempotent.
  void AddRequester(const std::string &key, const std::string &identity);
  // The identities recorded for `key`, sorted ("" for anonymous callers).
  absl::StatusOr<std::vector<std::string>> RequestersOf(const std::string &key) const;
  // Posted: every requester record of `key` (a deleted bundle).
  void DropRequesters(const std::string &key);

  // Trials. Posted.
  void PutTrial(const std::string &job, int kernel, int round, const std::string &lease,
                const tir::v1::CandidateResult &trial);
  // Every stored trial, with an id that names it.
  absl::Status ScanTrials(const std::function<void(const std::string &id, const tir::v1::CandidateResult &)> &fn) const;

  // Runs `task` after the posted writes before it (on the writer).
  void Post(std::function<void()> task);

 private:
  // Deletes every jobs-family record under `prefix`.
  void DropPrefix(const std::string &prefix, const char *what);
  std::shared_ptr<store::KernelStore> store_;
  common::StoreWriter *writer_;
  mutable absl::Mutex mu_;
  mutable std::map<std::string, size_t> job_bytes_ ABSL_GUARDED_BY(mu_);  // key -> record bytes
  mutable size_t job_total_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tir::ledger

#endif  // TIR_SERVER_LEDGER_LEDGER_H_
