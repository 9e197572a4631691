//===- ShapeRules.h - TensorIR's shape merge rules ------------*- C++ -*-===//
//
// How a result extent follows from operand extents (kDynamic is `?`):
//  - inherited: the result extent is the source extent, static or dynamic.
//  - equal merge: a dynamic extent is refined by a static one; two different
//    static extents do not merge.
//  - broadcast merge: equal merge, except that a static 1 yields to the other
//    extent (`1` with `?` stays `?`: the dynamic side may be 1 as well).

#ifndef TIR_COMPILER_IR_SHAPERULES_H_
#define TIR_COMPILER_IR_SHAPERULES_H_

#include <cstdint>
#include <optional>

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

namespace tir {

// Merges two extents by the equal rule; nullopt when they conflict.
std::optional<int64_t> equalMerge(int64_t a, int64_t b);

// Merges two extents by the broadcast rule; nullopt when they conflict.
std::optional<int64_t> broadcastMerge(int64_t a, int64_t b);

// Merges two shapes of equal rank dimension by dimension; on conflict returns
// nullopt and sets `conflictDim`.
std::optional<llvm::SmallVector<int64_t>> broadcastMergeShapes(llvm::ArrayRef<int64_t> a,
                                                               llvm::ArrayRef<int64_t> b,
                                                               int64_t *conflictDim = nullptr);

// Product of the extents; nullopt if any is dynamic or the product overflows int64.
std::optional<int64_t> staticElementCount(llvm::ArrayRef<int64_t> shape);

}  // namespace tir

#endif  // TIR_COMPILER_IR_SHAPERULES_H_
