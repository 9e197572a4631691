// Planned graph -> the work items that measure its kernels' candidates.
//
// For each kernel of a graph's partition: the kernel graph in MLIR text (with
// the planning annotations the worker reads), and the chosen candidates, each
// with its generated source, launch rule and argument layout.

#ifndef TIR_SERVER_TUNING_WORK_ITEMS_H_
#define TIR_SERVER_TUNING_WORK_ITEMS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/ir/TirDialect.h"
#include "compiler/planning/Plan.h"
#include "tir/v1/worker_service.grpc.pb.h"

namespace tir::tuning {

struct KernelWork {
  tir::v1::WorkItem item;        // lease fields empty; candidates in rank order
  std::vector<size_t> ranks;     // each candidate's index in the kernel's kept space
  int default_position = -1;     // the default candidate's position in item.candidates
  size_t space_size = 0;         // candidates in the kernel's pruned space
  std::string kind;              // "pointwise", "reduction", "matmul"
  std::vector<int64_t> domain;   // the kernel's iteration domain
  // The graph tensors the kernel graph's arguments and results are.
  std::vector<tir::v1::TensorRef> input_refs, output_refs;
};

// Plans `graph` for `arch` and builds one work item per kernel with its
// `per_kernel` best-ranked candidates (the default candidate always
// included), each carrying its argument records in terms of the graph's
// tensors (INPUT, OUTPUT, INTERMEDIATE). When `signature` is given, its
// inputs, outputs and intermediates are filled (what a caller allocates).
// A kernel gets min(per_kernel, max(2, max_space_fraction of its space))
// candidates. Round 0 spends a quarter of them outside the model's top picks,
// on other families of tile; candidates that emit the same kernel (source
// and launch rule, by SHA-256) are merged into the first (its
// merged_candidate_indices). `model` ranks (default: the analytic model).
// For a graph with dynamic dims, `shapes` (per graph argument, as
// reference::BindShapes gives them) are the sizes it is measured at: each
// item's `shapes` hold its kernel's dynamic inputs at those sizes.
// Errors: those of planning and emission.
absl::StatusOr<std::vector<KernelWork>> BuildWorkItems(GraphOp graph, const target::ArchInfo &arch,
                                                       size_t per_kernel, const tir::v1::MeasurementPolicy &policy,
                                                       tir::v1::KernelBundle *signature = nullptr,
                                                       const planning::CostModel *model = nullptr,
                                                       double max_space_fraction = 1.0,
                                                       const planning::PlanOptions &plan_options = {},
                                                       const std::vector<std::vector<int64_t>> *shapes = nullptr);

// The sizes of kernel graph `kernel`'s dynamic inputs (hints in its argument
// order) when the graph's arguments are `args` and the kernel's inputs are
// the graph values `inputs`. Errors: INTERNAL when one cannot be sized.
absl::StatusOr<std::vector<tir::v1::ShapeHint>> KernelShapes(
    GraphOp graph, const std::vector<std::vector<int64_t>> &args, const std::vector<mlir::Value> &inputs);

}  // namespace tir::tuning

#endif  // TIR_SERVER_TUNING_WORK_ITEMS_H_
