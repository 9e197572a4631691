//===- TirDialect.h - the tir dialect --------------------------*- C++ -*-===//

#ifndef TIR_COMPILER_IR_TIRDIALECT_H_
#define TIR_COMPILER_IR_TIRDIALECT_H_

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/FunctionInterfaces.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "compiler/ir/TirDialect.h.inc"
#include "compiler/ir/TirEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "compiler/ir/TirAttrs.h.inc"

namespace tir {

// Limits every graph must respect (also enforced on the wire).
inline constexpr int64_t kMaxRank = 8;
inline constexpr int64_t kMaxDimension = int64_t{1} << 40;
inline constexpr int64_t kMaxElements = int64_t{1} << 48;

// Whether `type` is an element type tir computes with: i1, f16, bf16, f32,
// f64, si8..si64, ui8..ui64.
bool isTirElementType(mlir::Type type);

// Whether `type` is a ranked tensor of a tir element type with no encoding.
bool isTirTensorType(mlir::Type type);

// Integer element types other than i1.
bool isTirIntegerType(mlir::Type type);

// Checks rank, per-dimension and element-count limits; emits on `op`.
mlir::LogicalResult verifyTensorLimits(mlir::Operation *op, mlir::Type type,
                                       llvm::StringRef what);

// Element-type classes the pointwise verifiers check.
enum class BinaryKind { kNumeric, kFloat, kPow, kLogical };
enum class UnaryKind { kNumeric, kFloat, kLogical };

// Shared custom assembly and verification (PointwiseOps.cpp).
mlir::ParseResult parseBinaryOp(mlir::OpAsmParser &parser, mlir::OperationState &result,
                                bool hasBeta);
void printBinaryOp(mlir::OpAsmPrinter &p, mlir::Operation *op);
mlir::LogicalResult verifyBinaryOp(mlir::Operation *op, BinaryKind kind);
mlir::ParseResult parseUnaryOp(mlir::OpAsmParser &parser, mlir::OperationState &result,
                               bool hasBeta, UnaryKind kind);
void printUnaryOp(mlir::OpAsmPrinter &p, mlir::Operation *op);
mlir::LogicalResult verifyUnaryOp(mlir::Operation *op, UnaryKind kind);

// Whether `a` is one of the layout sources TensorIR's layout analysis
// writes (tensor_source, composite_source, concat_source, reduction_source,
// matmul_source).
bool isLayoutSourceAttr(mlir::Attribute a);

// A reduction mode by name: TensorIR's names, and `mean` for avg.
std::optional<ReductionMode> parseReductionModeName(llvm::StringRef name);

// Whether `predicate` compares floats (o*/u*) rather than integers.
bool isFloatPredicate(CmpPredicate predicate);

}  // namespace tir

#define GET_OP_CLASSES
#include "compiler/ir/TirOps.h.inc"

#endif  // TIR_COMPILER_IR_TIRDIALECT_H_
