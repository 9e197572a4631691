// C types of tir's dtypes in generated kernels: how each is stored in
// buffers, computed with, loaded, stored and rounded; C literals.

#ifndef TIR_COMPILER_CODEGEN_EMITTYPES_H_
#define TIR_COMPILER_CODEGEN_EMITTYPES_H_

#include <string>

#include "absl/status/statusor.h"
#include "mlir/IR/Types.h"

namespace tir::codegen::detail {

// How a dtype is stored in memory and computed with.
struct TypeInfo {
  std::string storage;   // C type in buffers
  std::string compute;   // C type of values
  std::string load;      // expression template: %s is the storage value
  std::string store;     // expression template: %s is the compute value
  std::string round;     // rounds a compute value to the dtype ("%s" placeholder)
  bool is_float = false, is_unsigned = false, is_bool = false;
};

// UNIMPLEMENTED with `reason` (UNSUPPORTED_OP, UNSUPPORTED_DTYPE).
absl::Status Unsupported(const std::string &reason, const std::string &m);

// `tmpl` with every "%s" replaced by `x`.
std::string Sub(const std::string &tmpl, const std::string &x);

// The C types of `t` (or of its element type). Errors: UNSUPPORTED_DTYPE.
absl::StatusOr<TypeInfo> Info(mlir::Type t);

// The store template of a value already rounded to `t`'s dtype (every
// value a kernel computes is): for bf16 its high half, no conversion.
std::string StoreRounded(const TypeInfo &t);

// A C literal for `v` (TIR_NAN / TIR_INF for the non-finite).
std::string Literal(double v);

}  // namespace tir::codegen::detail

#endif  // TIR_COMPILER_CODEGEN_EMITTYPES_H_
