//===- PointwiseOps.cpp - binary, unary, cmp, select ----------------------===//
//
// Pointwise ops accept two spellings of their types: the short `: T`, where
// every operand has type T, and the functional `: (T0, T1) -> T2`, where
// operands may differ by broadcast. The printer uses the short form whenever it
// is exact.

#include "compiler/ir/ShapeRules.h"
#include "compiler/ir/TirDialect.h"

using namespace mlir;

namespace tir {
namespace {

bool producesBool(llvm::StringRef opName) {
  return opName == "tir.and" || opName == "tir.or" || opName == "tir.not" || opName == "tir.cmp";
}

Type withElementType(Type t, Type element) {
  if (auto r = t.dyn_cast<RankedTensorType>()) return r.clone(element);
  return element;
}

// `<beta = 1.0 : f32>`: any float literal MLIR accepts (including the hex
// form the printer uses for inf and NaN); an untyped literal is f64.
ParseResult parseBeta(OpAsmParser &parser, OperationState &result) {
  if (failed(parser.parseOptionalLess())) return success();
  Attribute beta;
  llvm::SMLoc loc;
  if (parser.parseKeyword("beta") || parser.parseEqual()) return failure();
  loc = parser.getCurrentLocation();
  if (parser.parseAttribute(beta)) return failure();
  if (!beta.isa<FloatAttr>()) {
    return parser.emitError(loc, "beta must be a floating-point literal, got ") << beta;
  }
  if (parser.parseGreater()) return failure();
  result.addAttribute("beta", beta);
  return success();
}

void printBeta(OpAsmPrinter &p, Operation *op) {
  if (auto beta = op->getAttrOfType<FloatAttr>("beta")) {
    p << "<beta = ";
    p.printAttribute(beta);
    p << ">";
  }
}

// Parses `: T` or `: (T...) -> R` for an op with `numOperands` operands.
ParseResult parseOperandTypes(OpAsmParser &parser, OperationState &result,
                              llvm::ArrayRef<OpAsmParser::UnresolvedOperand> operands,
                              llvm::SMLoc operandsLoc) {
  Type type;
  llvm::SMLoc typeLoc = parser.getCurrentLocation();
  if (parser.parseColonType(type)) return failure();
  llvm::SmallVector<Type> operandTypes;
  Type resultType;
  if (auto fn = type.dyn_cast<FunctionType>()) {
    if (fn.getNumResults() != 1) {
      return parser.emitError(typeLoc, "expected exactly one result type, got ")
             << fn.getNumResults();
    }
    operandTypes.assign(fn.getInputs().begin(), fn.getInputs().end());
    resultType = fn.getResult(0);
  } else {
    operandTypes.assign(operands.size(), type);
    resultType = type;
    if (producesBool(result.name.getStringRef())) {
      resultType = withElementType(type, parser.getBuilder().getI1Type());
    }
    if (result.name.getStringRef() == "tir.binary_select") {
      operandTypes[0] = withElementType(type, parser.getBuilder().getI1Type());
    }
  }
  if (operandTypes.size() != operands.size()) {
    return parser.emitError(typeLoc) << "expected " << operands.size()
                                     << " operand types, got " << operandTypes.size();
  }
  if (parser.resolveOperands(operands, operandTypes, operandsLoc, result.operands)) {
    return failure();
  }
  result.addTypes(resultType);
  return success();
}

// The short form reproduces these types exactly. `pow` always prints its
// functional type (its operands may legitimately differ in element type).
bool shortFormFits(Operation *op) {
  if (op->getName().getStringRef() == "tir.pow") return false;
  Type first = op->getOperand(0).getType();
  const bool select = op->getName().getStringRef() == "tir.binary_select";
  for (unsigned i = 0; i < op->getNumOperands(); ++i) {
    Type expected = (select && i == 0)
                        ? withElementType(op->getOperand(1).getType(),
                                          IntegerType::get(op->getContext(), 1))
                        : (select ? op->getOperand(1).getType() : first);
    if (op->getOperand(i).getType() != expected) return false;
  }
  Type operandType = select ? op->getOperand(1).getType() : first;
  Type expectedResult = producesBool(op->getName().getStringRef())
                            ? withElementType(operandType, IntegerType::get(op->getContext(), 1))
                            : operandType;
  return op->getResult(0).getType() == expectedResult;
}

void printOperandTypes(OpAsmPrinter &p, Operation *op) {
  p << " : ";
  if (shortFormFits(op)) {
    p << (op->getName().getStringRef() == "tir.binary_select" ? op->getOperand(1).getType()
                                                               : op->getOperand(0).getType());
  } else {
    p.printFunctionalType(op);
  }
}

LogicalResult requireSameRank(Operation *op) {
  auto resultType = op->getResult(0).getType().cast<RankedTensorType>();
  for (Value v : op->getOperands()) {
    auto t = v.getType().cast<RankedTensorType>();
    if (t.getRank() != resultType.getRank()) {
      return op->emitOpError() << "expects operands and result to have the same rank, got "
                               << t << " and " << resultType;
    }
  }
  return success();
}

// Result shape must be the broadcast merge of the operand shapes.
LogicalResult verifyBroadcastShapes(Operation *op) {
  if (failed(requireSameRank(op))) return failure();
  auto first = op->getOperand(0).getType().cast<RankedTensorType>();
  llvm::SmallVector<int64_t> merged(first.getShape().begin(), first.getShape().end());
  for (unsigned i = 1; i < op->getNumOperands(); ++i) {
    auto t = op->getOperand(i).getType().cast<RankedTensorType>();
    int64_t dim = -1;
    auto m = broadcastMergeShapes(merged, t.getShape(), &dim);
    if (!m) {
      return op->emitOpError() << "operand shapes do not broadcast: dimension " << dim
                               << " is " << merged[dim] << " in operand #0 and "
                               << t.getDimSize(dim) << " in operand #" << i
                               << " (extents must be equal, or one of them 1)";
    }
    merged = *m;
  }
  auto result = op->getResult(0).getType().cast<RankedTensorType>();
  for (int64_t d = 0; d < result.getRank(); ++d) {
    if (result.getDimSize(d) != merged[d]) {
      auto fmt = [](int64_t v) {
        return ShapedType::isDynamic(v) ? std::string("?") : std::to_string(v);
      };
      return op->emitOpError() << "expects result dimension " << d << " to be "
                               << fmt(merged[d]) << " (the broadcast of the operands), got "
                               << fmt(result.getDimSize(d));
    }
  }
  return success();
}

Type elementType(Value v) { return v.getType().cast<ShapedType>().getElementType(); }

bool isBoolOrInteger(Type t) { return t.isInteger(1) || isTirIntegerType(t); }

}  // namespace

ParseResult parseBinaryOp(OpAsmParser &parser, OperationState &result, bool hasBeta) {
  if (hasBeta && parseBeta(parser, result)) return failure();
  llvm::SMLoc loc = parser.getCurrentLocation();
  OpAsmParser::UnresolvedOperand lhs, rhs;
  if (parser.parseOperand(lhs) || parser.parseComma() || parser.parseOperand(rhs) ||
      parser.parseOptionalAttrDict(result.attributes)) {
    return failure();
  }
  return parseOperandTypes(parser, result, {lhs, rhs}, loc);
}

void printBinaryOp(OpAsmPrinter &p, Operation *op) {
  printBeta(p, op);
  p << ' ' << op->getOperand(0) << ", " << op->getOperand(1);
  p.printOptionalAttrDict(op->getAttrs(), {"beta"});
  printOperandTypes(p, op);
}

LogicalResult verifyBinaryOp(Operation *op, BinaryKind kind) {
  Type lhs = elementType(op->getOperand(0)), rhs = elementType(op->getOperand(1));
  Type out = elementType(op->getResult(0));
  switch (kind) {
    case BinaryKind::kNumeric:
      if (lhs.isInteger(1)) {
        return op->emitOpError() << "requires numeric operands, got i1 (use and/or/not)";
      }
      [[fallthrough]];
    case BinaryKind::kFloat:
      if (lhs != rhs || lhs != out) {
        return op->emitOpError() << "requires the same element type for operands and result, got "
                                 << lhs << ", " << rhs << " and " << out;
      }
      if (kind == BinaryKind::kFloat && !lhs.isa<FloatType>()) {
        return op->emitOpError() << "requires a floating point type, got " << lhs;
      }
      break;
    case BinaryKind::kPow:
      if (out != lhs) {
        return op->emitOpError() << "requires the result element type to equal the base's, got "
                                 << out << " and " << lhs;
      }
      if (lhs != rhs && !(lhs.isa<FloatType>() && isTirIntegerType(rhs))) {
        return op->emitOpError()
               << "requires either both operands to have the same element type or a "
                  "floating-point base with an integer exponent, got base "
               << lhs << " and exponent " << rhs;
      }
      if (lhs.isInteger(1)) return op->emitOpError() << "requires numeric operands, got i1";
      break;
    case BinaryKind::kLogical:
      if (!isBoolOrInteger(lhs) || lhs != rhs) {
        return op->emitOpError() << "requires i1 or integer operands of one element type, got "
                                 << lhs << " and " << rhs;
      }
      if (!out.isInteger(1)) return op->emitOpError() << "requires an i1 result, got " << out;
      break;
  }
  return verifyBroadcastShapes(op);
}

ParseResult parseUnaryOp(OpAsmParser &parser, OperationState &result, bool hasBeta,
                         UnaryKind kind) {
  if (hasBeta && parseBeta(parser, result)) return failure();
  OpAsmParser::UnresolvedOperand input;
  Type inputType, resultType;
  llvm::SMLoc loc = parser.getCurrentLocation();
  if (parser.parseOperand(input) || parser.parseOptionalAttrDict(result.attributes) ||
      parser.parseColonType(inputType)) {
    return failure();
  }
  if (succeeded(parser.parseOptionalArrow())) {
    if (parser.parseType(resultType)) return failure();
  } else {
    resultType = kind == UnaryKind::kLogical
                     ? withElementType(inputType, parser.getBuilder().getI1Type())
                     : inputType;
  }
  if (parser.resolveOperand(input, inputType, result.operands)) return failure();
  (void)loc;
  result.addTypes(resultType);
  return success();
}

void printUnaryOp(OpAsmPrinter &p, Operation *op) {
  printBeta(p, op);
  p << ' ' << op->getOperand(0);
  p.printOptionalAttrDict(op->getAttrs(), {"beta"});
  Type in = op->getOperand(0).getType(), out = op->getResult(0).getType();
  const bool logical = op->getName().getStringRef() == "tir.not";
  Type implied = logical ? withElementType(in, IntegerType::get(op->getContext(), 1)) : in;
  p << " : " << in;
  if (out != implied) p << " -> " << out;
}

LogicalResult verifyUnaryOp(Operation *op, UnaryKind kind) {
  auto in = op->getOperand(0).getType().cast<RankedTensorType>();
  auto out = op->getResult(0).getType().cast<RankedTensorType>();
  if (in.getShape() != out.getShape()) {
    return op->emitOpError() << "requires the result shape to equal the operand shape, got "
                             << in << " and " << out;
  }
  Type e = in.getElementType();
  switch (kind) {
    case UnaryKind::kFloat:
      if (!e.isa<FloatType>()) return op->emitOpError() << "requires a floating point type, got " << e;
      [[fallthrough]];
    case UnaryKind::kNumeric:
      if (e.isInteger(1)) return op->emitOpError() << "requires a numeric operand, got i1";
      if (out.getElementType() != e) {
        return op->emitOpError() << "requires the result element type to equal the operand's, got "
                                 << out.getElementType() << " and " << e;
      }
      break;
    case UnaryKind::kLogical:
      if (!isBoolOrInteger(e)) return op->emitOpError() << "requires an i1 or integer operand, got " << e;
      if (!out.getElementType().isInteger(1)) {
        return op->emitOpError() << "requires an i1 result, got " << out.getElementType();
      }
      break;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// cmp
//===----------------------------------------------------------------------===//

ParseResult CmpOp::parse(OpAsmParser &parser, OperationState &result) {
  llvm::SMLoc loc = parser.getCurrentLocation();
  OpAsmParser::UnresolvedOperand lhs, rhs;
  std::string predicate;
  if (parser.parseOperand(lhs)) return failure();
  llvm::SMLoc predLoc = parser.getCurrentLocation();
  if (parser.parseKeywordOrString(&predicate) || parser.parseOperand(rhs) ||
      parser.parseOptionalAttrDict(result.attributes)) {
    return failure();
  }
  std::optional<CmpPredicate> pred = symbolizeCmpPredicate(predicate);
  if (!pred) {
    return parser.emitError(predLoc) << "unknown comparison predicate '" << predicate
                                     << "'; expected oeq, one, ogt, oge, olt, ole, ueq, une, "
                                        "ugt, uge, ult, ule, eq, neq, gt, ge, lt or le";
  }
  result.addAttribute("predicate", CmpPredicateAttr::get(parser.getContext(), *pred));
  return parseOperandTypes(parser, result, {lhs, rhs}, loc);
}

void CmpOp::print(OpAsmPrinter &p) {
  p << ' ' << getLhs() << ' ' << stringifyCmpPredicate(getPredicate()) << ' ' << getRhs();
  p.printOptionalAttrDict((*this)->getAttrs(), {"predicate"});
  printOperandTypes(p, *this);
}

LogicalResult CmpOp::verify() {
  Type lhs = elementType(getLhs()), rhs = elementType(getRhs());
  if (lhs != rhs) {
    return emitOpError() << "requires operands of one element type, got " << lhs << " and " << rhs;
  }
  if (!elementType(getOutput()).isInteger(1)) {
    return emitOpError() << "requires an i1 result, got " << elementType(getOutput());
  }
  if (lhs.isa<FloatType>() && !isFloatPredicate(getPredicate())) {
    return emitOpError() << "float operands require a float predicate (oeq, one, ogt, oge, olt, "
                            "ole, ueq, une, ugt, uge, ult, ule), got '"
                         << stringifyCmpPredicate(getPredicate()) << "'";
  }
  if (!lhs.isa<FloatType>() && isFloatPredicate(getPredicate())) {
    return emitOpError() << "integer operands require an integer predicate (eq, neq, gt, ge, lt, "
                            "le), got '"
                         << stringifyCmpPredicate(getPredicate()) << "'";
  }
  return verifyBroadcastShapes(*this);
}

//===----------------------------------------------------------------------===//
// binary_select
//===----------------------------------------------------------------------===//

ParseResult BinarySelectOp::parse(OpAsmParser &parser, OperationState &result) {
  llvm::SMLoc loc = parser.getCurrentLocation();
  OpAsmParser::UnresolvedOperand cond, lhs, rhs;
  if (parser.parseOperand(cond) || parser.parseComma() || parser.parseOperand(lhs) ||
      parser.parseComma() || parser.parseOperand(rhs) ||
      parser.parseOptionalAttrDict(result.attributes)) {
    return failure();
  }
  return parseOperandTypes(parser, result, {cond, lhs, rhs}, loc);
}

void BinarySelectOp::print(OpAsmPrinter &p) {
  p << ' ' << getCond() << ", " << getLhs() << ", " << getRhs();
  p.printOptionalAttrDict((*this)->getAttrs());
  printOperandTypes(p, *this);
}

LogicalResult BinarySelectOp::verify() {
  if (!elementType(getCond()).isInteger(1)) {
    return emitOpError() << "requires an i1 condition, got " << elementType(getCond());
  }
  Type lhs = elementType(getLhs()), rhs = elementType(getRhs()), out = elementType(getOutput());
  if (lhs != rhs || lhs != out) {
    return emitOpError() << "requires both branches and the result to share an element type, got "
                         << lhs << ", " << rhs << " and " << out;
  }
  return verifyBroadcastShapes(*this);
}

}  // namespace tir
