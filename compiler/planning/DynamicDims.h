// Sizes that only the whole graph knows, made explicit before partitioning.
//
// Some ops do not carry every dynamic extent of their result: a broadcast to
// `?` from a unit dim (`tensor<?x1xf32> -> tensor<?x?xf32>`, as TensorIR
// writes a softmax), a splat or iota without dynamic_dims, a reshape with
// several `?`. The graph's shape inference ties those extents to others (the
// `sub %x, %b` after the broadcast makes its `?` the one of %x), but a kernel
// graph holds only some of the graph's ops: the op that tied the extent may
// be in another kernel, and the kernel, the reference interpreter that checks
// it and the launcher would be left with an extent nothing gives.
//
// Algorithm:
// 1. Shape inference without sizes (ShapeSolver's ExtentSources) names, per
//    dim of each value, a graph argument whose extent the rules equate it
//    with: a dim of a tensor argument, or an index argument.
// 2. Each op that leaves a dynamic result extent open gets dynamic_dims
//    operands for all of its dynamic extents (the verifier wants all or
//    none): an index argument as it is, or `dim %arg dimension = j` (one per
//    argument dim, at the top of the graph). An op with an extent no
//    argument determines keeps its form.
// 3. Partitioning then places each `dim` in the kernels that need it (a leaf
//    read from a graph input), so every kernel graph carries its sizes.

#ifndef TIR_COMPILER_PLANNING_DYNAMICDIMS_H_
#define TIR_COMPILER_PLANNING_DYNAMICDIMS_H_

#include "compiler/ir/TirDialect.h"

namespace tir::planning {

// Rewrites `graph` as above; returns how many ops were given dynamic_dims.
int MaterializeDynamicDims(GraphOp graph);

}  // namespace tir::planning

#endif  // TIR_COMPILER_PLANNING_DYNAMICDIMS_H_
