//===- ReduceOps.cpp - reduce, reduce_ud, matmul --------------------------===//

#include "compiler/ir/ReduceBody.h"
#include "compiler/ir/ShapeRules.h"
#include "compiler/ir/TirDialect.h"

using namespace mlir;

namespace tir {
namespace {

std::string fmtDim(int64_t v) { return ShapedType::isDynamic(v) ? "?" : std::to_string(v); }

// A body value stands for a tensor element of `element`: the same type, or
// for a signed or unsigned integer the signless integer of its width (arith
// ops take signless integers; TensorIR writes `i32` for `ui32` tensors).
bool isBodyTypeOf(Type body, Type element) {
  if (body == element) return true;
  auto b = body.dyn_cast<IntegerType>(), e = element.dyn_cast<IntegerType>();
  return b && e && b.isSignless() && b.getWidth() == e.getWidth();
}

std::string bodySpelling(Type element) {
  auto e = element.dyn_cast<IntegerType>();
  if (!e || e.isSignless()) return "";
  return " (or i" + std::to_string(e.getWidth()) + ")";
}

// `<dimensions = [..]` then, for reduce, `, reduction_mode = <m>`; for
// reduce_ud, `, identity = [..]`. Closing `>` is parsed by the caller.
ParseResult parseDimensions(OpAsmParser &parser, OperationState &result) {
  if (parser.parseLess() || parser.parseKeyword("dimensions") || parser.parseEqual()) {
    return failure();
  }
  Attribute dims = DenseI32ArrayAttr::parse(parser, Type{});
  if (!dims) return failure();
  result.addAttribute("dimensions", dims);
  return parser.parseComma();
}

// Shared shape rule: reduced dims become 1, the rest are inherited exactly.
LogicalResult verifyReducedShape(Operation *op, llvm::ArrayRef<int32_t> dims,
                                 RankedTensorType in, RankedTensorType out) {
  if (in.getRank() != out.getRank()) {
    return op->emitOpError() << "requires input and output of the same rank (reduced dims stay "
                                "as extent 1), got "
                             << in.getRank() << " and " << out.getRank();
  }
  llvm::SmallVector<bool> reduced(in.getRank(), false);
  for (int32_t d : dims) {
    if (d < 0 || d >= in.getRank()) {
      return op->emitOpError() << "reduction dimension " << d
                               << " is out of bounds for tensor rank " << in.getRank();
    }
    if (reduced[d]) return op->emitOpError() << "reduction dimension " << d << " is duplicated";
    reduced[d] = true;
  }
  for (int64_t d = 0; d < in.getRank(); ++d) {
    const int64_t a = in.getDimSize(d), b = out.getDimSize(d);
    if (reduced[d]) {
      if (b != 1) {
        return op->emitOpError() << "expects output dimension " << d << " to be 1, but got "
                                 << fmtDim(b);
      }
    } else if (a != b) {
      if (ShapedType::isDynamic(a)) {
        return op->emitOpError() << "expects output dimension " << d
                                 << " to remain dynamic because the corresponding input "
                                    "dimension is dynamic";
      }
      return op->emitOpError() << "expects output dimension " << d << " to be " << fmtDim(a)
                               << " (inherited from the input), got " << fmtDim(b);
    }
  }
  return success();
}

}  // namespace

//===----------------------------------------------------------------------===//
// reduce
//===----------------------------------------------------------------------===//

ParseResult ReduceOp::parse(OpAsmParser &parser, OperationState &result) {
  OpAsmParser::UnresolvedOperand input;
  llvm::SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLParen() || parser.parseOperand(input) || parser.parseRParen() ||
      parseDimensions(parser, result) || parser.parseKeyword("reduction_mode") ||
      parser.parseEqual() || parser.parseLess()) {
    return failure();
  }
  std::string mode;
  llvm::SMLoc modeLoc = parser.getCurrentLocation();
  if (parser.parseKeywordOrString(&mode) || parser.parseGreater() || parser.parseGreater()) {
    return failure();
  }
  std::optional<ReductionMode> m = parseReductionModeName(mode);
  if (!m) {
    return parser.emitError(modeLoc) << "unknown reduction mode '" << mode
                                     << "'; expected add, mul, max, min, amax, avg (or mean), norm1, norm2, "
                                        "mul_no_zeros or customize";
  }
  result.addAttribute("reduction_mode", ReductionModeAttr::get(parser.getContext(), *m));
  Type inType, outType;
  if (parser.parseOptionalAttrDict(result.attributes) || parser.parseColonType(inType) ||
      parser.parseArrow() || parser.parseType(outType) ||
      parser.resolveOperand(input, inType, result.operands)) {
    return failure();
  }
  (void)loc;
  result.addTypes(outType);
  return success();
}

void ReduceOp::print(OpAsmPrinter &p) {
  p << '(' << getInput() << ")<dimensions = ";
  getDimensionsAttr().print(p);
  p << ", reduction_mode = <" << stringifyReductionMode(getReductionMode()) << ">>";
  p.printOptionalAttrDict((*this)->getAttrs(), {"dimensions", "reduction_mode"});
  p << " : " << getInput().getType() << " -> " << getOutput().getType();
}

LogicalResult ReduceOp::verify() {
  auto in = getInput().getType().cast<RankedTensorType>();
  auto out = getOutput().getType().cast<RankedTensorType>();
  if (in.getElementType() != out.getElementType()) {
    return emitOpError() << "requires the same element type for input and output, got "
                         << in.getElementType() << " and " << out.getElementType();
  }
  if (in.getElementType().isInteger(1)) {
    return emitOpError() << "cannot reduce i1 values; convert them first";
  }
  if (getReductionMode() == ReductionMode::customize) {
    return emitOpError() << "reduction_mode = <customize> names a user-defined combiner, which reduce has "
                            "none of; write the reduction as reduce_ud with a body";
  }
  return verifyReducedShape(*this, getDimensions(), in, out);
}

//===----------------------------------------------------------------------===//
// reduce_ud
//===----------------------------------------------------------------------===//

ParseResult ReduceUdOp::parse(OpAsmParser &parser, OperationState &result) {
  llvm::SmallVector<OpAsmParser::UnresolvedOperand> inputs;
  llvm::SMLoc loc = parser.getCurrentLocation();
  Attribute identity;
  if (parser.parseOperandList(inputs, OpAsmParser::Delimiter::Paren) ||
      parseDimensions(parser, result) || parser.parseKeyword("identity") ||
      parser.parseEqual() || parser.parseAttribute(identity) || parser.parseGreater()) {
    return failure();
  }
  if (!identity.isa<ArrayAttr>()) {
    return parser.emitError(loc, "expected identity to be a list of typed scalars");
  }
  result.addAttribute("identity", identity);
  llvm::SmallVector<OpAsmParser::Argument> args;
  if (parser.parseArgumentList(args, OpAsmParser::Delimiter::Paren, /*allowType=*/true)) {
    return failure();
  }
  Region *body = result.addRegion();
  llvm::SmallVector<Type> inTypes, outTypes;
  if (parser.parseRegion(*body, args) || parser.parseOptionalAttrDict(result.attributes) ||
      parser.parseColonTypeList(inTypes) || parser.parseArrow() ||
      parser.parseTypeList(outTypes) ||
      parser.resolveOperands(inputs, inTypes, loc, result.operands)) {
    return failure();
  }
  result.addTypes(outTypes);
  return success();
}

void ReduceUdOp::print(OpAsmPrinter &p) {
  p << '(' << getInputs() << ")<dimensions = ";
  getDimensionsAttr().print(p);
  p << ", identity = ";
  p.printAttribute(getIdentity());
  p << "> (";
  llvm::interleaveComma(getBody().getArguments(), p,
                        [&](BlockArgument arg) { p.printRegionArgument(arg); });
  p << ") ";
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false);
  p.printOptionalAttrDict((*this)->getAttrs(), {"dimensions", "identity"});
  p << " : ";
  llvm::interleaveComma(getInputs().getTypes(), p);
  p << " -> ";
  llvm::interleaveComma(getOutputs().getTypes(), p);
}

LogicalResult ReduceUdOp::verify() {
  const size_t n = getInputs().size();
  if (n == 0) return emitOpError() << "requires at least one input";
  if (getOutputs().size() != n) {
    return emitOpError() << "requires one result per input, got " << n << " inputs and "
                         << getOutputs().size() << " results";
  }
  if (getIdentity().size() != getOutputs().size()) {
    return emitOpError() << "expects number of identities to match number of results, but got "
                         << getIdentity().size() << " identities and " << getOutputs().size()
                         << " results";
  }
  for (size_t i = 0; i < n; ++i) {
    auto in = getInputs()[i].getType().cast<RankedTensorType>();
    auto out = getOutputs()[i].getType().cast<RankedTensorType>();
    if (in.getElementType() != out.getElementType()) {
      return emitOpError() << "requires input " << i << " and result " << i
                           << " to share an element type, got " << in.getElementType() << " and "
                           << out.getElementType();
    }
    if (i > 0 && in.getShape() != getInputs()[0].getType().cast<RankedTensorType>().getShape()) {
      return emitOpError() << "requires all inputs to have one shape, input " << i << " is "
                           << in;
    }
    auto typed = getIdentity()[i].dyn_cast<TypedAttr>();
    if (!typed || !typed.isa<IntegerAttr, FloatAttr>() || !isBodyTypeOf(typed.getType(), out.getElementType())) {
      return emitOpError() << "expects identity " << i << " to be a " << out.getElementType()
                           << " scalar, got " << getIdentity()[i];
    }
    if (failed(verifyReducedShape(*this, getDimensions(), in, out))) return failure();
  }
  return success();
}

LogicalResult ReduceUdOp::verifyRegions() {
  const size_t n = getInputs().size();
  Block &block = getBody().front();
  if (block.getNumArguments() != 2 * n) {
    return emitOpError() << "expects body region to have exactly " << 2 * n
                         << " arguments (prev_result_i, curr_operand_i), but got "
                         << block.getNumArguments() << " arguments";
  }
  for (size_t i = 0; i < 2 * n; ++i) {
    Type expected = getInputs()[i % n].getType().cast<RankedTensorType>().getElementType();
    if (!isBodyTypeOf(block.getArgument(i).getType(), expected)) {
      return emitOpError() << "expects body argument " << i << " to have type " << expected
                           << bodySpelling(expected) << ", got " << block.getArgument(i).getType();
    }
  }
  auto yield = dyn_cast<YieldOp>(block.getTerminator());
  if (!yield) return emitOpError() << "expects the body to end in tir.yield";
  if (yield.getValues().size() != n) {
    return emitOpError() << "expects the body to yield " << n << " values, got "
                         << yield.getValues().size();
  }
  for (size_t i = 0; i < n; ++i) {
    Type identityType = getIdentity()[i].cast<TypedAttr>().getType();
    if (!isBodyTypeOf(yield.getValues()[i].getType(), identityType)) {
      return emitOpError() << "expects yield operand " << i
                           << " type to match identity type, but got yield type: "
                           << yield.getValues()[i].getType() << " and identity type: "
                           << identityType;
    }
  }
  for (Operation &op : block.without_terminator()) {
    if (!classifyBodyOp(op)) {
      return op.emitOpError() << "is not supported in a reduce_ud body; use scalar ops of "
                              << supportedBodyOpNames();
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// matmul
//===----------------------------------------------------------------------===//

ParseResult MatmulOp::parse(OpAsmParser &parser, OperationState &result) {
  OpAsmParser::UnresolvedOperand a, b, acc;
  Type accType;
  bool hasAcc = false;
  llvm::SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLParen() || parser.parseOperand(a) || parser.parseComma() ||
      parser.parseOperand(b) || parser.parseRParen()) {
    return failure();
  }
  if (succeeded(parser.parseOptionalKeyword("accum"))) {
    hasAcc = true;
    if (parser.parseLParen() || parser.parseOperand(acc) || parser.parseColonType(accType) ||
        parser.parseRParen()) {
      return failure();
    }
  }
  FunctionType type;
  if (parser.parseOptionalAttrDict(result.attributes) || parser.parseColonType(type)) {
    return failure();
  }
  if (type.getNumInputs() != 2 || type.getNumResults() != 1) {
    return parser.emitError(loc, "expected a type (A, B) -> C");
  }
  if (parser.resolveOperands({a, b}, type.getInputs(), loc, result.operands)) return failure();
  if (hasAcc && parser.resolveOperand(acc, accType, result.operands)) return failure();
  result.addTypes(type.getResults());
  return success();
}

void MatmulOp::print(OpAsmPrinter &p) {
  p << '(' << getA() << ", " << getB() << ')';
  if (getAccumulator()) {
    p << " accum(" << getAccumulator() << " : " << getAccumulator().getType() << ')';
  }
  p.printOptionalAttrDict((*this)->getAttrs());
  p << " : (" << getA().getType() << ", " << getB().getType() << ") -> " << getC().getType();
}

LogicalResult MatmulOp::verify() {
  auto a = getA().getType().cast<RankedTensorType>();
  auto b = getB().getType().cast<RankedTensorType>();
  auto c = getC().getType().cast<RankedTensorType>();
  if (a.getRank() < 2) return emitOpError() << "expects rank of at least 2, but got " << a.getRank();
  if (a.getRank() != b.getRank() || a.getRank() != c.getRank()) {
    return emitOpError() << "requires A, B and C of the same rank, got " << a.getRank() << ", "
                         << b.getRank() << " and " << c.getRank();
  }
  Type ea = a.getElementType(), eb = b.getElementType(), ec = c.getElementType();
  if (ea != eb) {
    return emitOpError() << "requires A and B to share an element type, got " << ea << " and "
                         << eb;
  }
  if (ea.isInteger(1)) return emitOpError() << "cannot multiply i1 matrices";
  if (ea.isa<FloatType>() != ec.isa<FloatType>()) {
    return emitOpError() << "requires C's element type to be of A's kind (float or integer), got "
                         << ec << " for inputs of " << ea;
  }
  const int64_t r = a.getRank();
  for (int64_t d = 0; d < r - 2; ++d) {
    std::optional<int64_t> m = broadcastMerge(a.getDimSize(d), b.getDimSize(d));
    if (!m || *m != c.getDimSize(d)) {
      return emitOpError() << "expects C batch dimensions to be the broadcasted shape of A and B, "
                              "but got "
                           << fmtDim(a.getDimSize(d)) << ", " << fmtDim(b.getDimSize(d))
                           << ", and " << fmtDim(c.getDimSize(d)) << " at dimension " << d;
    }
  }
  if (!equalMerge(a.getDimSize(r - 1), b.getDimSize(r - 2))) {
    return emitOpError() << "expects the contracting dimensions of A and B to match, but got "
                         << fmtDim(a.getDimSize(r - 1)) << " and " << fmtDim(b.getDimSize(r - 2));
  }
  if (c.getDimSize(r - 2) != a.getDimSize(r - 2) || c.getDimSize(r - 1) != b.getDimSize(r - 1)) {
    return emitOpError() << "expects C's matrix dimensions to be inherited exactly from A's rows "
                            "and B's columns, but got A, B, and C shapes "
                         << a << ", " << b << " and " << c;
  }
  if (getAccumulator() && getAccumulator().getType() != c) {
    return emitOpError() << "expects accumulator type to match result type, got "
                         << getAccumulator().getType() << " and " << c;
  }
  return success();
}

}  // namespace tir
