//===- TirDialect.cpp - tir dialect, types and attributes -----------------===//

#include "compiler/ir/TirDialect.h"

#include "compiler/ir/ShapeRules.h"
#include "compiler/ir/StrideAttr.h"
#include "compiler/ir/TileHints.h"
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

std::optional<ReductionMode> parseReductionModeName(llvm::StringRef name) {
  if (name == "mean") return ReductionMode::avg;
  return symbolizeReductionMode(name);
}

bool isFloatPredicate(CmpPredicate predicate) {
  return static_cast<uint32_t>(predicate) <= static_cast<uint32_t>(CmpPredicate::ule);
}

//===----------------------------------------------------------------------===//
// Layout attributes
//===----------------------------------------------------------------------===//

LogicalResult TensorSourceAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                       int64_t tensor, int64_t offset, llvm::StringRef layout,
                                       llvm::ArrayRef<int32_t> mapping) {
  // -1 marks a value not tied to a graph tensor (an intermediate, a constant).
  if (tensor < -1) return emitError() << "tensor_source tensor index must be >= -1, got " << tensor;
  if (offset < 0) return emitError() << "tensor_source offset must be >= 0, got " << offset;
  std::string why;
  int dynamic = 0;
  if (!parseLayoutString(layout, nullptr, &why, &dynamic)) {
    return emitError() << "invalid layout \"" << layout << "\": " << why;
  }
  if (!mapping.empty()) {
    // Which run-time value supplies each `?`: a permutation of 0..dynamic-1.
    llvm::SmallVector<bool> seen(dynamic, false);
    for (int32_t m : mapping) {
      if (m < 0 || m >= dynamic || seen[m]) {
        return emitError() << "tensor_source mapping must be a permutation of the layout's " << dynamic
                           << " dynamic value(s)";
      }
      seen[m] = true;
    }
    if (static_cast<int>(mapping.size()) != dynamic) {
      return emitError() << "layout has " << dynamic << " dynamic size(s) but " << mapping.size()
                         << " dynamic offset(s) provided";
    }
  }
  return success();
}

bool isLayoutSourceAttr(Attribute a) {
  return a.isa<TensorSourceAttr, CompositeSourceAttr, ConcatSourceAttr, ReductionSourceAttr, MatmulSourceAttr>();
}

LogicalResult ConcatSourceAttr::verify(function_ref<InFlightDiagnostic()> emitError, int64_t dim,
                                       llvm::ArrayRef<Attribute> sources, llvm::ArrayRef<int32_t> arguments) {
  if (sources.empty()) return emitError() << "concat_source needs at least one source";
  if (dim < 0) return emitError() << "concat_source dimension must be >= 0, got " << dim;
  for (Attribute a : sources) {
    if (!isLayoutSourceAttr(a)) return emitError() << "concat_source entries must be layout sources, got " << a;
  }
  if (!arguments.empty() && arguments.size() != sources.size()) {
    return emitError() << "argument index must have the same size as sources";
  }
  return success();
}

Attribute ConcatSourceAttr::parse(AsmParser &parser, Type) {
  int64_t dim = 0;
  if (parser.parseLess() || parser.parseKeyword("dim") || parser.parseEqual() || parser.parseInteger(dim)) return {};
  llvm::SmallVector<Attribute> sources;
  llvm::SmallVector<int32_t> arguments;
  while (succeeded(parser.parseOptionalComma())) {
    if (succeeded(parser.parseOptionalLSquare())) {
      auto one = [&]() -> ParseResult {
        int32_t v = 0;
        if (parser.parseInteger(v)) return failure();
        arguments.push_back(v);
        return success();
      };
      if (parser.parseCommaSeparatedList(one) || parser.parseRSquare()) return {};
      break;
    }
    Attribute a;
    if (parser.parseAttribute(a)) return {};
    sources.push_back(a);
  }
  if (parser.parseGreater()) return {};
  return ConcatSourceAttr::getChecked([&] { return parser.emitError(parser.getCurrentLocation()); },
                                      parser.getContext(), dim, sources, arguments);
}

void ConcatSourceAttr::print(AsmPrinter &printer) const {
  printer << "<dim = " << getDim();
  for (Attribute a : getSources()) printer << ", " << a;
  if (!getArguments().empty()) {
    printer << ", [";
    llvm::interleaveComma(getArguments(), printer);
    printer << "]";
  }
  printer << ">";
}

LogicalResult ReductionSourceAttr::verify(function_ref<InFlightDiagnostic()> emitError, llvm::StringRef view,
                                          Attribute source) {
  std::string why;
  if (!parseLayoutString(view, nullptr, &why)) return emitError() << "invalid view \"" << view << "\": " << why;
  if (!isLayoutSourceAttr(source)) return emitError() << "reduction_source needs a layout source, got " << source;
  return success();
}

LogicalResult MatmulSourceAttr::verify(function_ref<InFlightDiagnostic()> emitError, llvm::StringRef view,
                                       int64_t b, int64_t m, int64_t n, int64_t k, Attribute lhs, Attribute rhs) {
  std::string why;
  if (!parseLayoutString(view, nullptr, &why)) return emitError() << "invalid view \"" << view << "\": " << why;
  if (b < 1 || m < 1 || n < 1 || k < 1) return emitError() << "matmul_source extents must be positive";
  if (!isLayoutSourceAttr(lhs) || !isLayoutSourceAttr(rhs)) {
    return emitError() << "matmul_source operands must be layout sources";
  }
  return success();
}

Attribute IterSpaceDimDomainsAttr::parse(AsmParser &parser, Type) {
  llvm::SmallVector<bool> defined;
  auto one = [&]() -> ParseResult {
    std::string word;
    llvm::SMLoc loc = parser.getCurrentLocation();
    if (parser.parseKeywordOrString(&word)) return failure();
    if (word != "def" && word != "undef") {
      return parser.emitError(loc) << "expected def or undef, got '" << word << "'";
    }
    defined.push_back(word == "def");
    return success();
  };
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, one)) return {};
  return IterSpaceDimDomainsAttr::get(parser.getContext(), defined);
}

void IterSpaceDimDomainsAttr::print(AsmPrinter &printer) const {
  printer << '[';
  llvm::interleaveComma(getDefined(), printer, [&](bool d) { printer << (d ? "def" : "undef"); });
  printer << ']';
}

LogicalResult CompositeSourceAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                          llvm::ArrayRef<Attribute> sources) {
  if (sources.empty()) return emitError() << "composite_source needs at least one source";
  for (Attribute a : sources) {
    if (!isLayoutSourceAttr(a)) return emitError() << "composite_source entries must be layout sources, got " << a;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Discardable tir.* attributes on ops
//===----------------------------------------------------------------------===//

LogicalResult TirDialect::verifyOperationAttribute(Operation *op, NamedAttribute attr) {
  const llvm::StringRef name = attr.getName().strref();
  if (name == kLayoutAttr) {
    if (!isLayoutSourceAttr(attr.getValue())) {
      return op->emitOpError() << "expects " << name
                               << " to be a layout source (#tir.tensor_source, ...), got "
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
  // TensorIR's analysis annotations: accepted and ignored.
  if (isAnalysisAttribute(name)) return success();
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
