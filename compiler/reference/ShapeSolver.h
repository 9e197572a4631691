// Concrete extents for a graph's dynamic dimensions that its ops agree on.
//
// Verification runs a graph on sample inputs, so every `?` needs a value,
// and the values must satisfy what the ops imply: `add %a, %b` with
// `tensor<?x4>` and `tensor<8x4>` needs the `?` to be 8, a concatenation
// into `tensor<4x5>` fixes its inputs' `?`, a slice with limit 18 needs an
// extent of at least 18, a reshape keeps the element count (its
// dynamic_dims index arguments included).
//
// Algorithm:
// 1. Every dynamic extent (of an input, an op result, an index argument) is
//    a symbol; static extents are constants.
// 2. Ops equate symbols (union-find): elementwise ops and views their
//    operands' and result's dims (a static 1 broadcasts and is skipped),
//    reductions their kept dims, matmuls K and M/N, `dim` its dim,
//    dynamic_dims their extents; slices add lower bounds; concatenations
//    (sums) and reshapes (products) are kept as equations.
// 3. Repeatedly: solve every equation with one unknown; when none is left,
//    give the first free symbol the preferred extent (at least its lower
//    bound). If an equation comes out inconsistent (a product that does not
//    divide), the whole solve is retried with a larger, more divisible
//    preferred extent.

#ifndef TIR_COMPILER_REFERENCE_SHAPESOLVER_H_
#define TIR_COMPILER_REFERENCE_SHAPESOLVER_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "compiler/ir/TirDialect.h"
#include "llvm/ADT/DenseMap.h"

namespace tir::reference {

struct SolvedShapes {
  // Per graph argument: the tensor's shape, or for an index argument its
  // value in element 0 (other scalars: empty).
  std::vector<std::vector<int64_t>> arguments;
  // Whether every equation held (false: the best effort is returned).
  bool consistent = true;
};

SolvedShapes SolveDynamicExtents(GraphOp graph, int64_t preferred);

// The shape of every tensor value of `graph` when its arguments are
// `arguments` (as SolvedShapes::arguments: shapes, index values), by the
// same rules; -1 where the rules leave an extent open.
llvm::DenseMap<mlir::Value, std::vector<int64_t>> ValueShapes(GraphOp graph,
                                                             const std::vector<std::vector<int64_t>> &arguments);

// ValueShapes, and whether every rule held (false: the arguments contradict
// an op, e.g. `add` of a 7 and an 8).
struct InferredShapes {
  llvm::DenseMap<mlir::Value, std::vector<int64_t>> values;
  // Per argument as SolvedShapes::arguments, -1 where open.
  std::vector<std::vector<int64_t>> arguments;
  bool consistent = true;
};
InferredShapes InferShapes(GraphOp graph, const std::vector<std::vector<int64_t>> &arguments);

// A graph argument an extent equals by the rules above, whatever the sizes:
// dim `dim` of tensor argument `argument`, or (dim -1) the value of index
// argument `argument`.
struct ExtentSource {
  unsigned argument = 0;
  int64_t dim = -1;
};
// Per tensor value of `graph`, per dim: the argument extent the rules equate
// it with (the first argument of its class, in argument then dim order), or
// nullopt where none is (a static extent, a sum or product of several, or an
// extent no argument reaches).
llvm::DenseMap<mlir::Value, std::vector<std::optional<ExtentSource>>> ExtentSources(GraphOp graph);

}  // namespace tir::reference

#endif  // TIR_COMPILER_REFERENCE_SHAPESOLVER_H_
