// Shape checks: a dynamic bundle verified at a shape of its bucket asked for
// the first time, one work item per kernel (the chosen candidate, verified
// on a worker, not timed). When every kernel has its verdict the record is
// kept (ShapeSizer::Verified: a pass, or a wrong result as a refusal for
// good) and the operations waiting are answered: the bundle sized for the
// shape, WRONG_AT_SHAPE, or SHAPE_CHECK_FAILED (faults or timeouts only:
// asked again, checked again). The owner of its work items, beside the
// tuning jobs; under its own lock (order: checks, then operations or
// dispatch).
//
// One worker's WRONG is not a verdict: the bundle is the coordinator's own
// build, verified where it was tuned. The kernel is checked again by another
// worker (never the dissenter, so another identity) while the operations
// wait, checking; a second WRONG makes the refusal, a pass serves the shape
// and distrusts the dissenter. The coordinator runs no kernels itself, so
// the second party is always a worker. What a record keeps of a verdict is
// its numbers in the coordinator's words (bundles::TakenVerification); the
// workers' own words go to the log.

#ifndef TIR_SERVER_TUNING_SHAPE_CHECKS_H_
#define TIR_SERVER_TUNING_SHAPE_CHECKS_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "prometheus/counter.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "server/bundles/shape_sizer.h"
#include "server/common/limits.h"
#include "server/common/shape.h"
#include "server/dispatch/dispatcher.h"
#include "server/operations/operations.h"

namespace tir::tuning {

class ShapeChecks : public dispatch::WorkOwner {
 public:
  ShapeChecks(dispatch::Dispatcher &dispatcher, operations::Operations &ops, bundles::ShapeSizer &sizer,
              common::LimitCounter &limits, uint32_t max_checks, prometheus::Registry &registry);

  // Queues the check of `stored` at `shape` (or joins the one in flight) for
  // operations `ops`. Sizing parses the kernel graphs: call it off every lock.
  void Check(const tir::v1::KernelBundle &stored, const common::Shape &shape, std::vector<std::string> ops,
             int priority) ABSL_LOCKS_EXCLUDED(mu_);
  // Answers `ops` with `stored` sized for `shape`, checking it there first
  // when it is not verified yet.
  void AnswerAtShape(const tir::v1::KernelBundle &stored, const common::Shape &shape, std::vector<std::string> ops,
                     int priority) ABSL_LOCKS_EXCLUDED(mu_);
  // Operation `op` no longer waits for check `id` (which goes on: its
  // record serves the next request for the shape).
  void Cancel(const std::string &op, const std::string &id) ABSL_LOCKS_EXCLUDED(mu_);
  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);

  void OnResults(dispatch::QueuedWork work, std::vector<tir::v1::CandidateResult> results,
                 const std::string &worker) ABSL_LOCKS_EXCLUDED(mu_) override;
  void OnLeased(const std::string &) override {}

 private:
  struct Check_ {
    std::string id;  // "check/<key>/<bundle create time>/<shape>"
    std::string key;
    common::Shape shape;
    tir::v1::KernelBundle sized;  // the bundle at the shape (unsigned)
    std::vector<std::optional<tir::v1::Verification>> results;
    // Per kernel: the worker whose WRONG waits for a second party.
    std::map<int, std::string> dissent;
    // A WRONG no second party could check (no other worker of the arch):
    // answered, not kept.
    bool unconfirmed = false;
    std::string worker;
    std::vector<std::string> operations;
    absl::Time start;
  };
  using Checks = std::map<std::string, Check_>;
  void Progress(const Check_ &check) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Every kernel has its verdict: the record, the answers.
  void Complete(Checks::iterator check) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  dispatch::Dispatcher &dispatcher_;
  operations::Operations &ops_;
  bundles::ShapeSizer &sizer_;
  common::LimitCounter &limits_;
  const uint32_t max_checks_;
  prometheus::Family<prometheus::Counter> &checked_;
  prometheus::Histogram &seconds_;
  mutable absl::Mutex mu_;
  Checks checks_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tir::tuning

#endif  // TIR_SERVER_TUNING_SHAPE_CHECKS_H_
