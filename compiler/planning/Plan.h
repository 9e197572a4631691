// Full planning of a graph for an arch: partition, per-kernel candidate
// spaces, cost-model ranking. The result is the wire message tir.v1.Plan, so
// `tirctl plan -o json` and a service print the same thing.

#ifndef TIR_COMPILER_PLANNING_PLAN_H_
#define TIR_COMPILER_PLANNING_PLAN_H_

#include <string>

#include "absl/status/statusor.h"
#include "compiler/planning/CostModel.h"
#include "compiler/planning/Partition.h"
#include "tir/v1/kernel.pb.h"

namespace tir::planning {

struct PlanOptions {
  // CompileOptions.precision: "" / "ieee", or "tf32" (f32 matmuls on tf32
  // tensor cores where the arch has them).
  std::string precision;
  // A dynamic graph's argument shapes (reference::BindShapes' form) the
  // candidates are ranked for; null: dynamic extents are assumed
  // (kAssumedDynamicExtent).
  const std::vector<std::vector<int64_t>> *shapes = nullptr;
  // Bounds on what one plan may cost (RESOURCE_EXHAUSTED, LIMIT_EXCEEDED,
  // naming the limit): its time (planningBudgetMs) and the candidates kept
  // over all its kernels (maxPlannedCandidates; 0: no bound), each held
  // with its prediction until the plan is done.
  absl::Time deadline = absl::InfiniteFuture();
  size_t max_candidates = 0;
  // Kernels the graph may be partitioned into (maxKernelsPerGraph; 0: no
  // bound): each is tuned, and built by the coordinator, on its own.
  size_t max_kernels = 0;
};

// INVALID_ARGUMENT (INVALID_OPTIONS) unless `precision` is "", "ieee" or "tf32".
absl::Status CheckPrecision(const std::string &precision);

struct PlannedGraph {
  Partition partition;
  std::vector<CandidateSpace> spaces;          // per kernel, ranked best first
  std::vector<std::vector<Prediction>> predictions;
  tir::v1::Plan plan;                          // the summary, `top` candidates per kernel
};

// Plans `graph` for `arch`, ranking with `model` and keeping `top` candidates
// per kernel in the summary.
absl::StatusOr<PlannedGraph> PlanGraph(GraphOp graph, const target::ArchInfo &arch, const CostModel &model,
                                       int top = 5, const PlanOptions &options = {});

// The wire form of candidate `c` of a `kind` kernel at `rank` with its
// prediction (and the model inputs behind it).
tir::v1::Candidate CandidateToProto(const TileCandidate &c, const Prediction &p, KernelKind kind, int rank);

// Multi-line human-readable rendering of a plan.
std::string PlanToText(const tir::v1::Plan &plan);

}  // namespace tir::planning

#endif  // TIR_COMPILER_PLANNING_PLAN_H_
