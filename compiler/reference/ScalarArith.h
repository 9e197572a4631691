// Evaluates the scalar ops of a reduce_ud body (compiler/ir/ReduceBody.h),
// bit-exact: an integer is its two's-complement bit pattern of its width
// (zero-extended in `bits`; signless, the op decides), a float is its value
// rounded to its type after every op. Generated kernels implement the same
// definitions in the runtime's tir_arith_* helpers.

#ifndef TIR_COMPILER_REFERENCE_SCALARARITH_H_
#define TIR_COMPILER_REFERENCE_SCALARARITH_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "llvm/ADT/ArrayRef.h"
#include "mlir/IR/Operation.h"

namespace tir::reference {

struct ScalarValue {
  double f = 0;       // floats
  uint64_t bits = 0;  // integers (and i1), zero-extended
};

// The value of `op` applied to `operands`. Errors: UNSUPPORTED_OP for an op
// ReduceBody.h does not list.
absl::StatusOr<ScalarValue> EvalBodyOp(mlir::Operation &op, llvm::ArrayRef<ScalarValue> operands);

// `v` as an integer body value of `width` bits (two's complement).
ScalarValue IntScalar(int64_t v, unsigned width);
// The signed value of `bits` read as `width` bits.
int64_t SignedValue(uint64_t bits, unsigned width);
// `v` rounded to float type `t` (f16, bf16, f32, f64, f8).
double RoundToType(double v, mlir::Type t);

}  // namespace tir::reference

#endif  // TIR_COMPILER_REFERENCE_SCALARARITH_H_
