//===- GraphOp.cpp - tir.graph and tir.results ----------------------------===//

#include "compiler/ir/StrideAttr.h"
#include "compiler/ir/TirDialect.h"
#include "mlir/IR/FunctionImplementation.h"

using namespace mlir;

namespace tir {
namespace {

bool isGraphValueType(Type t) { return isTirTensorType(t) || isTirElementType(t) || t.isIndex(); }

// Checks one argument's or result's attribute dictionary.
LogicalResult verifySignatureAttrs(GraphOp op, DictionaryAttr attrs, Type type,
                                   llvm::StringRef what, unsigned index) {
  if (!attrs) return success();
  auto tensor = type.dyn_cast<RankedTensorType>();
  for (NamedAttribute attr : attrs) {
    const llvm::StringRef name = attr.getName().strref();
    Attribute value = attr.getValue();
    auto needsTensor = [&]() -> LogicalResult {
      if (tensor) return success();
      return op.emitOpError() << "expects " << name << " attribute to be applied to tensor type, "
                              << "but got " << type << " on " << what << " #" << index;
    };
    if (name == TirDialect::kStrideAttr) {
      if (failed(needsTensor())) return failure();
      auto str = value.dyn_cast<StringAttr>();
      if (!str) {
        return op.emitOpError() << "expects stride is a string such as \"(8,1)\", but got "
                                << value << " on " << what << " #" << index;
      }
      std::string why;
      auto strides = parseStrideString(str.getValue(), &why);
      if (!strides) {
        return op.emitOpError() << "expects stride to be a tuple of positive integers or '?', "
                                   "but got \""
                                << str.getValue() << "\" on " << what << " #" << index << ": "
                                << why;
      }
      if (static_cast<int64_t>(strides->size()) != tensor.getRank()) {
        return op.emitOpError() << "expects stride is valid for corresponding shape, but got \""
                                << str.getValue() << "\" (" << strides->size()
                                << " entries) for " << type << " on " << what << " #" << index;
      }
      for (int64_t s : *strides) {
        if (s == 0) {
          return op.emitOpError() << "stride=0 is not allowed in graph " << what
                                  << " stride attribute \"" << str.getValue()
                                  << "\"; broadcast a unit dimension instead";
        }
      }
      continue;
    }
    if (name == TirDialect::kAlignmentAttr) {
      auto i = value.dyn_cast<IntegerAttr>();
      if (!i) {
        return op.emitOpError() << "expects alignment is an integer attribute, but got " << value;
      }
      if (failed(needsTensor())) return failure();
      if (i.getInt() < 1) {
        return op.emitOpError() << "expects alignment >= 1, but got " << i.getInt();
      }
      continue;
    }
    if (name == TirDialect::kCostAttr) {
      if (!value.isa<IntegerAttr>()) {
        return op.emitOpError() << "expects cost is an integer attribute, but got " << value;
      }
      continue;
    }
    if (name == TirDialect::kIterSpaceMapAttr) {
      if (failed(needsTensor())) return failure();
      if (!value.isa<AffineMapAttr>()) {
        return op.emitOpError() << "expects iter_space_map is an affine map, but got " << value;
      }
      continue;
    }
    if (name == TirDialect::kLayoutAttr) {
      if (!value.isa<TensorSourceAttr, CompositeSourceAttr>()) {
        return op.emitOpError() << "expects layout is a #tir.tensor_source or "
                                   "#tir.composite_source, but got "
                                << value;
      }
      continue;
    }
    return op.emitOpError() << "does not support signature attribute `" << name << "` on "
                            << what << " #" << index
                            << " (known: tir.stride, tir.alignment, tir.cost, "
                               "tir.iter_space_map, tir.layout)";
  }
  return success();
}

}  // namespace

void GraphOp::build(OpBuilder &builder, OperationState &state, llvm::StringRef name,
                    FunctionType type) {
  state.addAttribute(SymbolTable::getSymbolAttrName(), builder.getStringAttr(name));
  state.addAttribute(getFunctionTypeAttrName(state.name), TypeAttr::get(type));
  Region *body = state.addRegion();
  Block *block = new Block();
  body->push_back(block);
  for (Type t : type.getInputs()) block->addArgument(t, state.location);
}

llvm::StringRef GraphOp::getDefaultDialect() { return "tir"; }

ParseResult GraphOp::parse(OpAsmParser &parser, OperationState &result) {
  auto buildType = [](Builder &builder, llvm::ArrayRef<Type> args, llvm::ArrayRef<Type> results,
                      function_interface_impl::VariadicFlag, std::string &) {
    return builder.getFunctionType(args, results);
  };
  return function_interface_impl::parseFunctionOp(
      parser, result, /*allowVariadic=*/false, getFunctionTypeAttrName(result.name), buildType,
      getArgAttrsAttrName(result.name), getResAttrsAttrName(result.name));
}

void GraphOp::print(OpAsmPrinter &p) {
  function_interface_impl::printFunctionOp(p, *this, /*isVariadic=*/false,
                                           getFunctionTypeAttrName().getValue(),
                                           getArgAttrsAttrName(), getResAttrsAttrName());
}

LogicalResult GraphOp::verify() {
  for (NamedAttribute attr : (*this)->getAttrs()) {
    const llvm::StringRef name = attr.getName().strref();
    if (name == getSymNameAttrName() || name == getFunctionTypeAttrName() ||
        name == getArgAttrsAttrName() || name == getResAttrsAttrName() ||
        name.startswith("tir.")) {
      continue;
    }
    return emitOpError() << "does not support attribute '" << name << "' on a graph";
  }
  FunctionType type = getFunctionType();
  for (auto [i, t] : llvm::enumerate(type.getInputs())) {
    if (!isGraphValueType(t)) {
      return emitOpError() << "expects argument #" << i
                           << " to be a TensorIR ranked tensor, but got " << t
                           << " (tensors of i1, f16, bf16, f32, f64, f8E4M3FN, f8E5M2, "
                              "si8-si64, ui8-ui64, or such a scalar, or index)";
    }
    if (failed(verifyTensorLimits(*this, t, "argument #" + std::to_string(i)))) return failure();
    if (failed(verifySignatureAttrs(*this, getArgAttrDict(i), t, "argument", i))) return failure();
  }
  for (auto [i, t] : llvm::enumerate(type.getResults())) {
    if (!isGraphValueType(t)) {
      return emitOpError() << "expects result #" << i << " to be a TensorIR ranked tensor, but got "
                           << t;
    }
    if (failed(verifyTensorLimits(*this, t, "result #" + std::to_string(i)))) return failure();
    if (failed(verifySignatureAttrs(*this, getResultAttrDict(i), t, "result", i))) return failure();
  }
  return success();
}

LogicalResult GraphOp::verifyRegions() {
  Block &block = getBody().front();
  if (block.getNumArguments() != getFunctionType().getNumInputs()) {
    return emitOpError() << "expects " << getFunctionType().getNumInputs()
                         << " block arguments, got " << block.getNumArguments();
  }
  for (Operation &op : block) {
    if (!isa<TirDialect>(op.getDialect())) {
      return op.emitOpError() << "is not a tir op; a graph body holds tir ops only";
    }
    for (Type t : op.getResultTypes()) {
      if (failed(verifyTensorLimits(&op, t, "result"))) return failure();
    }
  }
  return success();
}

LogicalResult LaunchOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto callee = symbols.lookupNearestSymbolFrom<GraphOp>(*this, getCalleeAttr());
  if (!callee) return emitOpError() << "launches " << getCalleeAttr() << ", which is not a tir.graph";
  FunctionType type = callee.getFunctionType();
  if (mlir::TypeRange(type.getInputs()) != mlir::TypeRange(getArgs().getTypes()) ||
      mlir::TypeRange(type.getResults()) != mlir::TypeRange(getResults().getTypes())) {
    return emitOpError() << "types do not match kernel " << getCalleeAttr() << " of type " << type;
  }
  if (callee->isAncestor(*this)) return emitOpError() << "a kernel cannot launch itself";
  return success();
}

LogicalResult ResultsOp::verify() {
  auto graph = (*this)->getParentOfType<GraphOp>();
  llvm::ArrayRef<Type> expected = graph.getFunctionType().getResults();
  if (expected.size() != getValues().size()) {
    return graph.emitOpError() << "expects the # of ResultTypes should match the # of return "
                                  "value type, but got "
                               << expected.size() << " and " << getValues().size();
  }
  for (auto [i, v] : llvm::enumerate(getValues())) {
    if (v.getType() != expected[i]) {
      return graph.emitOpError() << "expects ResultTypes[" << i
                                 << "] should match return value type, but got " << expected[i]
                                 << " and " << v.getType();
    }
  }
  return success();
}

}  // namespace tir
