// Partitioning a graph into kernels, each with one iteration space.
//
// Kernel kinds and their iteration spaces:
//  - pointwise: one shape S; every op computes values of S (or of shapes that
//    broadcast into S, recomputed per element).
//  - reduction: a row domain S_in reduced over dims D into S_red. Ops before
//    the reductions run in S_in, ops after them in S_red. A kernel is
//    row-resident when a whole row fits the arch's on-chip budget; only then
//    may a reduced value be broadcast back over its row (softmax, layernorm)
//    and several reductions over the same rows chain; a streaming kernel
//    takes one exception, a max whose only use is the exp(a - max) an
//    add-reduction sums, computed together online (OnlineSoftmax.h).
//  - matmul: C[batch, M, N] = A[batch, M, K] x B[batch, K, N], with
//    elementwise prologues on A and B and an epilogue in C's shape.
// A gather computes its result per element (an indirect load), like a
// pointwise op, but the data it reads is picked at run time: the data
// operand is never computed in the gather's kernel (it is a graph input or
// written out by an earlier kernel), and the kernel reads it from memory.
//
// Algorithm (producer-into-consumer fusion, like XLA's, from outputs back):
// 1. Visit ops in reverse order. An op whose users are all in one kernel K
//    joins K when its result fits one of K's domains (rules above); a cheap
//    leaf op (pointwise, reading only graph inputs, constants, reduction
//    results or other leaves) used by several kernels is cloned into each
//    (one reading a reduction result only when the graph does not return it
//    and no matmul stages it); otherwise an op whose users
//    span kernels joins the one that runs first, if it fits, and its value is
//    written out for the others. An op that fits nowhere starts a new kernel,
//    and the reason is recorded.
// 2. Kernels run in the reverse of their creation order: a value computed in
//    kernel i and used in kernel j always has i created after j, so the
//    order is a valid schedule.
// 3. Each kernel's inputs are the values its ops read from outside it; its
//    outputs are the values read by later kernels or returned by the graph
//    (the intermediates between kernels are global tensors).

#ifndef TIR_COMPILER_PLANNING_PARTITION_H_
#define TIR_COMPILER_PLANNING_PARTITION_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "compiler/ir/TirDialect.h"
#include "compiler/target/ArchTable.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace tir::planning {

enum class KernelKind { kPointwise, kReduction, kMatmul };
const char *KernelKindName(KernelKind kind);

// The iteration space of a kernel; -1 marks a dynamic extent.
struct IterationSpace {
  KernelKind kind = KernelKind::kPointwise;
  std::vector<int64_t> shape;        // pointwise: S; reduction: S_in; matmul: C's shape
  std::vector<int> reduced_dims;     // reduction: D (sorted)
  int64_t m = 0, n = 0, k = 0;       // matmul
  std::vector<int64_t> batch;        // matmul batch extents
  bool row_resident = false;         // reduction: whole rows stay on chip
  bool online = false;               // reduction: a max and the sum of exp(a - max) in one pass

  // Parallel extents (reduction: S_in without D; matmul: batch, M, N).
  std::vector<int64_t> Parallel() const;
  // Reduced extents (reduction: S_in at D; matmul: {K}).
  std::vector<int64_t> Reduced() const;
  // "pointwise [64, 128]", "reduction rows [64] x reduce [4096] (row-resident)",
  // "matmul batch [] M=128 N=256 K=64".
  std::string ToString() const;
};

struct Kernel {
  int index = 0;                          // execution order
  IterationSpace space;
  std::vector<mlir::Operation *> ops;     // in graph order; cloned leaves included
  std::vector<mlir::Value> inputs;        // read from outside the kernel
  std::vector<mlir::Value> outputs;       // written for later kernels or the graph
  std::string reason;                     // why this kernel is separate from the ones it feeds
};

struct Partition {
  std::vector<Kernel> kernels;            // in execution order
  // One line per decision to split, e.g. "kernel 0 | kernel 1: ...".
  std::vector<std::string> splits;
};

// Partitions `graph` for `arch` (the arch decides what fits on chip).
// First `graph` is rewritten so that each kernel can be built from its own
// ops: a result that is also an input or an earlier result gets a copy, and
// dynamic extents only the graph's shape inference determines become
// dynamic_dims (DynamicDims.h).
// Past `deadline` it stops: RESOURCE_EXHAUSTED, reason LIMIT_EXCEEDED
// (planningBudgetMs).
// Past `max_kernels` kernels (0: no bound) it stops as they are made
// (maxKernelsPerGraph), and past kMaxKernelOps ops in all its kernels (a
// leaf is recomputed in every kernel that reads it: a chain of D leaves
// read by U kernels is D x U ops).
inline constexpr size_t kMaxKernelOps = size_t{1} << 20;
absl::StatusOr<Partition> PartitionGraph(GraphOp graph, const target::ArchInfo &arch,
                                         absl::Time deadline = absl::InfiniteFuture(), size_t max_kernels = 0);

// The error a graph of more than `max_kernels` kernels gets.
absl::Status KernelsExceeded(size_t max_kernels, size_t kernels);

// The error a plan past its time budget gets.
absl::Status PlanningBudgetExceeded();

// Builds a module with one tir.graph per kernel (@<name>_k<i>, annotated with
// tir.kernel_kind, tir.iteration_space, tir.iteration_domain (extents, -1 for
// dynamic; matmul: batch..., M, N, K), tir.reduced_dims and tir.split_reason) and the stitching
// graph @<name> of the original signature whose body launches them in order.
mlir::OwningOpRef<mlir::ModuleOp> BuildPartitionedModule(GraphOp graph, const Partition &partition);

}  // namespace tir::planning

#endif  // TIR_COMPILER_PLANNING_PARTITION_H_
