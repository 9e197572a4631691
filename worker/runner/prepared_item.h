// What a runner derives once per work item, whatever the backend: the kernel
// graph, seeded inputs, the reference outputs, and the argument layout.

#ifndef TIR_WORKER_RUNNER_PREPARED_ITEM_H_
#define TIR_WORKER_RUNNER_PREPARED_ITEM_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/reference/Tensor.h"
#include "mlir/IR/MLIRContext.h"
#include "tir/v1/worker_service.grpc.pb.h"

namespace tir::runner {

struct PreparedItem {
  tir::v1::WorkItem item;
  std::unique_ptr<mlir::MLIRContext> context;
  LoadedGraph loaded;                      // loaded.graph is the kernel graph
  std::vector<std::string> field_names;    // tir_args fields in order
  std::vector<reference::Tensor> inputs;   // seeded, never all zeros
  std::vector<reference::Tensor> expected; // the reference interpreter's outputs
  // Per output, the rounding a sum's cancellation allows beyond the dtype's
  // (reference::Reference::rounding; NoRounding() where no sum reaches it).
  std::vector<reference::Tensor> rounding;
  bool reference_cached = false;           // inputs and expected read from the reference cache
};

// Where PrepareItem keeps the inputs and reference outputs it computed (one
// file per kernel graph, seed and shapes; the newest few kept), so a runner
// restarted after a fault makes its item current again without evaluating
// the reference again. Empty (the default): no cache. tir-worker-runner sets
// it from --reference-dir.
void SetReferenceCacheDir(std::string dir);

// Parses `item.kernel_mlir`, draws its inputs (static shapes, dynamic ones
// from `item.shapes`) from `item.policy.seed` and evaluates the reference.
// Errors: INVALID_ARGUMENT / INVALID_WORK with what is wrong with the item.
absl::StatusOr<std::unique_ptr<PreparedItem>> PrepareItem(const tir::v1::WorkItem &item);

// Candidate `position` of the prepared item (`prepared` may be null).
// Errors: NO_ITEM when nothing is prepared, INVALID_WORK for a bad position.
absl::StatusOr<const tir::v1::CandidateWork *> CandidateAt(const PreparedItem *prepared, uint32_t position);

// How long to time a candidate: at least `min_runs` runs (the policy's, else
// `default_min_runs`), then until `budget_seconds` (default 50 ms) are spent.
struct TimedRuns {
  int min_runs;
  double budget_seconds;
  static constexpr int kMaxRuns = 100000;
  bool More(int runs, double spent) const { return runs < kMaxRuns && (runs < min_runs || spent < budget_seconds); }
};
TimedRuns TimedRunsOf(const tir::v1::MeasurementPolicy &policy, int default_min_runs);

// Compares outputs with the reference: the largest relative L2 error over the
// outputs against each output's bound (reference::CheckOutput: the dtype's,
// the reduction length's, and for an output a sum reaches the rounding
// `rounding` gives; empty `rounding`: none); NaN where the reference has
// none, a shape mismatch or a missing output is WRONG.
tir::v1::Verification Verify(const std::vector<reference::Tensor> &got, const std::vector<reference::Tensor> &want,
                             const std::vector<reference::Tensor> &rounding, int64_t reduction_length = 1,
                             bool tf32_operands = false);

}  // namespace tir::runner

#endif  // TIR_WORKER_RUNNER_PREPARED_ITEM_H_
