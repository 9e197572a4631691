// Mapping between tir.v1.DType and MLIR element types.

#ifndef TIR_COMPILER_CONVERSION_DTYPES_H_
#define TIR_COMPILER_CONVERSION_DTYPES_H_

#include <optional>

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"
#include "tir/v1/graph.pb.h"

namespace tir {

// The MLIR type of `dtype`; null for DTYPE_UNSPECIFIED or unknown values.
mlir::Type ToMlirType(tir::v1::DType dtype, mlir::MLIRContext *context);

// The DType of `type`; nullopt when the type has none (e.g. signless i32).
std::optional<tir::v1::DType> ToDType(mlir::Type type);

// Short name used in messages and generated code: "f32", "si8", "index".
const char *DTypeName(tir::v1::DType dtype);

}  // namespace tir

#endif  // TIR_COMPILER_CONVERSION_DTYPES_H_
