//===- DimBounds.h - tir.bounds: upper bounds of dynamic dims --*- C++ -*-===//
//
// A graph argument's dynamic dim may carry an upper bound, as XLA's bounded
// dynamic shapes do (`s32[<=6,2]`, the result of `nonzero`): the size is
// known only at launch but never exceeds the bound. tir spells it with the
// argument attribute `tir.bounds` (TensorIR's `nv_tensor_ir.` prefix works
// too), in either of two forms, one entry per dim:
//
//   %idx: tensor<?x2xsi32> {tir.bounds = "[<=6,2]"}        // XLA's spelling
//   %idx: tensor<?x2xsi32> {tir.bounds = array<i64: 6, 2>}  // the same
//
// For a dynamic dim the entry is its bound (`<=N` or N in the string, N in
// the array; N >= 1) or `?` / -1 for none; for a static dim it is the dim's
// size (or `?` / -1). The square brackets are optional. The attribute is
// carried through the protobuf form like every signature attribute.
//
// A size over its bound is refused when the graph is compiled for it, and
// the bound caps the dim's shape bucket (server/coordinator).

#ifndef TIR_COMPILER_IR_DIMBOUNDS_H_
#define TIR_COMPILER_IR_DIMBOUNDS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinTypes.h"

namespace tir {

// Per dim of `type`: the dynamic dim's bound, 0 where a dynamic dim has
// none, and the size of a static dim. nullopt (with `why` set) when `value`
// is not a valid tir.bounds for `type`.
std::optional<std::vector<int64_t>> parseDimBounds(mlir::Attribute value, mlir::RankedTensorType type,
                                                   std::string *why);

}  // namespace tir

#endif  // TIR_COMPILER_IR_DIMBOUNDS_H_
