// Conversion of single attributes and types between the wire and MLIR.

#ifndef TIR_COMPILER_CONVERSION_ATTRIBUTEPROTO_H_
#define TIR_COMPILER_CONVERSION_ATTRIBUTEPROTO_H_

#include <string>

#include "absl/status/statusor.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/MLIRContext.h"
#include "tir/v1/graph.pb.h"

namespace tir {

// Encodes `attr` (typed scalars, arrays, enums, dense literals; anything else
// in MLIR syntax).
absl::StatusOr<tir::v1::Attribute> ExportAttribute(mlir::Attribute attr);

// Decodes an attribute named `name`; `what` names its op for messages.
absl::StatusOr<mlir::Attribute> ImportAttribute(const tir::v1::Attribute &attr,
                                                llvm::StringRef name, mlir::MLIRContext *context,
                                                const std::string &what);

// Encodes a value type (strides are set separately).
absl::StatusOr<tir::v1::TensorType> ExportType(mlir::Type type);

// Decodes a value type, enforcing tir's limits; `what` names the value.
absl::StatusOr<mlir::Type> ImportType(const tir::v1::TensorType &type, mlir::MLIRContext *context,
                                      const std::string &what);

}  // namespace tir

#endif  // TIR_COMPILER_CONVERSION_ATTRIBUTEPROTO_H_
