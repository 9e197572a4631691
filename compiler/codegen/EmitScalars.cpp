// Scalar lowering: index maps, operand reads, every pointwise-like op,
// constants, reduce_ud bodies and output stores.

#include "compiler/codegen/KernelEmitter.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/ir/ReduceBody.h"
#include "compiler/ir/StrideAttr.h"
#include "compiler/planning/AccessMaps.h"
#include "compiler/reference/Elementwise.h"
#include "compiler/support/status.h"
#include "llvm/ADT/TypeSwitch.h"
#include "mlir/Dialect/Arith/IR/Arith.h"

namespace tir::codegen::detail {

using reference::Pointwise;

// C expression of an affine expression over the domain index variables.
std::string KernelEmitter::Expr(mlir::AffineExpr e) {
  if (auto d = e.dyn_cast<mlir::AffineDimExpr>()) return absl::StrCat("i", d.getPosition());
  if (auto c = e.dyn_cast<mlir::AffineConstantExpr>()) return absl::StrCat("(tir_i64)", c.getValue());
  auto b = e.cast<mlir::AffineBinaryOpExpr>();
  const std::string l = Expr(b.getLHS()), r = Expr(b.getRHS());
  switch (e.getKind()) {
    case mlir::AffineExprKind::Add: return absl::StrCat("(", l, " + ", r, ")");
    case mlir::AffineExprKind::Mul: return absl::StrCat("(", l, " * ", r, ")");
    case mlir::AffineExprKind::FloorDiv: return absl::StrCat("(", l, " / ", r, ")");  // indices are non-negative
    case mlir::AffineExprKind::Mod: return absl::StrCat("(", l, " % ", r, ")");
    default: return absl::StrCat("(", l, " / ", r, ")");
  }
}

// Offset of element `map(idx)` in a buffer with the given stride array.
std::string KernelEmitter::Offset(mlir::AffineMap map, const std::string &strides) {
  std::vector<std::string> terms;
  for (unsigned j = 0; j < map.getNumResults(); ++j) {
    terms.push_back(absl::StrCat(Expr(map.getResult(j)), " * ", strides, "[", j, "]"));
  }
  return terms.empty() ? "0" : absl::StrJoin(terms, " + ");
}

bool KernelEmitter::RunFits(mlir::Type type, int64_t vec) {
  const int64_t bytes = vec * std::max<int64_t>(1, type.cast<mlir::ShapedType>().getElementTypeBitWidth() / 8);
  return bytes == 2 || bytes == 4 || bytes == 8 || bytes == 16;
}

int KernelEmitter::RunDim(mlir::AffineMap map, int d) {
  int found = -1;
  for (unsigned j = 0; j < map.getNumResults(); ++j) {
    mlir::AffineExpr e = map.getResult(j);
    if (!e.isFunctionOfDim(d)) continue;
    auto dim = e.dyn_cast<mlir::AffineDimExpr>();
    if (found >= 0 || !dim) return -1;
    found = static_cast<int>(j);
  }
  return found;
}

// Whether the graph's declarations prove that a run of `vec` elements of a
// tensor with attributes `attrs` read at `map` (run dim `j`) is one aligned
// access: unit stride along the run, every other stride a multiple of vec
// (static, or a `?{div=N}` hint), and the base pointer's declared alignment
// a multiple of the run's bytes. Then no run-time check is emitted; the
// launcher checks the declarations instead (a launch that breaks them is
// refused: LAYOUT_CONTRACT_VIOLATED).
bool KernelEmitter::ProvenRun(mlir::DictionaryAttr attrs, mlir::Type type, mlir::AffineMap map, int j, int64_t vec) {
  if (!attrs) return false;
  auto align = attrs.getAs<mlir::IntegerAttr>(TirDialect::kAlignmentAttr);
  const int64_t bytes = vec * std::max<int64_t>(1, type.cast<mlir::ShapedType>().getElementTypeBitWidth() / 8);
  if (!align || align.getInt() % bytes != 0) return false;
  auto str = attrs.getAs<mlir::StringAttr>(TirDialect::kStrideAttr);
  std::optional<StrideSpec> spec;
  if (str) {
    spec = parseStrideSpec(str.getValue(), nullptr);
  } else if (auto r = type.dyn_cast<mlir::RankedTensorType>()) {
    spec.emplace();
    spec->strides = rowMajorStrides(r.getShape());
    for (int64_t st : spec->strides) spec->divisors.push_back(mlir::ShapedType::isDynamic(st) ? 1 : st);
  }
  if (!spec || static_cast<int>(spec->strides.size()) != static_cast<int>(map.getNumResults())) return false;
  for (size_t d = 0; d < spec->strides.size(); ++d) {
    if (static_cast<int>(d) == j) {
      if (spec->strides[d] != 1) return false;
      // The run starts at a multiple of vec along its dim (the kernel's
      // innermost index is), unless the map offsets it.
      if (!map.getResult(d).isa<mlir::AffineDimExpr>()) return false;
    } else if (spec->divisors[d] % vec != 0 && spec->strides[d] != 0) {
      return false;
    }
  }
  return true;
}

// Whether a map reads any of the domain's reduced dims.
bool KernelEmitter::UsesReduced(mlir::AffineMap map) {
  for (int64_t d : reduced_) {
    if (map.isFunctionOfDim(d)) return true;
  }
  return false;
}

// The operand value of `use` as a compute-typed expression.
absl::StatusOr<std::string> KernelEmitter::Operand(mlir::OpOperand &use, std::string &code, const std::string &indent) {
  mlir::Value v = use.get();
  if (auto arg = v.dyn_cast<mlir::BlockArgument>()) {
    TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(v.getType()));
    const std::string name = absl::StrCat("in", arg.getArgNumber());
    if (!v.getType().isa<mlir::RankedTensorType>()) return Sub(t.load, "a." + name);
    auto it = maps_.operands.find(&use);
    if (it == maps_.operands.end()) {
      return Unsupported("UNSUPPORTED_OP", "input #" + std::to_string(arg.getArgNumber()) + " is read by " +
                                               use.getOwner()->getName().getStringRef().str() +
                                               " without an access map");
    }
    if (auto run = run_reads_.find(&use); run != run_reads_.end()) return Sub(t.load, run->second + "[v]");
    return Sub(t.load, absl::StrCat("a.", name, "[", Offset(it->second, "a." + name + "_stride"), "]"));
  }
  auto found = values_.find(v.getAsOpaquePointer());
  if (found == values_.end()) return Unsupported("UNSUPPORTED_OP", "value used before it is computed");
  (void)code;
  (void)indent;
  return found->second;
}

// A reshape with run-time extents reads its input through the row-major
// linear index of the output element, worked out in the kernel: output
// extents are static or the reshape's dynamic_dims, input extents static or
// the input's sizes. Only kernel inputs can be read this way (a computed
// value has no storage to index).
absl::Status KernelEmitter::DynamicReshape(ReshapeOp rs, std::string &code, const std::string &indent) {
  auto arg = rs.getInput().dyn_cast<mlir::BlockArgument>();
  if (!arg) return Unsupported("UNSUPPORTED_OP", "reshape of a computed value with dynamic extents");
  auto found = maps_.results.find(rs.getOperation());
  if (found == maps_.results.end()) return Unsupported("UNSUPPORTED_OP", "reshape without an access map");
  const mlir::AffineMap map = found->second;
  auto outType = rs.getOutput().getType().cast<mlir::RankedTensorType>();
  auto inType = rs.getInput().getType().cast<mlir::RankedTensorType>();
  if (map.getNumResults() != static_cast<unsigned>(outType.getRank())) {
    return Unsupported("UNSUPPORTED_OP", "reshape whose access map does not match its rank");
  }
  TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(rs.getInput().getType()));
  const std::string id = std::to_string(next_++);
  const std::string lin = "rs_lin" + id, rem = "rs_rem" + id, input = absl::StrCat("a.in", arg.getArgNumber());
  std::string linear = "(tir_i64)0";
  unsigned dynamic = 0;
  // Without dynamic_dims a single dynamic result extent is the element
  // count over the static result extents (as the interpreter infers it).
  const int64_t dynamicOut = llvm::count_if(outType.getShape(), mlir::ShapedType::isDynamic);
  if (rs.getDynamicDims().empty() && dynamicOut > 1) {
    return Unsupported("UNSUPPORTED_OP", "a reshape with several dynamic result extents needs dynamic_dims");
  }
  for (int64_t j = 0; j < outType.getRank(); ++j) {
    std::string extent;
    if (!outType.isDynamicDim(j)) {
      extent = absl::StrCat("(tir_i64)", outType.getDimSize(j));
    } else if (rs.getDynamicDims().empty()) {
      std::string count = "(tir_i64)1";
      for (int64_t i = 0; i < inType.getRank(); ++i) {
        count += inType.isDynamicDim(i) ? absl::StrCat(" * ", input, "_size[", i, "]")
                                        : absl::StrCat(" * (tir_i64)", inType.getDimSize(i));
      }
      int64_t known = 1;
      for (int64_t e : outType.getShape()) {
        if (!mlir::ShapedType::isDynamic(e)) known *= e;
      }
      extent = absl::StrCat("((", count, ") / (tir_i64)", std::max<int64_t>(known, 1), ")");
    } else {
      if (dynamic >= rs.getDynamicDims().size()) return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_GRAPH", "reshape has too few dynamic_dims");
      TIR_ASSIGN_OR_RETURN(std::string e, Operand(rs->getOpOperand(1 + dynamic++), code, indent));
      extent = "(tir_i64)(" + e + ")";
    }
    linear = absl::StrCat("(", linear, ") * ", extent, " + ", Expr(map.getResult(j)));
  }
  absl::StrAppend(&code, indent, "const tir_i64 ", lin, " = ", linear, ";\n", indent, "tir_i64 ", rem, " = ", lin,
                  ";\n");
  std::vector<std::string> terms;
  for (int64_t j = inType.getRank() - 1; j >= 0; --j) {
    // max(.., 1): an empty input has no elements to read, and the division stays defined.
    const std::string extent = inType.isDynamicDim(j) ? absl::StrCat("tir_max(", input, "_size[", j, "], (tir_i64)1)")
                                                       : absl::StrCat("(tir_i64)", inType.getDimSize(j));
    const std::string idx = absl::StrCat("rs_i", id, "_", j);
    absl::StrAppend(&code, indent, "const tir_i64 ", idx, " = ", rem, " % ", extent, "; ", rem, " /= ", extent,
                    ";\n");
    terms.push_back(absl::StrCat(idx, " * ", input, "_stride[", j, "]"));
  }
  const std::string var = absl::StrCat("v", next_++);
  absl::StrAppend(&code, indent, "const ", t.compute, " ", var, " = ",
                  Sub(t.load, absl::StrCat(input, "[", terms.empty() ? "0" : absl::StrJoin(terms, " + "), "]")),
                  ";\n");
  values_[rs.getOutput().getAsOpaquePointer()] = var;
  return absl::OkStatus();
}

// Picks the input of a concatenation whose range holds `at`: input k ends
// (exclusively) at ends[k]; only the chosen input is read.
std::string KernelEmitter::ConcatSelect(const std::string &at, const std::vector<std::string> &inputs,
                                const std::vector<std::string> &ends) {
  std::string e = inputs.back();
  for (int k = static_cast<int>(inputs.size()) - 2; k >= 0; --k) {
    e = "(" + at + " < " + ends[k] + " ? (" + inputs[k] + ") : (" + e + "))";
  }
  return e;
}

// A concatenation along a dimension with run-time extents: each input's
// offset is the sum of the extents before it, read from the inputs' sizes.
// The access maps carry only the static part of an offset, so the dynamic
// part is subtracted here; inputs must be kernel inputs (the partitioner
// makes them so).
absl::Status KernelEmitter::DynamicConcat(ConcatenateOp cat, std::string &code, const std::string &indent) {
  TIR_ASSIGN_OR_RETURN(TypeInfo out, Info(cat.getOutput().getType()));
  auto found = maps_.results.find(cat.getOperation());
  if (found == maps_.results.end()) return Unsupported("UNSUPPORTED_OP", "concatenate without an access map");
  const int64_t dim = cat.getDimension();
  const std::string at = Expr(found->second.getResult(dim));
  std::string dynamicOffset;  // run-time part of the current input's offset ("" while none)
  int64_t staticOffset = 0;
  std::vector<std::string> reads, ends;
  for (mlir::OpOperand &use : cat->getOpOperands()) {
    auto arg = use.get().dyn_cast<mlir::BlockArgument>();
    if (!arg) return Unsupported("UNSUPPORTED_OP", "concatenate of a computed value with dynamic extents");
    auto map = maps_.operands.find(&use);
    if (map == maps_.operands.end()) return Unsupported("UNSUPPORTED_OP", "concatenate input without an access map");
    TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(use.get().getType()));
    const std::string input = absl::StrCat("a.in", arg.getArgNumber());
    std::vector<std::string> terms;
    for (unsigned j = 0; j < map->second.getNumResults(); ++j) {
      std::string index = Expr(map->second.getResult(j));
      if (j == static_cast<unsigned>(dim) && !dynamicOffset.empty()) index = "(" + index + " - " + dynamicOffset + ")";
      terms.push_back(absl::StrCat(index, " * ", input, "_stride[", j, "]"));
    }
    reads.push_back(Sub(t.load, absl::StrCat(input, "[", terms.empty() ? "0" : absl::StrJoin(terms, " + "), "]")));
    const int64_t ext = use.get().getType().cast<mlir::RankedTensorType>().getDimSize(dim);
    if (mlir::ShapedType::isDynamic(ext)) {
      dynamicOffset = (dynamicOffset.empty() ? "" : dynamicOffset + " + ") + absl::StrCat(input, "_size[", dim, "]");
    } else {
      staticOffset += ext;
    }
    ends.push_back(dynamicOffset.empty() ? std::to_string(staticOffset)
                                         : absl::StrCat("(", dynamicOffset, " + ", staticOffset, ")"));
  }
  const std::string e = ConcatSelect(at, reads, ends);
  const std::string var = absl::StrCat("v", next_++);
  absl::StrAppend(&code, indent, "const ", out.compute, " ", var, " = ", Sub(out.round, e), ";\n");
  values_[cat.getOutput().getAsOpaquePointer()] = var;
  return absl::OkStatus();
}

absl::Status KernelEmitter::Gather(GatherOp gather, std::string &code, const std::string &indent) {
  auto arg = gather.getData().dyn_cast<mlir::BlockArgument>();
  if (!arg) return Unsupported("UNSUPPORTED_OP", "gather from a computed value (it must be a kernel input)");
  auto found = maps_.results.find(gather.getOperation());
  if (found == maps_.results.end()) return Unsupported("UNSUPPORTED_OP", "gather without an access map");
  const mlir::AffineMap map = found->second;
  auto data = gather.getData().getType().cast<mlir::RankedTensorType>();
  const int64_t axis = gather.getAxis();
  const int64_t rank = gather.getIndices().getType().cast<mlir::RankedTensorType>().getRank();
  if (map.getNumResults() != static_cast<unsigned>(data.getRank() - 1 + rank)) {
    return Unsupported("UNSUPPORTED_OP", "gather whose access map does not match its rank");
  }
  TIR_ASSIGN_OR_RETURN(std::string index, Operand(gather->getOpOperand(1), code, indent));
  TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(gather.getData().getType()));
  const std::string input = absl::StrCat("a.in", arg.getArgNumber());
  const std::string extent = data.isDynamicDim(axis) ? absl::StrCat(input, "_size[", axis, "]")
                                                     : absl::StrCat("(tir_i64)", data.getDimSize(axis));
  const std::string at = absl::StrCat("gi", next_++);
  absl::StrAppend(&code, indent, "const tir_i64 ", at, " = tir_gather_index((tir_i64)(", index, "), ", extent, ");\n");
  std::vector<std::string> terms;
  for (int64_t d = 0; d < data.getRank(); ++d) {
    const std::string i = d < axis ? Expr(map.getResult(d)) : d == axis ? at : Expr(map.getResult(d + rank - 1));
    terms.push_back(absl::StrCat(i, " * ", input, "_stride[", d, "]"));
  }
  const std::string var = absl::StrCat("v", next_++);
  absl::StrAppend(&code, indent, "const ", t.compute, " ", var, " = ",
                  Sub(t.load, absl::StrCat(input, "[", absl::StrJoin(terms, " + "), "]")), ";\n");
  values_[gather.getOutput().getAsOpaquePointer()] = var;
  return absl::OkStatus();
}

// Emits `op` (pointwise-like) as `const T vN = ...;` into `code`.
absl::Status KernelEmitter::EmitOp(mlir::Operation *op, std::string &code, const std::string &indent) {
  if (op->getNumResults() == 0) return absl::OkStatus();
  if (auto gather = llvm::dyn_cast<GatherOp>(op)) return Gather(gather, code, indent);
  if (auto rs = llvm::dyn_cast<ReshapeOp>(op)) {
    auto inType = rs.getInput().getType().cast<mlir::ShapedType>();
    auto outType = rs.getOutput().getType().cast<mlir::ShapedType>();
    // Unit dims in or out only relabel the element: a computed value passes
    // through as it does for static extents.
    const bool relabels = !rs.getInput().isa<mlir::BlockArgument>() &&
                          planning::UnitDimsOnly(inType.getShape(), outType.getShape());
    if ((!inType.hasStaticShape() || !outType.hasStaticShape()) && !relabels) {
      return DynamicReshape(rs, code, indent);
    }
  }
  if (auto cat = llvm::dyn_cast<ConcatenateOp>(op)) {
    for (mlir::Value v : cat.getInputs()) {
      if (v.getType().cast<mlir::RankedTensorType>().isDynamicDim(cat.getDimension())) {
        return DynamicConcat(cat, code, indent);
      }
    }
  }
  if (auto dim = llvm::dyn_cast<DimOp>(op)) {
    // The run-time extent: static, an input's size, or a domain extent.
    const int64_t d = dim.getDimension();
    auto type = dim.getInput().getType().cast<mlir::RankedTensorType>();
    std::string expr;
    if (!type.isDynamicDim(d)) {
      expr = absl::StrCat("(tir_i64)", type.getDimSize(d));
    } else if (auto arg = dim.getInput().dyn_cast<mlir::BlockArgument>()) {
      expr = absl::StrCat("a.in", arg.getArgNumber(), "_size[", d, "]");
    } else if (auto m = maps_.results.find(dim.getInput().getDefiningOp()); m != maps_.results.end()) {
      auto e = m->second.getResult(d).dyn_cast<mlir::AffineDimExpr>();
      if (!e) return Unsupported("UNSUPPORTED_OP", "dim of a computed value whose extent is not a domain extent");
      expr = absl::StrCat("a.dim[", e.getPosition(), "]");
    } else {
      return Unsupported("UNSUPPORTED_OP", "dim of a value without an access map");
    }
    const std::string var = absl::StrCat("v", next_++);
    absl::StrAppend(&code, indent, "const tir_i64 ", var, " = ", expr, ";\n");
    values_[op->getResult(0).getAsOpaquePointer()] = var;
    return absl::OkStatus();
  }
  TIR_ASSIGN_OR_RETURN(TypeInfo out, Info(op->getResult(0).getType()));
  std::vector<std::string> in;
  for (mlir::OpOperand &use : op->getOpOperands()) {
    TIR_ASSIGN_OR_RETURN(std::string e, Operand(use, code, indent));
    in.push_back(e);
  }
  const std::string var = absl::StrCat("v", next_++);
  std::string expr;
  if (auto rcp = reciprocals_.find(op); rcp != reciprocals_.end()) {
    expr = in[0] + " * " + rcp->second;  // a division by a per-row value
  } else {
    TIR_ASSIGN_OR_RETURN(expr, Value(op, in, out));
  }
  absl::StrAppend(&code, indent, "const ", out.compute, " ", var, " = ", Sub(out.round, expr), ";\n");
  values_[op->getResult(0).getAsOpaquePointer()] = var;
  return absl::OkStatus();
}

absl::StatusOr<std::string> KernelEmitter::Value(mlir::Operation *op, const std::vector<std::string> &in, const TypeInfo &out) {
  if (auto pw = reference::PointwiseOf(op->getName().getStringRef())) {
    TIR_ASSIGN_OR_RETURN(TypeInfo it, Info(op->getOperand(0).getType()));
    double beta = 1.0;
    if (auto b = op->getAttrOfType<mlir::FloatAttr>("beta")) beta = b.getValueAsDouble();
    const std::string bt = absl::StrCat("(", out.compute, ")", Literal(beta));
    const bool fl = it.is_float;
    const std::string a = in[0], b = in.size() > 1 ? in[1] : "";
    const std::string ua = "(tir_u64)(" + a + ")", ub = "(tir_u64)(" + b + ")";
    switch (*pw) {
      case Pointwise::kAdd: return fl ? a + " + " + b : "(tir_i64)(" + ua + " + " + ub + ")";
      case Pointwise::kSub: return fl ? a + " - " + b : "(tir_i64)(" + ua + " - " + ub + ")";
      case Pointwise::kMul: return fl ? a + " * " + b : "(tir_i64)(" + ua + " * " + ub + ")";
      case Pointwise::kAddSquare: return fl ? a + " + " + b + " * " + b : "(tir_i64)(" + ua + " + " + ub + " * " + ub + ")";
      case Pointwise::kDiv: return fl ? a + " / " + b : (it.is_unsigned ? "tir_udiv(" + ua + ", " + ub + ")" : "tir_idiv(" + a + ", " + b + ")");
      case Pointwise::kRem: return fl ? "fmod(" + a + ", " + b + ")" : (it.is_unsigned ? "tir_urem(" + ua + ", " + ub + ")" : "tir_irem(" + a + ", " + b + ")");
      case Pointwise::kMod: return fl ? "tir_fmodf(" + a + ", " + b + ")" : (it.is_unsigned ? "tir_urem(" + ua + ", " + ub + ")" : "tir_imod(" + a + ", " + b + ")");
      case Pointwise::kMax: return fl ? "tir_fmax(" + a + ", " + b + ")" : (it.is_unsigned ? "tir_max(" + ua + ", " + ub + ")" : "tir_max(" + a + ", " + b + ")");
      case Pointwise::kMin: return fl ? "tir_fmin(" + a + ", " + b + ")" : (it.is_unsigned ? "tir_min(" + ua + ", " + ub + ")" : "tir_min(" + a + ", " + b + ")");
      case Pointwise::kPow: {
        TIR_ASSIGN_OR_RETURN(TypeInfo et, Info(op->getOperand(1).getType()));
        if (fl) return "pow(" + a + ", (" + out.compute + ")(" + b + "))";
        (void)et;
        return "tir_ipow(" + a + ", " + b + ")";
      }
      case Pointwise::kAtan2: return "atan2(" + a + ", " + b + ")";
      case Pointwise::kReluBwd: return "tir_relu_bwd(" + a + ", " + b + ")";
      case Pointwise::kSigmoidBwd: return "tir_sigmoid_bwd(" + a + ", " + b + ")";
      case Pointwise::kTanhBwd: return "tir_tanh_bwd(" + a + ", " + b + ")";
      case Pointwise::kGeluBwd: return "tir_gelu_bwd(" + a + ", " + b + ")";
      case Pointwise::kGeluApproxTanhBwd: return "tir_gelu_tanh_bwd(" + a + ", " + b + ")";
      case Pointwise::kSoftplusBwd: return "tir_softplus_bwd(" + a + ", " + b + ", " + bt + ")";
      case Pointwise::kSwishBwd: return "tir_swish_bwd(" + a + ", " + b + ", " + bt + ")";
      case Pointwise::kEluBwd: return "tir_elu_bwd(" + a + ", " + b + ", " + bt + ")";
      case Pointwise::kAnd: return "(tir_i64)((" + a + ") != 0 && (" + b + ") != 0)";
      case Pointwise::kOr: return "(tir_i64)((" + a + ") != 0 || (" + b + ") != 0)";
      case Pointwise::kAbs: return fl ? "fabs(" + a + ")" : (it.is_unsigned ? a : "(tir_i64)((" + a + ") < 0 ? 0 - " + ua + " : " + ua + ")");
      case Pointwise::kCeil: return "ceil(" + a + ")";
      case Pointwise::kFloor: return "floor(" + a + ")";
      case Pointwise::kNeg: return "-(" + a + ")";
      case Pointwise::kSqrt: return "sqrt(" + a + ")";
      case Pointwise::kRsqrt: return "(" + out.compute + ")1 / sqrt(" + a + ")";
      case Pointwise::kExp: return "exp(" + a + ")";
      case Pointwise::kLog: return "log(" + a + ")";
      case Pointwise::kSin: return "sin(" + a + ")";
      case Pointwise::kCos: return "cos(" + a + ")";
      case Pointwise::kTan: return "tan(" + a + ")";
      case Pointwise::kErf: return "erf(" + a + ")";
      case Pointwise::kReciprocal: return "(" + out.compute + ")1 / (" + a + ")";
      case Pointwise::kRelu: return "(" + a + ") > 0 ? (" + a + ") : (" + out.compute + ")0";
      case Pointwise::kSigmoid: return "tir_sigmoid(" + a + ")";
      case Pointwise::kTanh: return "tanh(" + a + ")";
      case Pointwise::kGelu: return "tir_gelu(" + a + ")";
      case Pointwise::kGeluApproxTanh: return "tir_gelu_tanh(" + a + ")";
      case Pointwise::kSoftplus: return "tir_softplus(" + a + ", " + bt + ")";
      case Pointwise::kSwish: return "tir_swish(" + a + ", " + bt + ")";
      case Pointwise::kElu: return "tir_elu(" + a + ", " + bt + ")";
      case Pointwise::kNot: return "(tir_i64)((" + a + ") == 0)";
    }
  }
  return llvm::TypeSwitch<mlir::Operation *, absl::StatusOr<std::string>>(op)
      .Case<CmpOp>([&](CmpOp c) -> absl::StatusOr<std::string> {
        TIR_ASSIGN_OR_RETURN(TypeInfo it, Info(c.getLhs().getType()));
        const std::string a = it.is_unsigned ? "(tir_u64)(" + in[0] + ")" : in[0];
        const std::string b = it.is_unsigned ? "(tir_u64)(" + in[1] + ")" : in[1];
        const std::string un = "(isnan(" + in[0] + ") || isnan(" + in[1] + "))";
        auto ord = [&](const char *o) { return "(tir_i64)(!" + un + " && " + a + " " + o + " " + b + ")"; };
        auto unord = [&](const char *o) { return "(tir_i64)(" + un + " || " + a + " " + o + " " + b + ")"; };
        auto plain = [&](const char *o) { return "(tir_i64)(" + a + " " + o + " " + b + ")"; };
        switch (c.getPredicate()) {
          case CmpPredicate::oeq: return ord("==");
          case CmpPredicate::one: return ord("!=");
          case CmpPredicate::ogt: return ord(">");
          case CmpPredicate::oge: return ord(">=");
          case CmpPredicate::olt: return ord("<");
          case CmpPredicate::ole: return ord("<=");
          case CmpPredicate::ueq: return unord("==");
          case CmpPredicate::une: return unord("!=");
          case CmpPredicate::ugt: return unord(">");
          case CmpPredicate::uge: return unord(">=");
          case CmpPredicate::ult: return unord("<");
          case CmpPredicate::ule: return unord("<=");
          case CmpPredicate::eq: return plain("==");
          case CmpPredicate::neq: return plain("!=");
          case CmpPredicate::gt: return plain(">");
          case CmpPredicate::ge: return plain(">=");
          case CmpPredicate::lt: return plain("<");
          case CmpPredicate::le: return plain("<=");
        }
        return std::string("0");
      })
      .Case<BinarySelectOp>([&](auto) -> absl::StatusOr<std::string> {
        return "(" + in[0] + ") != 0 ? (" + in[1] + ") : (" + in[2] + ")";
      })
      .Case<ConvertOp>([&](ConvertOp c) -> absl::StatusOr<std::string> {
        TIR_ASSIGN_OR_RETURN(TypeInfo from, Info(c.getInput().getType()));
        // To i1: non-zero (NaN included) is 1.
        if (out.is_bool) return "(" + out.compute + ")((" + in[0] + ") != 0)";
        // To f8: rounded once from the source value (an f64 is not rounded to
        // f32 on the way), saturating.
        if (out.storage == "tir_f8e4m3" || out.storage == "tir_f8e5m2") return Sub(out.round, in[0]);
        if (out.is_float) return "(" + out.compute + ")(" + in[0] + ")";
        if (from.is_float) {
          // NaN -> 0, truncate, saturate to the target's range (as the interpreter does).
          mlir::Type e = c.getOutput().getType().cast<mlir::ShapedType>().getElementType();
          const unsigned w = e.getIntOrFloatBitWidth();
          const bool u = e.isUnsignedInteger();
          const double lo = u ? 0.0 : -std::ldexp(1.0, w - 1);
          const double hi = u ? std::ldexp(1.0, w) - 1 : std::ldexp(1.0, w - 1) - 1;
          const std::string x = "(double)(" + in[0] + ")";
          return "isnan(" + x + ") ? (" + out.compute + ")0 : (" + x + " <= " + Literal(lo) + " ? (" + out.compute +
                 ")" + Literal(lo) + " : (" + x + " >= " + Literal(hi) + " ? (" + out.compute + ")" +
                 (w >= 64 ? (u ? "18446744073709549568.0" : "9223372036854774784.0") : Literal(hi)) + " : (" +
                 out.compute + ")" + x + "))";
        }
        return "(" + out.compute + ")(" + in[0] + ")";
      })
      .Case<ConstantOp>([&](ConstantOp c) -> absl::StatusOr<std::string> { return ConstantValue(c); })
      .Case<SplatOp>([&](auto) -> absl::StatusOr<std::string> { return in[0]; })
      .Case<BroadcastOp, ReshapeOp, TransposeOp, SliceOp>([&](auto) -> absl::StatusOr<std::string> { return in[0]; })
      .Case<IotaOp>([&](IotaOp io) -> absl::StatusOr<std::string> {
        mlir::AffineMap m = maps_.results.lookup(io.getOperation());
        return "(" + out.compute + ")" + Expr(m.getResult(io.getDimension()));
      })
      .Case<ConcatenateOp>([&](ConcatenateOp cat) -> absl::StatusOr<std::string> {
        mlir::AffineMap m = maps_.results.lookup(cat.getOperation());
        const std::string at = Expr(m.getResult(cat.getDimension()));
        // Static extents only: EmitOp sends run-time extents to DynamicConcat.
        int64_t offset = 0;
        std::vector<std::string> ends;
        for (mlir::Value v : cat.getInputs()) {
          const int64_t ext = v.getType().cast<mlir::RankedTensorType>().getDimSize(cat.getDimension());
          if (mlir::ShapedType::isDynamic(ext)) return Unsupported("UNSUPPORTED_OP", "concatenate of dynamic extents");
          offset += ext;
          ends.push_back(std::to_string(offset));
        }
        return ConcatSelect(at, in, ends);
      })
      .Default([&](mlir::Operation *) -> absl::StatusOr<std::string> {
        return Unsupported("UNSUPPORTED_OP", "codegen does not support " + op->getName().getStringRef().str() + " yet");
      });
}

absl::StatusOr<std::string> KernelEmitter::ConstantValue(ConstantOp c) {
  TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(c.getOutput().getType()));
  mlir::Attribute value = c.getValue();
  auto scalar = [&](mlir::Attribute a) -> std::string {
    if (auto f = a.dyn_cast<mlir::FloatAttr>()) return "(" + t.compute + ")" + Literal(f.getValueAsDouble());
    if (auto b = a.dyn_cast<mlir::BoolAttr>()) return b.getValue() ? "(tir_i64)1" : "(tir_i64)0";
    auto i = a.cast<mlir::IntegerAttr>();
    const bool u = i.getType().isUnsignedInteger() || i.getType().isInteger(1);
    return "(" + t.compute + ")" + (u ? std::to_string(i.getValue().getZExtValue()) + "ull"
                                       : std::to_string(i.getValue().getSExtValue()) + "ll");
  };
  auto dense = value.dyn_cast<mlir::DenseElementsAttr>();
  if (!dense) return scalar(value);
  if (dense.isSplat()) return scalar(dense.getSplatValue<mlir::Attribute>());
  // A constant array, indexed by the constant's access map (row-major).
  std::string &name = constant_names_[c.getOperation()];
  if (name.empty()) {
    name = absl::StrCat("tir_const", constants_count_++);
    std::vector<std::string> items;
    for (mlir::Attribute a : dense.getValues<mlir::Attribute>()) items.push_back(scalar(a));
    absl::StrAppend(&constants_, "#if TIR_DEVICE\n__device__\n#else\nstatic\n#endif\nconst ", t.compute, " ", name,
                    "[] = {", absl::StrJoin(items, ", "), "};\n\n");
  }
  auto type = dense.getType().cast<mlir::RankedTensorType>();
  std::vector<int64_t> strides(type.getRank(), 1);
  for (int64_t d = type.getRank() - 2; d >= 0; --d) strides[d] = strides[d + 1] * type.getDimSize(d + 1);
  mlir::AffineMap m = maps_.results.lookup(c.getOperation());
  std::vector<std::string> terms;
  for (unsigned j = 0; j < m.getNumResults(); ++j) terms.push_back(Expr(m.getResult(j)) + " * " + std::to_string(strides[j]));
  return name + "[" + (terms.empty() ? "0" : absl::StrJoin(terms, " + ")) + "]";
}

// Stores every kernel output whose producer is in `domain` (`rowDomain`:
// maps that use reduced dims) into `code`.
absl::Status KernelEmitter::StoreOutputs(std::string &code, const std::string &indent, int filter) {
  auto results = llvm::cast<ResultsOp>(kernel_.getBodyBlock().getTerminator());
  for (mlir::OpOperand &use : results->getOpOperands()) {
    if (!use.get().getType().isa<mlir::RankedTensorType>()) {
      // A scalar result: thread 0 of block 0 stores it (outside a row pass).
      if (filter == 1) continue;
      TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(use.get().getType()));
      TIR_ASSIGN_OR_RETURN(std::string v, Operand(use, code, indent));
      absl::StrAppend(&code, indent,
                      "if (blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0 && threadIdx.x == 0) a.out",
                      use.getOperandNumber(), "[0] = ", Sub(StoreRounded(t), v), ";\n");
      continue;
    }
    auto it = maps_.operands.find(&use);
    if (it == maps_.operands.end()) continue;
    if (filter >= 0 && UsesReduced(it->second) != (filter == 1)) continue;
    TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(use.get().getType()));
    TIR_ASSIGN_OR_RETURN(std::string v, Operand(use, code, indent));
    const unsigned i = use.getOperandNumber();
    // Every value a kernel computes is already rounded to its dtype.
    const std::string stored = Sub(StoreRounded(t), v);
    if (auto run = run_writes_.find(i); run != run_writes_.end()) {
      absl::StrAppend(&code, indent, run->second, "[v] = ", stored, ";\n");
      continue;
    }
    absl::StrAppend(&code, indent, StoreGuard(i, it->second), "a.out", i, "[",
                    Offset(it->second, absl::StrCat("a.out", i, "_stride")), "] = ", stored, ";\n");
  }
  return absl::OkStatus();
}

// Output `i` declares a stride of 0 on a dim of extent above 1: that dim
// holds one element, and only the value at index 0 of it is stored
// ("if (...) "), so no two threads write one address. (A stride given at
// launch is never 0: the launcher refuses that.)
std::string KernelEmitter::StoreGuard(unsigned i, mlir::AffineMap map) {
  auto str = kernel_.getResultAttrOfType<mlir::StringAttr>(i, TirDialect::kStrideAttr);
  if (!str) return "";
  std::optional<StrideSpec> spec = parseStrideSpec(str.getValue(), nullptr);
  auto type = kernel_.getResultTypes()[i].dyn_cast<mlir::RankedTensorType>();
  if (!spec || !type || spec->strides.size() != map.getNumResults()) return "";
  std::vector<std::string> terms;
  for (int d : zeroStrideDims(*spec, type.getShape())) terms.push_back("(" + Expr(map.getResult(d)) + ") == 0");
  return terms.empty() ? "" : "if (" + absl::StrJoin(terms, " && ") + ") ";
}

std::string KernelEmitter::DimExpr(int d) {
  auto domain = kernel_->getAttrOfType<mlir::DenseI64ArrayAttr>("tir.iteration_domain").asArrayRef();
  if (d >= 0 && d < static_cast<int>(domain.size()) && domain[d] >= 0) return absl::StrCat("(tir_i64)", domain[d]);
  return absl::StrCat("a.dim[", d, "]");
}

bool KernelEmitter::NarrowDims(const std::vector<int> &dims) {
  auto domain = kernel_->getAttrOfType<mlir::DenseI64ArrayAttr>("tir.iteration_domain").asArrayRef();
  int64_t product = 1;
  for (int d : dims) {
    if (domain[d] < 0) return false;
    product *= domain[d];
    if (product > kNarrowLimit) return false;
  }
  return true;
}

// `lin` (below the product of the extents of `dims`) as indices i<d>,
// the last dim fastest. Static extents are constants (a division by a
// constant is a multiply and shifts).
std::string KernelEmitter::Delinearize(const std::string &lin, const std::vector<int> &dims, const std::string &indent) {
  return DelinearizeWidth(lin, dims, indent, NarrowDims(dims));
}

std::string KernelEmitter::DelinearizeWidth(const std::string &lin, const std::vector<int> &dims, const std::string &indent,
                                            bool narrow) {
  auto domain = kernel_->getAttrOfType<mlir::DenseI64ArrayAttr>("tir.iteration_domain").asArrayRef();
  const std::string type = narrow ? "tir_u32" : "tir_i64";
  std::string code = absl::StrCat(indent, type, " rem_", lin, " = (", type, ")", lin, ";\n");
  for (int k = static_cast<int>(dims.size()) - 1; k >= 0; --k) {
    const int d = dims[k];
    if (k == 0) {
      absl::StrAppend(&code, indent, "const tir_i64 i", d, " = rem_", lin, ";\n");
      continue;
    }
    // (An extent of 0 divides as 1: the domain has no points to reach here.)
    std::string extent;
    const int64_t e = std::max<int64_t>(domain[d], 1);
    if (domain[d] >= 0) extent = narrow ? absl::StrCat(e, "u") : absl::StrCat("(tir_i64)", e);
    else extent = narrow ? absl::StrCat("(tir_u32)a.dim[", d, "]") : absl::StrCat("a.dim[", d, "]");
    absl::StrAppend(&code, indent, "const tir_i64 i", d, " = rem_", lin, " % ", extent, "; rem_", lin, " /= ", extent,
                    ";\n");
  }
  return code;
}

std::vector<mlir::Operation *> KernelEmitter::Ordered(const std::set<mlir::Operation *> &ops) {
  std::vector<mlir::Operation *> out;
  for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) {
    if (ops.count(&op)) out.push_back(&op);
  }
  return out;
}

// The row-domain ops `roots` depend on, in graph order.
std::vector<mlir::Operation *> KernelEmitter::Slice(mlir::ValueRange roots, const std::set<mlir::Operation *> &rowOps) {
  std::set<mlir::Operation *> slice;
  std::vector<mlir::Value> work(roots.begin(), roots.end());
  while (!work.empty()) {
    mlir::Value v = work.back();
    work.pop_back();
    mlir::Operation *def = v.getDefiningOp();
    if (!def || !rowOps.count(def) || slice.count(def)) continue;
    slice.insert(def);
    for (mlir::Value o : def->getOperands()) work.push_back(o);
  }
  return Ordered(slice);
}

// The C type of a body scalar of type `t`.
absl::StatusOr<std::string> KernelEmitter::BodyCType(mlir::Type t) {
  if (t.isa<mlir::IntegerType>()) return std::string("tir_u64");
  TIR_ASSIGN_OR_RETURN(TypeInfo info, Info(t));
  return info.compute;
}

// The C expression of body op `op` on `a` (its operands' expressions).
absl::StatusOr<std::string> KernelEmitter::BodyOpExpr(mlir::Operation &op, const std::vector<std::string> &a) {
  std::optional<BodyOp> kind = classifyBodyOp(op);
  if (!kind) {
    return Unsupported("UNSUPPORTED_OP", op.getName().getStringRef().str() + " is not supported in a reduce_ud body");
  }
  mlir::Type rt = op.getResult(0).getType();
  const unsigned rw = rt.getIntOrFloatBitWidth();
  const unsigned w = op.getNumOperands() > 0 ? op.getOperand(0).getType().getIntOrFloatBitWidth() : rw;
  const std::string W = std::to_string(w), RW = std::to_string(rw);
  auto rounded = [&](const std::string &x) -> absl::StatusOr<std::string> {
    TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(rt));
    return Sub(t.round, x);
  };
  auto bits = [&](const std::string &x) { return "tir_bits(" + x + ", " + RW + ")"; };
  switch (*kind) {
    case BodyOp::kConstant: {
      mlir::Attribute c = llvm::cast<mlir::arith::ConstantOp>(op).getValue();
      if (auto fa = c.dyn_cast<mlir::FloatAttr>()) return rounded(Literal(fa.getValueAsDouble()));
      return bits(absl::StrCat(c.cast<mlir::IntegerAttr>().getValue().getZExtValue(), "ull"));
    }
    case BodyOp::kAddF: return rounded(a[0] + " + " + a[1]);
    case BodyOp::kSubF: return rounded(a[0] + " - " + a[1]);
    case BodyOp::kMulF: return rounded(a[0] + " * " + a[1]);
    case BodyOp::kDivF: return rounded(a[0] + " / " + a[1]);
    case BodyOp::kRemF: return rounded("fmod(" + a[0] + ", " + a[1] + ")");
    case BodyOp::kNegF: return rounded("-(" + a[0] + ")");
    case BodyOp::kMaxF: return rounded("tir_arith_maxf(" + a[0] + ", " + a[1] + ")");
    case BodyOp::kMinF: return rounded("tir_arith_minf(" + a[0] + ", " + a[1] + ")");
    case BodyOp::kCmpF:
      return absl::StrCat("tir_arith_cmpf(", a[0], ", ", a[1], ", ",
                          static_cast<int>(llvm::cast<mlir::arith::CmpFOp>(op).getPredicate()), ")");
    case BodyOp::kExtF: case BodyOp::kTruncF: return rounded(a[0]);
    case BodyOp::kAddI: return bits(a[0] + " + " + a[1]);
    case BodyOp::kSubI: return bits(a[0] + " - " + a[1]);
    case BodyOp::kMulI: return bits(a[0] + " * " + a[1]);
    case BodyOp::kDivSI: return "tir_arith_divsi(" + a[0] + ", " + a[1] + ", " + W + ")";
    case BodyOp::kCeilDivSI: return "tir_arith_divround(" + a[0] + ", " + a[1] + ", " + W + ", true)";
    case BodyOp::kFloorDivSI: return "tir_arith_divround(" + a[0] + ", " + a[1] + ", " + W + ", false)";
    case BodyOp::kDivUI: return "tir_arith_divui(" + a[0] + ", " + a[1] + ")";
    case BodyOp::kCeilDivUI: return "tir_arith_ceildivui(" + a[0] + ", " + a[1] + ")";
    case BodyOp::kRemSI: return "tir_arith_remsi(" + a[0] + ", " + a[1] + ", " + W + ")";
    case BodyOp::kRemUI: return "tir_arith_remui(" + a[0] + ", " + a[1] + ")";
    case BodyOp::kMaxSI: return "tir_arith_maxsi(" + a[0] + ", " + a[1] + ", " + W + ")";
    case BodyOp::kMinSI: return "tir_arith_minsi(" + a[0] + ", " + a[1] + ", " + W + ")";
    case BodyOp::kMaxUI: return "tir_max(" + a[0] + ", " + a[1] + ")";
    case BodyOp::kMinUI: return "tir_min(" + a[0] + ", " + a[1] + ")";
    case BodyOp::kAndI: return "(" + a[0] + " & " + a[1] + ")";
    case BodyOp::kOrI: return "(" + a[0] + " | " + a[1] + ")";
    case BodyOp::kXOrI: return "(" + a[0] + " ^ " + a[1] + ")";
    case BodyOp::kShLI: return "tir_arith_shli(" + a[0] + ", " + a[1] + ", " + W + ")";
    case BodyOp::kShRSI: return "tir_arith_shrsi(" + a[0] + ", " + a[1] + ", " + W + ")";
    case BodyOp::kShRUI: return "tir_arith_shrui(" + a[0] + ", " + a[1] + ", " + W + ")";
    case BodyOp::kCmpI:
      return absl::StrCat("tir_arith_cmpi(", a[0], ", ", a[1], ", ", w, ", ",
                          static_cast<int>(llvm::cast<mlir::arith::CmpIOp>(op).getPredicate()), ")");
    case BodyOp::kExtSI: return bits("(tir_u64)tir_sbits(" + a[0] + ", " + W + ")");
    case BodyOp::kExtUI: return a[0];
    case BodyOp::kTruncI: return bits(a[0]);
    case BodyOp::kSIToFP: return rounded("(double)tir_sbits(" + a[0] + ", " + W + ")");
    case BodyOp::kUIToFP: return rounded("(double)(" + a[0] + ")");
    case BodyOp::kFPToSI: return "tir_arith_fptoi((double)(" + a[0] + "), " + RW + ", true)";
    case BodyOp::kFPToUI: return "tir_arith_fptoi((double)(" + a[0] + "), " + RW + ", false)";
    case BodyOp::kSelect: return "((" + a[0] + ") & 1) ? (" + a[1] + ") : (" + a[2] + ")";
  }
  return Unsupported("UNSUPPORTED_OP", op.getName().getStringRef().str());
}

}  // namespace tir::codegen::detail
