// Reduction kernels: rows_per_block rows per block, threads_per_row
// threads per row, a pass per reduction and a group reduction after it.

#include "compiler/codegen/KernelEmitter.h"

#include "absl/strings/str_cat.h"
#include "compiler/ir/ReduceBody.h"
#include "compiler/support/status.h"

namespace tir::codegen::detail {

absl::StatusOr<std::string> KernelEmitter::Reduction() {
  bool userDefined = false;
  for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) userDefined |= llvm::isa<ReduceUdOp>(op);
  // A user-defined combiner is applied element by element in order, so its
  // rows are reduced by one thread each.
  const int64_t tpr = userDefined ? 1 : Param("threads_per_row", 128), rpb = Param("rows_per_block", 1);
  std::vector<int> par, red;
  for (int d = 0; d < rank_; ++d) (reduced_.count(d) ? red : par).push_back(d);
  std::string code = absl::StrCat(
      "  const int tpr = TIR_LANES ? ", tpr, " : 1;\n  const int rpb = ", rpb, ";\n",
      "  TIR_SHARED_ARRAY(double, scratch_f, ", tpr * rpb, ");\n  TIR_SHARED_ARRAY(tir_i64, scratch_i, ", tpr * rpb, ");\n",
      "  tir_i64 rows = 1;\n");
  for (int d : par) absl::StrAppend(&code, "  rows *= a.dim[", d, "];\n");
  absl::StrAppend(&code, "  tir_i64 len = 1;\n");
  for (int d : red) absl::StrAppend(&code, "  len *= a.dim[", d, "];\n");
  // A block owns rpb row slots: on a GPU each group of tpr threads takes one
  // (the loop runs once), on the host the block's one thread takes them all.
  absl::StrAppend(&code, "  for (int slot = TIR_LANES ? (int)(threadIdx.x / tpr) : 0; slot < rpb;",
                  " slot += TIR_LANES ? rpb : 1) {\n",
                  "  const tir_i64 row = (tir_i64)blockIdx.x * rpb + slot;\n",
                  "  const int lane = threadIdx.x % tpr;\n  const bool active = row < rows;\n",
                  "  const tir_i64 row_c = active ? row : 0;\n");
  absl::StrAppend(&code, Delinearize("row_c", par, "  "));
  // Reduced-domain code sees the reduced indices as 0.
  std::string top;
  for (int d : red) absl::StrAppend(&top, "  const tir_i64 i", d, " = 0;\n");
  absl::StrAppend(&code, "  {\n", top);
  // Walk ops in order: reductions become passes, reduced-domain ops scalars.
  std::set<mlir::Operation *> rowOps;
  for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) {
    auto m = maps_.results.find(&op);
    if (m != maps_.results.end() && UsesReduced(m->second) && !llvm::isa<ReduceOp, ReduceUdOp>(op)) rowOps.insert(&op);
  }
  for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) {
    if (auto r = llvm::dyn_cast<ReduceOp>(op)) {
      TIR_RETURN_IF_ERROR(ReductionPass(r, rowOps, red, code));
      continue;
    }
    if (auto ud = llvm::dyn_cast<ReduceUdOp>(op)) {
      TIR_RETURN_IF_ERROR(UserReductionPass(ud, rowOps, red, code));
      continue;
    }
    if (!rowOps.count(&op)) TIR_RETURN_IF_ERROR(EmitOp(&op, code, "    "));
  }
  // Outputs: row-domain ones in a final pass, reduced-domain ones once per row.
  std::string rowPass;
  auto saved = values_;
  for (mlir::Operation *op : Ordered(rowOps)) TIR_RETURN_IF_ERROR(EmitOp(op, rowPass, "        "));
  std::string stores;
  TIR_RETURN_IF_ERROR(StoreOutputs(stores, "        ", 1));
  if (!stores.empty()) {
    absl::StrAppend(&code, "    if (active) for (tir_i64 j = lane; j < len; j += tpr) {\n");
    absl::StrAppend(&code, InnerIndices(red), rowPass, stores, "    }\n");
  }
  values_ = saved;
  std::string redStores;
  TIR_RETURN_IF_ERROR(StoreOutputs(redStores, "      ", 0));
  if (!redStores.empty()) absl::StrAppend(&code, "    if (active && lane == 0) {\n", redStores, "    }\n");
  absl::StrAppend(&code, "  }\n  }\n");
  auto *g = launch_.add_grid();
  g->set_constant(1);
  g->set_divisor(rpb);
  AddDomainDims(g, /*onlyParallel=*/true);
  launch_.add_grid()->set_constant(1);
  launch_.add_grid()->set_constant(1);
  launch_.add_block(tpr * rpb);
  launch_.add_block(1);
  launch_.add_block(1);
  return code;
}

std::string KernelEmitter::InnerIndices(const std::vector<int> &red) {
  std::string s = "        tir_i64 rem_j = j;\n";
  for (int k = static_cast<int>(red.size()) - 1; k >= 0; --k) {
    const int d = red[k];
    if (k == 0) {
      absl::StrAppend(&s, "        const tir_i64 i", d, " = rem_j;\n");
    } else {
      absl::StrAppend(&s, "        const tir_i64 i", d, " = rem_j % a.dim[", d, "]; rem_j /= a.dim[", d, "];\n");
    }
  }
  return s;
}

// One pass over each row computing reduction `r`.
absl::Status KernelEmitter::ReductionPass(ReduceOp r, const std::set<mlir::Operation *> &rowOps, const std::vector<int> &red,
                           std::string &code) {
  TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(r.getInput().getType()));
  const bool ints = !t.is_float;
  const std::string acc = absl::StrCat("acc", next_++);
  const std::string at = ints ? "tir_i64" : "double";
  std::string init, combine, finish;
  const ReductionMode mode = r.getReductionMode();
  switch (mode) {
    case ReductionMode::add: case ReductionMode::avg: case ReductionMode::norm1: case ReductionMode::norm2:
      init = "0"; combine = "%a + %b"; break;
    case ReductionMode::mul: case ReductionMode::mul_no_zeros: init = "1"; combine = "%a * %b"; break;
    case ReductionMode::customize:
      return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_GRAPH", "reduce with reduction_mode customize");
    case ReductionMode::max: case ReductionMode::amax:
      init = ints ? (t.is_unsigned ? "0" : "(-9223372036854775807ll - 1)") : "-TIR_INF";
      combine = ints ? "tir_max(%a, %b)" : "tir_fmax(%a, %b)"; break;
    case ReductionMode::min:
      init = ints ? "9223372036854775807ll" : "TIR_INF";
      combine = ints ? "tir_min(%a, %b)" : "tir_fmin(%a, %b)"; break;
  }
  auto comb = [&](const std::string &x, const std::string &y) {
    std::string c = combine;
    c.replace(c.find("%a"), 2, x);
    c.replace(c.find("%b"), 2, y);
    return c;
  };
  absl::StrAppend(&code, "    ", at, " ", acc, " = ", init, ";\n",
                  "    if (active) for (tir_i64 j = lane; j < len; j += tpr) {\n", InnerIndices(red));
  auto saved = values_;
  std::string inner;
  for (mlir::Operation *op : Slice(r->getOperands(), rowOps)) TIR_RETURN_IF_ERROR(EmitOp(op, inner, "        "));
  TIR_ASSIGN_OR_RETURN(std::string x, Operand(r->getOpOperand(0), inner, "        "));
  values_ = saved;
  std::string term = "(" + at + ")(" + x + ")";
  if (mode == ReductionMode::amax || mode == ReductionMode::norm1) term = ints ? "tir_max(" + term + ", -" + term + ")" : "fabs(" + term + ")";
  if (mode == ReductionMode::norm2) term = term + " * " + term;
  // Zeros (+0 and -0) count as 1; NaN is not a zero.
  if (mode == ReductionMode::mul_no_zeros) term = "tir_nonzero_or_one(" + term + ")";
  absl::StrAppend(&code, inner, "        ", acc, " = ", comb(acc, term), ";\n    }\n");
  absl::StrAppend(&code, "    ", acc, " = tir_group_reduce(", acc, ", tpr, ", ints ? "scratch_i" : "scratch_f",
                  ", [](", at, " x, ", at, " y) { return ", comb("x", "y"), "; });\n");
  std::string value = acc;
  if (mode == ReductionMode::avg) value = ints ? acc + " / (len ? len : 1)" : acc + " / (double)len";
  if (mode == ReductionMode::norm2) value = "sqrt(" + acc + ")";
  const std::string var = absl::StrCat("v", next_++);
  absl::StrAppend(&code, "    const ", t.compute, " ", var, " = ", Sub(t.round, "(" + t.compute + ")(" + value + ")"), ";\n");
  values_[r.getOutput().getAsOpaquePointer()] = var;
  return absl::OkStatus();
}

// A reduce_ud: the region's scalar ops (compiler/ir/ReduceBody.h) run once
// per element, in order, on typed scalars: integers as tir_u64 bit patterns
// of their width, floats in their compute type rounded after every op, as
// the reference interpreter evaluates them.
absl::Status KernelEmitter::UserReductionPass(ReduceUdOp ud, const std::set<mlir::Operation *> &rowOps,
                               const std::vector<int> &red, std::string &code) {
  const size_t n = ud.getInputs().size();
  mlir::Block &body = ud.getBody().front();
  std::vector<std::string> accs;
  for (size_t i = 0; i < n; ++i) {
    mlir::Type e = ud.getOutputs()[i].getType().cast<mlir::ShapedType>().getElementType();
    TIR_ASSIGN_OR_RETURN(std::string ctype, BodyCType(e));
    mlir::Attribute id = ud.getIdentity()[i];
    std::string init;
    if (auto fa = id.dyn_cast<mlir::FloatAttr>()) {
      TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(e));
      init = Sub(t.round, Literal(fa.getValueAsDouble()));
    } else {
      const uint64_t bits = id.cast<mlir::IntegerAttr>().getValue().getZExtValue();
      init = absl::StrCat("tir_bits(", bits, "ull, ", e.getIntOrFloatBitWidth(), ")");
    }
    accs.push_back(absl::StrCat("uacc", next_++));
    absl::StrAppend(&code, "    ", ctype, " ", accs.back(), " = ", init, ";\n");
  }
  absl::StrAppend(&code, "    if (active) for (tir_i64 j = 0; j < len; ++j) {\n", InnerIndices(red));
  auto saved = values_;
  std::string inner;
  for (mlir::Operation *op : Slice(ud.getInputs(), rowOps)) TIR_RETURN_IF_ERROR(EmitOp(op, inner, "        "));
  std::map<const void *, std::string> scalars;
  for (size_t i = 0; i < n; ++i) {
    scalars[body.getArgument(i).getAsOpaquePointer()] = accs[i];
    TIR_ASSIGN_OR_RETURN(std::string x, Operand(ud->getOpOperand(i), inner, "        "));
    mlir::Type e = ud.getInputs()[i].getType().cast<mlir::ShapedType>().getElementType();
    scalars[body.getArgument(n + i).getAsOpaquePointer()] =
        e.isa<mlir::FloatType>() ? "(" + x + ")"
                                 : absl::StrCat("tir_bits((tir_u64)(", x, "), ", e.getIntOrFloatBitWidth(), ")");
  }
  values_ = saved;
  for (mlir::Operation &op : body.without_terminator()) {
    std::vector<std::string> args;
    for (mlir::Value v : op.getOperands()) args.push_back(scalars[v.getAsOpaquePointer()]);
    TIR_ASSIGN_OR_RETURN(std::string e, BodyOpExpr(op, args));
    TIR_ASSIGN_OR_RETURN(std::string ctype, BodyCType(op.getResult(0).getType()));
    const std::string var = absl::StrCat("r", next_++);
    absl::StrAppend(&inner, "        const ", ctype, " ", var, " = ", e, ";\n");
    scalars[op.getResult(0).getAsOpaquePointer()] = var;
  }
  for (size_t i = 0; i < n; ++i) {
    absl::StrAppend(&inner, "        ", accs[i], " = ", scalars[body.getTerminator()->getOperand(i).getAsOpaquePointer()],
                    ";\n");
  }
  absl::StrAppend(&code, inner, "    }\n");
  for (size_t i = 0; i < n; ++i) {
    // Back to the element's compute type: signed integers sign-extend.
    mlir::Type e = ud.getOutputs()[i].getType().cast<mlir::ShapedType>().getElementType();
    std::string v = accs[i];
    if (auto it = e.dyn_cast<mlir::IntegerType>(); it && !it.isUnsigned()) {
      v = absl::StrCat("(tir_i64)tir_sbits(", accs[i], ", ", it.getWidth(), ")");
    }
    values_[ud.getOutputs()[i].getAsOpaquePointer()] = v;
  }
  return absl::OkStatus();
}

}  // namespace tir::codegen::detail
