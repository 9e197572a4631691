//===- ReduceBody.h - the scalar ops a reduce_ud body may hold -*- C++ -*-===//
//
// A reduce_ud combiner is written with upstream MLIR arith ops on scalars, as
// TensorIR writes it (`arith.addf`, `arith.maxsi`, `arith.select`,
// `arith.cmpf`, ...; `arith.maximumf` / `arith.minimumf` arrive as MLIR 16's
// `arith.maxf` / `arith.minf`, see TensorIrCompat.h). Integers in a body are
// signless (`i32` for a `si32` or `ui32` tensor): each op says whether it
// treats them as signed. This header names the ops tir evaluates (the
// reference interpreter, compiler/reference/ScalarArith.h) and generates
// code for (the runtime's tir_arith_* helpers); the verifier refuses others.
//
// Where MLIR leaves a result undefined, tir defines it, the same way in the
// interpreter and in kernels: integer division or remainder by zero is 0,
// INT_MIN / -1 wraps, a shift by the width or more gives 0 (arithmetic right
// shift: the sign), float to integer conversions map NaN to 0 and saturate.

#ifndef TIR_COMPILER_IR_REDUCEBODY_H_
#define TIR_COMPILER_IR_REDUCEBODY_H_

#include <optional>
#include <string>

#include "mlir/IR/Operation.h"

namespace tir {

enum class BodyOp {
  kConstant,
  // Floats, rounded to their type after every op.
  kAddF, kSubF, kMulF, kDivF, kRemF, kNegF, kMaxF, kMinF, kCmpF, kExtF, kTruncF,
  // Integers (signless bit patterns of their width).
  kAddI, kSubI, kMulI, kDivSI, kDivUI, kCeilDivSI, kCeilDivUI, kFloorDivSI, kRemSI, kRemUI,
  kMaxSI, kMaxUI, kMinSI, kMinUI, kAndI, kOrI, kXOrI, kShLI, kShRSI, kShRUI, kCmpI,
  kExtSI, kExtUI, kTruncI,
  // Conversions and choice.
  kSIToFP, kUIToFP, kFPToSI, kFPToUI, kSelect,
};

// The body op `op` is, or nullopt when tir does not evaluate it.
std::optional<BodyOp> classifyBodyOp(mlir::Operation &op);

// The op names classifyBodyOp accepts, for messages.
std::string supportedBodyOpNames();

}  // namespace tir

#endif  // TIR_COMPILER_IR_REDUCEBODY_H_
