// Affine access maps: how each value of a kernel graph is indexed from the
// kernel's iteration domain (tir.iteration_domain). Computing them annotates
// the graph (tir.access on ops, tir.iter_space_map on single-map arguments)
// and may clone pointwise ops that are needed under several maps.

#ifndef TIR_COMPILER_PLANNING_ACCESSMAPS_H_
#define TIR_COMPILER_PLANNING_ACCESSMAPS_H_

#include "compiler/ir/TirDialect.h"
#include "llvm/ADT/DenseMap.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/Support/LogicalResult.h"

namespace tir::planning {

struct AccessMaps {
  // Map of each op's results (all results of an op share it).
  llvm::DenseMap<mlir::Operation *, mlir::AffineMap> results;
  // Map under which each use reads its operand (tensor operands only).
  llvm::DenseMap<mlir::OpOperand *, mlir::AffineMap> operands;
};

// Whether a reshape from `in` to `out` only inserts or removes unit dims
// (the other extents, dynamic ones included, equal and in order): its
// index relation is a relabeling, affine whatever the extents.
bool UnitDimsOnly(llvm::ArrayRef<int64_t> in, llvm::ArrayRef<int64_t> out);

// Computes the maps of a kernel graph; emits an error and fails on a conflict
// that needs a partition boundary (a non-pointwise value needed under two
// maps). With `conflict`, the op is stored there instead of an error.
mlir::FailureOr<AccessMaps> ComputeAccessMaps(GraphOp kernel, mlir::Operation **conflict = nullptr);

}  // namespace tir::planning

#endif  // TIR_COMPILER_PLANNING_ACCESSMAPS_H_
