//===- TirDialect.cpp - tir dialect, types and attributes -----------------===//

#include "compiler/ir/TirDialect.h"

#include "compiler/ir/ShapeRules.h"
#include "compiler/ir/StrideAttr.h"
#include "llvm/ADT/TypeSwitch.h"
#include "mlir/IR/DialectImplementation.h"

using namespace mlir;

#include "compiler/ir/TirDialect.cpp.inc"
#include "compiler/ir/TirEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "compiler/ir/TirAttrs.cpp.inc"

namespace tir {

void TirDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "compiler/ir/TirOps.cpp.inc"
      >();
  registerAttributes();
}

void TirDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "compiler/ir/TirAttrs.cpp.inc"
      >();
}

bool isTirElementType(Type type) {
  if (type.isF16() || type.isBF16() || type.isF32() || type.isF64()) return true;
  if (type.isFloat8E4M3FN() || type.isFloat8E5M2()) return true;
  if (auto i = type.dyn_cast<IntegerType>()) {
    if (i.getWidth() == 1) return i.isSignless();
    if (i.isSignless()) return false;  // tir integers carry their signedness
    return i.getWidth() == 8 || i.getWidth() == 16 || i.getWidth() == 32 || i.getWidth() == 64;
  }
  return false;
}

bool isTirIntegerType(Type type) {
  auto i = type.dyn_cast<IntegerType>();
  return i && i.getWidth() != 1 && isTirElementType(type);
}

bool isTirTensorType(Type type) {
  auto t = type.dyn_cast<RankedTensorType>();
  return t && !t.getEncoding() && isTirElementType(t.getElementType());
}

LogicalResult verifyTensorLimits(Operation *op, Type type, llvm::StringRef what) {
  auto t = type.dyn_cast<RankedTensorType>();
  if (!t) return success();
  if (t.getRank() > kMaxRank) {
    return op->emitOpError() << what << " has rank " << t.getRank()
                             << ", above the limit of " << kMaxRank;
  }
  for (int64_t i = 0; i < t.getRank(); ++i) {
    const int64_t d = t.getDimSize(i);
    if (!ShapedType::isDynamic(d) && d > kMaxDimension) {
      return op->emitOpError() << what << " dimension " << i << " has extent " << d
                               << ", above the limit of 2^40";
    }
  }
  if (t.hasStaticShape()) {
    std::optional<int64_t> n = staticElementCount(t.getShape());
    if (!n || *n > kMaxElements) {
      return op->emitOpError() << what << " " << type
                               << " has more elements than the limit of 2^48";
    }
  }
  return success();
}

bool isFloatPredicate(CmpPredicate predicate) {
  return static_cast<uint32_t>(predicate) <= static_cast<uint32_t>(CmpPredicate::ule);
}

//===----------------------------------------------------------------------===//
// Layout attributes
//===----------------------------------------------------------------------===//

LogicalResult TensorSourceAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                       int64_t tensor, int64_t offset, llvm::StringRef layout) {
  // -1 marks a value not tied to a graph tensor (an intermediate).
  if (tensor < -1) return emitError() << "tensor_source tensor index must be >= -1, got " << tensor;
  if (offset < 0) return emitError() << "tensor_source offset must be >= 0, got " << offset;
  std::string why;
  if (!parseLayoutString(layout, nullptr, &why)) {
    return emitError() << "invalid layout \"" << layout << "\": " << why;
  }
  return success();
}

LogicalResult CompositeSourceAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                          llvm::ArrayRef<Attribute> sources) {
  if (sources.empty()) return emitError() << "composite_source needs at least one source";
  for (Attribute a : sources) {
    if (!a.isa<TensorSourceAttr, CompositeSourceAttr>()) {
      return emitError() << "composite_source entries must be tensor_source or "
                            "composite_source attributes, got "
                         << a;
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Discardable tir.* attributes on ops
//===----------------------------------------------------------------------===//

LogicalResult TirDialect::verifyOperationAttribute(Operation *op, NamedAttribute attr) {
  const llvm::StringRef name = attr.getName().strref();
  if (name == kLayoutAttr) {
    if (!attr.getValue().isa<TensorSourceAttr, CompositeSourceAttr>()) {
      return op->emitOpError() << "expects " << name
                               << " to be a #tir.tensor_source or #tir.composite_source, got "
                               << attr.getValue();
    }
    return success();
  }
  if (name == "tir.tensor_type" || name == "tir.dynamic_tensor_type") {
    auto type = attr.getValue().dyn_cast<TypeAttr>();
    if (!type || !isTirTensorType(type.getValue())) {
      return op->emitOpError() << "expects " << name << " to be a tir tensor type, got "
                               << attr.getValue();
    }
    return success();
  }
  // Annotations written by tir's own passes.
  static constexpr llvm::StringLiteral kPassAttrs[] = {
      "tir.partition", "tir.kernel_kind", "tir.split_reason", "tir.iteration_space",
      "tir.access", "tir.source_graph", "tir.kernels", "tir.intermediate",
      "tir.iteration_domain", "tir.reduced_dims"};
  for (llvm::StringLiteral known : kPassAttrs) {
    if (name == known) return success();
  }
  return op->emitOpError() << "unknown tir attribute '" << name << "'";
}

}  // namespace tir
