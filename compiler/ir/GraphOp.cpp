//===- GraphOp.cpp - tir.graph and tir.results ----------------------------===//

#include "compiler/ir/DimBounds.h"
#include "compiler/ir/StrideAttr.h"
#include "compiler/ir/TileHints.h"
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
      std::optional<StrideSpec> spec = parseStrideSpec(str.getValue(), &why);
      if (!spec) {
        return op.emitOpError() << "expects stride to be a tuple of non-negative integers or '?' "
                                   "(with optional hints such as ?{div=8}), but got \""
                                << str.getValue() << "\" on " << what << " #" << index << ": " << why;
      }
      if (static_cast<int64_t>(spec->strides.size()) != tensor.getRank()) {
        return op.emitOpError() << "expects stride is valid for corresponding shape, but got \""
                                << str.getValue() << "\" (" << spec->strides.size()
                                << " entries) for " << type << " on " << what << " #" << index;
      }
      // A stride of 0 repeats one element along its dimension: on an input a
      // broadcast read (what PyTorch's expand hands over); on a result, the
      // dimension holds one element and tir stores the value at index 0 of
      // it (every index would store to that one address). On an input dim of
      // unknown extent TensorIR refuses it, and so does tir.
      if (what == llvm::StringRef("argument")) {
        for (int64_t d = 0; d < tensor.getRank(); ++d) {
          if (spec->strides[d] == 0 && tensor.isDynamicDim(d)) {
            return op.emitOpError() << "stride=0 is not allowed in graph input stride attribute on a dynamic "
                                       "dim (dimension "
                                    << d << " of " << type << " in \"" << str.getValue()
                                    << "\"); give its extent statically, or use shape 1 and a broadcast op";
          }
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
    if (name == TirDialect::kBoundsAttr) {
      if (failed(needsTensor())) return failure();
      std::string why;
      if (what != llvm::StringRef("argument")) {
        return op.emitOpError() << "tir.bounds applies to graph arguments only (" << what << " #" << index << ")";
      }
      if (!parseDimBounds(value, tensor, &why)) {
        return op.emitOpError() << "expects tir.bounds as \"[<=6,2]\" or array<i64: 6, 2> (one entry per dim: "
                                   "`<=N` or N for a dynamic dim's upper bound, `?` or -1 for none, a static dim's "
                                   "size), but got "
                                << value << " on " << what << " #" << index << ": " << why;
      }
      continue;
    }
    if (name == TirDialect::kCostAttr) {
      auto cost = value.dyn_cast<IntegerAttr>();
      if (!cost) return op.emitOpError() << "expects cost is an integer attribute, but got " << value;
      if (cost.getInt() != -1 && (cost.getInt() < 1 || cost.getInt() > 10)) {
        return op.emitOpError() << "expects cost to be -1 or between 1-10, but got " << cost.getInt();
      }
      continue;
    }
    // Analysis results TensorIR writes back: accepted, checked for their
    // kind, and ignored (they do not enter the fingerprint).
    if (name == TirDialect::kAllowTmaAttr) {
      if (!value.isa<BoolAttr>()) return op.emitOpError() << "expects allow_tma is a bool, but got " << value;
      continue;
    }
    if (name == TirDialect::kIterSpaceIdAttr) {
      if (!value.isa<IntegerAttr>()) {
        return op.emitOpError() << "expects iter_space_id is an integer, but got " << value;
      }
      continue;
    }
    if (name == TirDialect::kIterSpaceIdsAttr) {
      if (!value.isa<DenseI32ArrayAttr>()) {
        return op.emitOpError() << "expects iter_space_ids is an array<i32: ...>, but got " << value;
      }
      continue;
    }
    if (name == TirDialect::kIterSpaceDimDomainsAttr) {
      if (!value.isa<IterSpaceDimDomainsAttr>()) {
        return op.emitOpError() << "expects iter_space_dim_domains is #tir<iter_space_dim_domains[...]>, but got "
                                << value;
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
      if (!isLayoutSourceAttr(value)) {
        return op.emitOpError() << "expects layout is a layout source (#tir.tensor_source, ...), but got " << value;
      }
      continue;
    }
    return op.emitOpError() << "does not support signature attribute `" << name << "` on "
                            << what << " #" << index
                            << " (known: tir.stride, tir.alignment, tir.bounds, tir.cost, tir.allow_tma, "
                               "tir.iter_space_map, tir.iter_space_id, tir.iter_space_ids, "
                               "tir.iter_space_dim_domains, tir.layout)";
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
        name.startswith("tir.") || isAnalysisAttribute(name)) {
      continue;
    }
    if (name == TirDialect::kTileSizeAttr || name == TirDialect::kReductionTileSizeAttr ||
        name == TirDialect::kTileCandidatesAttr) {
      std::string why;
      if (failed(parseTileHints(getOperation(), &why))) return emitOpError() << why;
      continue;
    }
    return emitOpError() << "does not support attribute '" << name
                         << "' on a graph (known: tile_size, reduction_tile_size, tile_candidates, "
                            "and TensorIR's analysis attributes)";
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
