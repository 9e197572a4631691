//===- ShapeOps.cpp - constants, views and data movement ------------------===//

#include "compiler/ir/ShapeRules.h"
#include "compiler/ir/TirDialect.h"

using namespace mlir;

namespace tir {
namespace {

std::string fmtDim(int64_t v) { return ShapedType::isDynamic(v) ? "?" : std::to_string(v); }

// `dynamic_dims` operands are either absent or one per dynamic result extent.
LogicalResult verifyDynamicDims(Operation *op, ValueRange dims, RankedTensorType result) {
  if (dims.empty() || static_cast<int64_t>(dims.size()) == result.getNumDynamicDims()) {
    return success();
  }
  return op->emitOpError() << "requires either no dynamic_dims operands or one for every "
                              "dynamic result dimension, but got "
                           << dims.size() << " operand(s) for " << result.getNumDynamicDims()
                           << " dynamic dimension(s)";
}

// Views keep the element type; transpose and slice also keep the rank.
LogicalResult verifyView(Operation *op, RankedTensorType in, RankedTensorType out, bool sameRank) {
  if (in.getElementType() != out.getElementType()) {
    return op->emitOpError() << "requires the same element type for input and output, got "
                             << in.getElementType() << " and " << out.getElementType();
  }
  if (sameRank && in.getRank() != out.getRank()) {
    return op->emitOpError() << "requires input and output of the same rank, got " << in.getRank()
                             << " and " << out.getRank();
  }
  return success();
}

LogicalResult verifyDimIndex(Operation *op, int64_t dim, int64_t rank, llvm::StringRef what) {
  if (dim < 0 || dim >= rank) {
    return op->emitOpError() << what << " " << dim << " is out of bounds for tensor rank "
                             << rank;
  }
  return success();
}

}  // namespace

//===----------------------------------------------------------------------===//
// constant
//===----------------------------------------------------------------------===//

ParseResult ConstantOp::parse(OpAsmParser &parser, OperationState &result) {
  Attribute value;
  if (parser.parseOptionalAttrDict(result.attributes) || parser.parseAttribute(value)) {
    return failure();
  }
  auto typed = value.dyn_cast<TypedAttr>();
  if (!typed) {
    return parser.emitError(parser.getCurrentLocation(), "expected a typed literal, got ") << value;
  }
  result.addAttribute("value", value);
  result.addTypes(typed.getType());
  return success();
}

void ConstantOp::print(OpAsmPrinter &p) {
  p.printOptionalAttrDict((*this)->getAttrs(), {"value"});
  p << ' ';
  p.printAttribute(getValue());
}

LogicalResult ConstantOp::verify() {
  Type type = getValue().getType();
  if (type != getOutput().getType()) {
    return emitOpError() << "requires the result type to equal the literal's type, got "
                         << getOutput().getType() << " and " << type;
  }
  if (isTirElementType(type)) {
    if (!getValue().isa<IntegerAttr, FloatAttr, BoolAttr>()) {
      return emitOpError() << "expects a scalar literal for type " << type;
    }
    return success();
  }
  if (!isTirTensorType(type)) {
    return emitOpError() << "expects a tir element type or tensor, got " << type;
  }
  if (!getValue().isa<DenseElementsAttr>()) {
    return emitOpError() << "expects a dense<...> literal for a tensor constant";
  }
  return verifyTensorLimits(*this, type, "constant");
}

//===----------------------------------------------------------------------===//
// splat, iota, dim
//===----------------------------------------------------------------------===//

LogicalResult SplatOp::verify() {
  auto out = getOutput().getType().cast<RankedTensorType>();
  if (getValue().getType() != out.getElementType()) {
    return emitOpError() << "requires the scalar type to equal the result element type, got "
                         << getValue().getType() << " and " << out.getElementType();
  }
  return verifyDynamicDims(*this, getDynamicDims(), out);
}

void IotaOp::getAsmResultNames(function_ref<void(Value, llvm::StringRef)> setName) {
  // "iota_<dimension>", as TensorIR names it (the printer uniquifies repeats).
  setName(getOutput(), ("iota_" + llvm::Twine(getDimension())).str());
}

LogicalResult IotaOp::verify() {
  auto out = getOutput().getType().cast<RankedTensorType>();
  const int64_t dim = getDimension();
  if (failed(verifyDimIndex(*this, dim, out.getRank(), "dimension"))) return failure();
  Type e = out.getElementType();
  if (e.isInteger(1)) return emitOpError() << "requires a numeric element type, got i1";
  const int64_t extent = out.getDimSize(dim);
  if (auto i = e.dyn_cast<IntegerType>(); i && !ShapedType::isDynamic(extent) && extent > 0) {
    const unsigned bits = i.getWidth() - (i.isSigned() ? 1 : 0);
    const uint64_t max = bits >= 64 ? UINT64_MAX : (uint64_t{1} << bits) - 1;
    if (static_cast<uint64_t>(extent - 1) > max) {
      return emitOpError() << "extent " << extent << " along iota dimension " << dim
                           << " exceeds the maximum value representable in the iota element type "
                           << e;
    }
  }
  return verifyDynamicDims(*this, getDynamicDims(), out);
}

LogicalResult DimOp::verify() {
  return verifyDimIndex(*this, getDimension(),
                        getInput().getType().cast<RankedTensorType>().getRank(), "dimension");
}

//===----------------------------------------------------------------------===//
// broadcast, reshape, transpose, slice
//===----------------------------------------------------------------------===//

LogicalResult BroadcastOp::verify() {
  auto in = getInput().getType().cast<RankedTensorType>();
  auto out = getOutput().getType().cast<RankedTensorType>();
  if (in.getElementType() != out.getElementType()) {
    return emitOpError() << "requires input and output element types to match, got "
                         << in.getElementType() << " and " << out.getElementType();
  }
  if (in.getRank() != out.getRank()) {
    return emitOpError() << "requires input and output ranks to match, got " << in.getRank()
                         << " and " << out.getRank() << " (reshape first to add unit dims)";
  }
  bool expands = false;
  for (int64_t d = 0; d < in.getRank(); ++d) {
    const int64_t a = in.getDimSize(d), b = out.getDimSize(d);
    if (a == b) continue;
    if (a == 1 && (ShapedType::isDynamic(b) || b > 1)) {
      expands = true;
      continue;
    }
    return emitOpError() << "broadcast dim " << d
                         << " must change from a literal 1 in the input to ?/>1 in the output, "
                            "got "
                         << fmtDim(a) << " -> " << fmtDim(b);
  }
  if (!expands) {
    return emitOpError() << "no-op broadcast is not allowed: no dimension expands from 1";
  }
  return verifyDynamicDims(*this, getDynamicDims(), out);
}

LogicalResult ReshapeOp::verify() {
  auto in = getInput().getType().cast<RankedTensorType>();
  auto out = getOutput().getType().cast<RankedTensorType>();
  if (failed(verifyView(*this, in, out, /*sameRank=*/false))) return failure();
  std::optional<int64_t> a = staticElementCount(in.getShape());
  std::optional<int64_t> b = staticElementCount(out.getShape());
  if (a && b && *a != *b) {
    return emitOpError() << "requires input and output to have the same number of elements, but "
                            "got "
                         << *a << " elements in input and " << *b << " elements in output";
  }
  return verifyDynamicDims(*this, getDynamicDims(), out);
}

LogicalResult TransposeOp::verify() {
  auto in = getInput().getType().cast<RankedTensorType>();
  auto out = getOutput().getType().cast<RankedTensorType>();
  if (failed(verifyView(*this, in, out, /*sameRank=*/true))) return failure();
  llvm::ArrayRef<int64_t> perm = getPermutation();
  if (static_cast<int64_t>(perm.size()) != in.getRank()) {
    return emitOpError() << "requires permutation array size to match tensor rank, but got "
                            "permutation size "
                         << perm.size() << " and tensor rank " << in.getRank();
  }
  llvm::SmallVector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= in.getRank()) {
      return emitOpError() << "permutation contains invalid dimension index " << p
                           << ", expected value in range [0, " << in.getRank() - 1 << "]";
    }
    if (seen[p]) return emitOpError() << "permutation contains duplicate dimension index " << p;
    seen[p] = true;
  }
  for (int64_t i = 0; i < out.getRank(); ++i) {
    if (out.getDimSize(i) != in.getDimSize(perm[i])) {
      return emitOpError() << "output dimension " << i << " (size " << fmtDim(out.getDimSize(i))
                           << ") does not match permuted input dimension " << perm[i] << " (size "
                           << fmtDim(in.getDimSize(perm[i])) << ")";
    }
  }
  return success();
}

LogicalResult SliceOp::verify() {
  auto in = getInput().getType().cast<RankedTensorType>();
  auto out = getOutput().getType().cast<RankedTensorType>();
  if (failed(verifyView(*this, in, out, /*sameRank=*/true))) return failure();
  llvm::ArrayRef<int64_t> starts = getStarts(), limits = getLimits(), strides = getStrides();
  if (static_cast<int64_t>(starts.size()) != in.getRank() ||
      limits.size() != starts.size() || strides.size() != starts.size()) {
    return emitOpError() << "requires starts, limits and strides with one entry per dimension ("
                         << in.getRank() << "), got " << starts.size() << ", " << limits.size()
                         << " and " << strides.size();
  }
  for (int64_t d = 0; d < in.getRank(); ++d) {
    const int64_t dim = in.getDimSize(d);
    // A dimension of run-time extent kept whole (a slice along another
    // dimension of a tensor with dynamic dims): start 0, stride 1, limit 0
    // standing for the extent.
    if (ShapedType::isDynamic(dim) && ShapedType::isDynamic(out.getDimSize(d))) {
      if (starts[d] != 0 || strides[d] != 1 || limits[d] != 0) {
        return emitOpError() << "dimension " << d << " of run-time extent is kept whole only (start 0, limit 0, "
                                "stride 1), got start=" << starts[d] << ", limit=" << limits[d]
                             << ", stride=" << strides[d];
      }
      continue;
    }
    if (starts[d] > limits[d] || (!ShapedType::isDynamic(dim) && limits[d] > dim)) {
      return emitOpError() << "slice out of bounds at dimension " << d << ": start=" << starts[d]
                           << ", limit=" << limits[d] << ", stride=" << strides[d]
                           << ", input_dim=" << fmtDim(dim);
    }
    const int64_t size = (limits[d] - starts[d] + strides[d] - 1) / strides[d];
    if (out.getDimSize(d) != size) {
      return emitOpError() << "output dimension " << d << " (size " << fmtDim(out.getDimSize(d))
                           << ") does not match computed slice size " << size;
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// gather
//===----------------------------------------------------------------------===//

LogicalResult GatherOp::verify() {
  auto data = getData().getType().cast<RankedTensorType>();
  auto indices = getIndices().getType().cast<RankedTensorType>();
  auto out = getOutput().getType().cast<RankedTensorType>();
  if (data.getRank() < 1) return emitOpError() << "requires data of rank at least 1, got " << data;
  if (failed(verifyDimIndex(*this, getAxis(), data.getRank(), "axis"))) return failure();
  Type index = indices.getElementType();
  if (!index.isSignedInteger(32) && !index.isSignedInteger(64)) {
    return emitOpError() << "requires indices of si32 or si64, got " << index;
  }
  if (out.getElementType() != data.getElementType()) {
    return emitOpError() << "requires the result element type to equal the data's, got " << out.getElementType()
                         << " and " << data.getElementType();
  }
  const int64_t axis = getAxis();
  llvm::SmallVector<int64_t> expected(data.getShape().begin(), data.getShape().begin() + axis);
  expected.append(indices.getShape().begin(), indices.getShape().end());
  expected.append(data.getShape().begin() + axis + 1, data.getShape().end());
  if (out.getRank() != static_cast<int64_t>(expected.size())) {
    return emitOpError() << "requires a result of rank " << expected.size()
                         << " (data rank - 1 + indices rank), got " << out.getRank();
  }
  for (int64_t d = 0; d < out.getRank(); ++d) {
    if (out.getDimSize(d) != expected[d]) {
      return emitOpError() << "result dimension " << d << " (size " << fmtDim(out.getDimSize(d))
                           << ") does not match " << fmtDim(expected[d])
                           << " (data.shape[:axis] + indices.shape + data.shape[axis+1:])";
    }
  }
  // A static extent along the axis bounds every index; an empty axis has none to pick.
  if (data.getDimSize(axis) == 0 && (!indices.hasStaticShape() || indices.getNumElements() > 0)) {
    return emitOpError() << "gathers along axis " << axis << " of extent 0, where no index is valid";
  }
  return verifyTensorLimits(*this, out, "gather result");
}

//===----------------------------------------------------------------------===//
// concatenate
//===----------------------------------------------------------------------===//

ParseResult ConcatenateOp::parse(OpAsmParser &parser, OperationState &result) {
  llvm::SmallVector<OpAsmParser::UnresolvedOperand> inputs;
  llvm::SMLoc loc = parser.getCurrentLocation();
  int64_t dimension = 0;
  FunctionType type;
  if (parser.parseOperandList(inputs)) return failure();
  if (inputs.empty()) {
    return parser.emitError(loc, "expected 1 or more operands, but found 0");
  }
  if (parser.parseKeyword("dimension") || parser.parseEqual() || parser.parseInteger(dimension) ||
      parser.parseOptionalAttrDict(result.attributes) || parser.parseColonType(type)) {
    return failure();
  }
  if (type.getNumResults() != 1) return parser.emitError(loc, "expected one result type");
  if (parser.resolveOperands(inputs, type.getInputs(), loc, result.operands)) return failure();
  result.addAttribute("dimension", parser.getBuilder().getI64IntegerAttr(dimension));
  result.addTypes(type.getResults());
  return success();
}

void ConcatenateOp::print(OpAsmPrinter &p) {
  p << ' ' << getInputs() << " dimension = " << getDimension();
  p.printOptionalAttrDict((*this)->getAttrs(), {"dimension"});
  p << " : ";
  p.printFunctionalType(*this);
}

LogicalResult ConcatenateOp::verify() {
  if (getInputs().empty()) return emitOpError() << "expected 1 or more operands, but found 0";
  auto out = getOutput().getType().cast<RankedTensorType>();
  auto first = getInputs()[0].getType().cast<RankedTensorType>();
  const int64_t rank = first.getRank();
  const int64_t dim = getDimension();
  if (failed(verifyDimIndex(*this, dim, rank, "concatenation dimension"))) return failure();
  llvm::SmallVector<int64_t> merged(first.getShape().begin(), first.getShape().end());
  int64_t total = 0;
  bool dynamicTotal = false;
  for (auto [i, v] : llvm::enumerate(getInputs())) {
    auto t = v.getType().cast<RankedTensorType>();
    if (t.getElementType() != out.getElementType()) {
      return emitOpError() << "requires the same element type for all inputs and the result, got "
                           << t.getElementType() << " for input " << i << " and "
                           << out.getElementType();
    }
    if (t.getRank() != rank) {
      return emitOpError() << "input " << i << " has rank " << t.getRank() << " but expected "
                           << rank;
    }
    for (int64_t d = 0; d < rank; ++d) {
      if (d == dim) continue;
      std::optional<int64_t> m = equalMerge(merged[d], t.getDimSize(d));
      if (!m) {
        return emitOpError() << "expects non-concatenation dimensions of all inputs to match, "
                                "but dimension "
                             << d << " is " << fmtDim(merged[d]) << " and "
                             << fmtDim(t.getDimSize(d)) << " in input " << i;
      }
      merged[d] = *m;
    }
    if (ShapedType::isDynamic(t.getDimSize(dim))) {
      dynamicTotal = true;
    } else {
      total += t.getDimSize(dim);
    }
  }
  if (out.getRank() != rank) {
    return emitOpError() << "output has rank " << out.getRank() << " but expected " << rank;
  }
  const int64_t expected = dynamicTotal ? ShapedType::kDynamic : total;
  if (out.getDimSize(dim) != expected) {
    return emitOpError() << "expects output concatenation dimension to equal the sum of input "
                            "extents ("
                         << fmtDim(expected) << "), got " << fmtDim(out.getDimSize(dim));
  }
  for (int64_t d = 0; d < rank; ++d) {
    if (d != dim && out.getDimSize(d) != merged[d]) {
      return emitOpError() << "expects output non-concatenation dimensions to equal the merged "
                              "input shape: dimension "
                           << d << " should be " << fmtDim(merged[d]) << ", got "
                           << fmtDim(out.getDimSize(d));
    }
  }
  return success();
}

}  // namespace tir
