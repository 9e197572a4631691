// Reduction kernels. A block owns rows_per_block rows; threads_per_row
// threads share a row. Per candidate:
//  - strategy streaming (1): every pass over a row reads it from global
//    memory (one pass for a plain reduction, more when the kernel reduces
//    again or writes the row back, as softmax does);
//  - strategy row_resident (0): the row's input elements are read once into
//    registers (rows of static length) and every pass and the final
//    row-domain pass (softmax's normalize) reads them there: one read, one
//    write;
//  - strategy split (2): `split` blocks share a row, each reducing a chunk;
//    the block that finishes last (an integer ticket in the workspace)
//    combines the chunks' partials in chunk order and stores the row: two
//    phases in one launch, deterministic, no float atomics;
//  - vector_width runs of consecutive row elements per thread, loaded as one
//    16-byte access where contiguous and aligned;
//  - a reduction over leading dims (the last dim kept) puts consecutive
//    threads on consecutive kept elements (coalesced), threads_per_row of
//    them along the reduced dims, combined through shared memory.
// Within a row, lanes reduce by warp shuffles and then one shared-memory
// round between warps (the row's first warp reduces the warps' partials and
// stores the result once). f32/bf16/f16 data accumulate in f32, f64 in f64,
// integers in 64 bits.
//
// A max whose only use is the exp(a - max) an add-reduction sums
// (softmax's statistics, compiler/ir/OnlineSoftmax.h) is computed with that
// sum in one pass when the row is not cached: a row too long for chip is
// read once for both.
//
// Per row pass:
//  - a float division of row elements by a per-row value (softmax's
//    normalize) multiplies by the reciprocal, computed once per row;
//  - row_resident keeps in registers the row values one pass computes and a
//    later pass reads again (softmax's exp), within a register budget;
//  - row outputs leave as runs of vector_width (one wide store where
//    contiguous and aligned);
//  - static extents are constants, and reduced indices delinearize in 32
//    bits when the row's length allows.

#include "compiler/codegen/KernelEmitter.h"

#include <functional>

#include "absl/strings/str_cat.h"
#include "compiler/ir/ReduceBody.h"
#include "compiler/reference/Elementwise.h"
#include "compiler/support/status.h"

namespace tir::codegen::detail {
namespace {

absl::Status BadCandidate(const std::string &m) {
  return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_CANDIDATE", m);
}

// Phase two of a row split over `split` blocks: the chunk's partial `acc`
// (of C type `type`) goes to the workspace; the block that takes the row's
// last ticket starts from `identity`, combines all partials in chunk order
// (`combine(acc, partial)`, each read through `load`) and resets the
// counter for the next launch.
std::string SplitCombine(int64_t split, const std::string &type, const std::string &acc, const std::string &identity,
                         const std::function<std::string(const std::string &, const std::string &)> &combine,
                         const std::string &load) {
  return absl::StrCat(
      "    if (lane == 0 && active) {\n", "      unsigned *tickets = (unsigned *)a.workspace;\n", "      ", type,
      " *part = (", type, " *)(a.workspace + rows * 8);\n", "      part[row * ", split, " + chunk] = ", acc,
      ";\n      tir_fence();\n", "      last_chunk = tir_ticket(&tickets[row]) == ", split - 1, ";\n",
      "      if (last_chunk) {\n        tir_fence();\n        ", acc, " = ", identity, ";\n",
      "        for (int c = 0; c < ", split, "; ++c) ", acc, " = ",
      combine(acc, absl::StrCat(load, "(&part[row * ", split, " + c])")), ";\n        tickets[row] = 0;\n      }\n    }\n");
}

}  // namespace

std::string KernelEmitter::AccType(const TypeInfo &t, mlir::Type e) {
  if (!t.is_float) return "tir_i64";
  return e.isF64() ? "double" : "float";
}

absl::StatusOr<std::string> KernelEmitter::Reduction() {
  bool userDefined = false;
  int reduceOps = 0;
  for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) {
    userDefined |= llvm::isa<ReduceUdOp>(op);
    reduceOps += llvm::isa<ReduceOp>(op);
  }
  // Online max-and-sum pairs: one pass (and one reduction) each.
  std::map<mlir::Operation *, OnlineSoftmax> online;
  std::set<mlir::Operation *> onlineSums;
  std::vector<int> par, red;
  for (int d = 0; d < rank_; ++d) (reduced_.count(d) ? red : par).push_back(d);
  auto domain = kernel_->getAttrOfType<mlir::DenseI64ArrayAttr>("tir.iteration_domain").asArrayRef();
  // Reducing leading dims with the last one kept: threads along the kept dim.
  rs_ = ReductionLayout{};
  rs_.column = !red.empty() && !par.empty() && par.back() == rank_ - 1;
  rs_.strategy = Param("strategy", 1);
  // A user-defined combiner is applied element by element in order, so its
  // rows are reduced by one thread each.
  rs_.tpr = userDefined ? 1 : Param("threads_per_row", rs_.column ? 1 : 128);
  rs_.rpb = Param("rows_per_block", rs_.column ? 32 : 1);
  rs_.vec = rs_.column || userDefined ? 1 : Param("vector_width", 1);
  rs_.split = rs_.strategy == 2 ? Param("split", 1) : 1;
  rs_.red = red;
  int64_t staticLen = 1;
  bool lenStatic = true;
  for (int d : red) {
    if (domain[d] < 0) lenStatic = false;
    else staticLen *= domain[d];
  }
  if (rs_.tpr < 1 || rs_.rpb < 1 || rs_.vec < 1 || rs_.split < 1 || rs_.tpr * rs_.rpb > 1024 ||
      (rs_.tpr & (rs_.tpr - 1)) != 0 || (rs_.vec & (rs_.vec - 1)) != 0) {
    return BadCandidate(absl::StrCat("reduction tile threads_per_row=", rs_.tpr, " rows_per_block=", rs_.rpb,
                                     " vector_width=", rs_.vec, " split=", rs_.split, " cannot be generated"));
  }
  // Outputs stored per element of the row (reduced values broadcast back).
  bool rowOutputs = false;
  auto results = llvm::cast<ResultsOp>(kernel_.getBodyBlock().getTerminator());
  for (mlir::OpOperand &use : results->getOpOperands()) {
    auto m = maps_.operands.find(&use);
    if (m != maps_.operands.end() && UsesReduced(m->second)) rowOutputs = true;
  }
  if (rs_.strategy != 0 && !rs_.column) {
    for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) {
      auto max = llvm::dyn_cast<ReduceOp>(op);
      if (!max) continue;
      std::optional<OnlineSoftmax> o = MatchOnlineSoftmax(max, [&](mlir::Operation *x) {
        return x->getBlock() == &kernel_.getBodyBlock() && !llvm::isa<ResultsOp>(x);
      });
      if (!o || onlineSums.count(o->sum.getOperation())) continue;
      online.emplace(max.getOperation(), *o);
      onlineSums.insert(o->sum.getOperation());
    }
  }
  reduceOps -= static_cast<int>(online.size());
  if (rs_.split > 1 && (rs_.rpb != 1 || reduceOps != 1 || userDefined || rowOutputs || rs_.column)) {
    return BadCandidate("split needs one reduction of whole rows, one row a block, nothing stored per element");
  }
  if (rs_.strategy == 0) {
    if (!lenStatic || userDefined) return BadCandidate("row_resident needs rows of static length and no reduce_ud");
    if (rs_.vec > 1 && domain[red.back()] % rs_.vec != 0) {
      return BadCandidate("row_resident vector runs must divide the innermost reduced extent");
    }
    rs_.cache_gpu = (staticLen + rs_.tpr * rs_.vec - 1) / (rs_.tpr * rs_.vec);
    rs_.cache_host = (staticLen + rs_.vec - 1) / rs_.vec;
    rs_.cache = true;
  }
  const int64_t threads = rs_.tpr * rs_.rpb;
  threads_ = threads;
  // Accumulator types in use, for the scratch arrays of the block round.
  std::set<std::string> accTypes;
  for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) {
    if (auto r = llvm::dyn_cast<ReduceOp>(op)) {
      TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(r.getInput().getType()));
      accTypes.insert(AccType(t, r.getInput().getType().cast<mlir::ShapedType>().getElementType()));
    }
  }
  // Row layout: one scratch entry per warp, then one result per row slot
  // when a row spans warps; column layout: one per thread.
  const int64_t warps = std::max<int64_t>(1, (threads + 31) / 32);
  const int64_t scratchN = rs_.column ? threads : warps + (rs_.tpr > 32 ? threads / rs_.tpr : 0);
  std::string code = absl::StrCat("  const int tpr = TIR_LANES ? ", rs_.tpr, " : 1;\n  const int rpb = ", rs_.rpb, ";\n");
  for (const std::string &at : accTypes) {
    absl::StrAppend(&code, "  TIR_SHARED_ARRAY(", at, ", scratch_", at == "tir_i64" ? "i" : at.substr(0, 1), ", ",
                    scratchN, ");\n");
  }
  std::set<std::string> onlineTypes;
  for (auto &[op, o] : online) {
    onlineTypes.insert(o.max.getInput().getType().cast<mlir::ShapedType>().getElementType().isF64() ? "double" : "float");
  }
  for (const std::string &at : onlineTypes) {
    absl::StrAppend(&code, "  TIR_SHARED_ARRAY(tir_online<", at, ">, scratch_o", at.substr(0, 1), ", ", scratchN, ");\n");
  }
  auto product = [&](const char *name, const std::vector<int> &dims) {
    int64_t known = 1;
    bool isStatic = true;
    for (int d : dims) {
      if (domain[d] < 0) isStatic = false;
      else known *= domain[d];
    }
    if (isStatic) return absl::StrCat("  const tir_i64 ", name, " = ", known, ";\n");
    std::string p = absl::StrCat("  tir_i64 ", name, " = 1;\n");
    for (int d : dims) absl::StrAppend(&p, "  ", name, " *= ", DimExpr(d), ";\n");
    return p;
  };
  absl::StrAppend(&code, product("rows", par), product("len", red));
  if (rs_.split > 1) {
    // Chunks are whole vector runs; the last chunk may be shorter or empty.
    absl::StrAppend(&code, "  const tir_i64 chunk = blockIdx.x % ", rs_.split, ";\n",
                    "  const tir_i64 per = ((len + ", rs_.split - 1, ") / ", rs_.split, " + ", rs_.vec - 1, ") / ", rs_.vec,
                    " * ", rs_.vec, ";\n",
                    "  const tir_i64 jb = chunk * per < len ? chunk * per : len;\n",
                    "  const tir_i64 je = jb + per < len ? jb + per : len;\n  bool last_chunk = true;\n");
  } else {
    absl::StrAppend(&code, "  const tir_i64 jb = 0, je = len;\n");
  }
  // A block owns rpb row slots: on a GPU each group of tpr threads takes one
  // (the loop runs once), on the host the block's one thread takes them all.
  const std::string slot0 = rs_.column ? "(int)(threadIdx.x % rpb)" : "(int)(threadIdx.x / tpr)";
  const std::string lane0 = rs_.column ? "(int)(threadIdx.x / rpb)" : "(int)(threadIdx.x % tpr)";
  absl::StrAppend(&code, "  for (int slot = TIR_LANES ? ", slot0, " : 0; slot < rpb; slot += TIR_LANES ? rpb : 1) {\n",
                  "  const tir_i64 row = (tir_i64)blockIdx.x / ", rs_.split, " * rpb + slot;\n",
                  "  const int lane = TIR_LANES ? ", lane0, " : 0;\n  const bool active = row < rows;\n",
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
  rowOps_ = rowOps;
  reciprocals_.clear();
  kept_.clear();
  if (rs_.cache) TIR_RETURN_IF_ERROR(CacheRow(rowOps, code));
  for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) {
    if (auto it = online.find(&op); it != online.end()) {
      TIR_RETURN_IF_ERROR(OnlinePass(it->second, rowOps, code));
      continue;
    }
    if (onlineSums.count(&op)) continue;  // computed with its max
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
  if (rowOutputs) {
    std::vector<mlir::Operation *> pass;
    for (mlir::Operation *op : Ordered(rowOps)) {
      if (!kept_.count(op)) pass.push_back(op);
    }
    TIR_RETURN_IF_ERROR(RowReciprocals(pass, code));
    row_store_runs_ = true;
    TIR_RETURN_IF_ERROR(RowLoop(code, [&](std::string &inner, const std::string &indent) -> absl::Status {
      for (const auto &[op, name] : kept_) values_[op->getResult(0).getAsOpaquePointer()] = name + "[e][v]";
      for (mlir::Operation *op : pass) TIR_RETURN_IF_ERROR(EmitOp(op, inner, indent));
      return StoreOutputs(inner, indent, 1);
    }));
    row_store_runs_ = false;
  }
  std::string redStores;
  TIR_RETURN_IF_ERROR(StoreOutputs(redStores, "      ", 0));
  if (!redStores.empty()) {
    absl::StrAppend(&code, "    if (active && lane == 0", rs_.split > 1 ? " && last_chunk" : "", ") {\n", redStores,
                    "    }\n");
  }
  absl::StrAppend(&code, "  }\n  }\n");
  auto *g = launch_.add_grid();
  g->set_constant(rs_.split);
  g->set_divisor(rs_.rpb);
  AddDomainDims(g, /*onlyParallel=*/true);
  launch_.add_grid()->set_constant(1);
  launch_.add_grid()->set_constant(1);
  launch_.add_block(threads);
  launch_.add_block(1);
  launch_.add_block(1);
  if (rs_.split > 1) {
    // Ticket counters first, 8 bytes a row (the same place for every
    // candidate of the kernel, so another candidate's partials never land
    // on them), then `split` 8-byte partials a row.
    // An online pair's partial is three values (tir_online); a split row
    // has at most one (the check above: one reduction or pair).
    const int64_t partial =
        online.empty() ? 8
                       : online.begin()->second.max.getInput().getType().cast<mlir::ShapedType>().getElementType().isF64() ? 24
                                                                                                                           : 12;
    auto *w = launch_.mutable_workspace_bytes();
    w->set_constant(rs_.split * partial + 8);
    AddDomainDims(w, /*onlyParallel=*/true);
  }
  return code;
}

std::string KernelEmitter::InnerIndices(const std::vector<int> &red, const std::string &var, const std::string &indent) {
  return DelinearizeWidth(var, red, indent, NarrowDims(red));
}

// Kernel inputs read along the row whose element run of vector_width lies
// along the innermost reduced dim (and that tir_load_run can move).
std::vector<mlir::OpOperand *> KernelEmitter::RowReads(const std::set<mlir::Operation *> &rowOps) {
  std::vector<mlir::OpOperand *> out;
  for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) {
    if (!rowOps.count(&op) && !llvm::isa<ReduceOp>(op)) continue;
    if (llvm::isa<ConcatenateOp, DimOp, ReshapeOp>(op)) continue;
    for (mlir::OpOperand &use : op.getOpOperands()) {
      auto arg = use.get().dyn_cast<mlir::BlockArgument>();
      auto map = maps_.operands.find(&use);
      if (!arg || map == maps_.operands.end() || !use.get().getType().isa<mlir::RankedTensorType>() ||
          !UsesReduced(map->second) || !RunFits(use.get().getType(), rs_.vec)) {
        continue;
      }
      out.push_back(&use);
    }
  }
  return out;
}

// Loads the row's input elements into registers once (row_resident):
// element run e of this lane is rc<k>[e][0..vec).
absl::Status KernelEmitter::CacheRow(const std::set<mlir::Operation *> &rowOps, std::string &code) {
  const int last = rs_.red.back();
  absl::StrAppend(&code, "    constexpr int rc_n = TIR_LANES ? ", rs_.cache_gpu, " : ", rs_.cache_host, ";\n");
  std::string loads;
  std::map<std::pair<unsigned, const void *>, std::string> named;
  for (mlir::OpOperand *use : RowReads(rowOps)) {
    auto arg = use->get().cast<mlir::BlockArgument>();
    mlir::AffineMap map = maps_.operands.find(use)->second;
    auto key = std::make_pair(arg.getArgNumber(), map.getAsOpaquePointer());
    auto [it, fresh] = named.emplace(key, absl::StrCat("rc", named.size()));
    rs_.cached[use] = it->second;
    if (!fresh) continue;
    TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(use->get().getType()));
    const std::string input = absl::StrCat("a.in", arg.getArgNumber());
    absl::StrAppend(&code, "    ", t.storage, " ", it->second, "[rc_n][", rs_.vec, "];\n");
    const int j = RunDim(map, last);
    if (j >= 0) {
      absl::StrAppend(&loads, "        tir_load_run<", rs_.vec, ">(", input, " + (", Offset(map, input + "_stride"), "), ",
                      input, "_stride[", j, "], ", it->second, "[e]);\n");
    } else {
      absl::StrAppend(&loads, "        for (int v = 0; v < ", rs_.vec, "; ++v) {\n          const tir_i64 i", last,
                      " = run_i", last, " + v;\n          ", it->second, "[e][v] = ", input, "[",
                      Offset(map, input + "_stride"), "];\n        }\n");
    }
  }
  absl::StrAppend(&code, "#pragma unroll\n    for (int e = 0; e < rc_n; ++e) {\n",
                  "      const tir_i64 j0 = ((tir_i64)e * tpr + lane) * ", rs_.vec, ";\n",
                  "      if (active && j0 < len) {\n", InnerIndices(rs_.red, "j0", "        "),
                  "        const tir_i64 run_i", last, " = i", last, "; (void)run_i", last, ";\n", loads, "      }\n    }\n");
  return absl::OkStatus();
}

// One loop over this lane's elements of the row [jb, je) with `body`
// emitted inside (reduced indices i<d> defined). Vector runs where the
// innermost reduced extent allows them (each input's run loaded once),
// else element by element; with the row cached, over the cache. With
// row_store_runs_, row outputs leave as runs.
absl::Status KernelEmitter::RowLoop(std::string &code,
                                    const std::function<absl::Status(std::string &, const std::string &)> &body) {
  const int last = rs_.red.back();
  auto domain = kernel_->getAttrOfType<mlir::DenseI64ArrayAttr>("tir.iteration_domain").asArrayRef();
  auto saved = values_;
  // Row outputs along the run: declared before the run's element loop,
  // stored after it (i<last> is the run's first index there).
  auto runStores = [&](std::string &decls, std::string &stores, const std::string &indent) -> absl::Status {
    if (!row_store_runs_ || rs_.vec == 1) return absl::OkStatus();
    auto results = llvm::cast<ResultsOp>(kernel_.getBodyBlock().getTerminator());
    for (mlir::OpOperand &use : results->getOpOperands()) {
      auto map = maps_.operands.find(&use);
      const unsigned i = use.getOperandNumber();
      if (map == maps_.operands.end() || !UsesReduced(map->second) || !RunFits(use.get().getType(), rs_.vec) ||
          !StoreGuard(i, map->second).empty()) {
        continue;
      }
      const int j = RunDim(map->second, last);
      if (j < 0) continue;
      TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(use.get().getType()));
      const std::string name = absl::StrCat("row_out", i), output = absl::StrCat("a.out", i);
      const std::string at = absl::StrCat(output, " + (", Offset(map->second, output + "_stride"), ")");
      absl::StrAppend(&decls, indent, t.storage, " ", name, "[", rs_.vec, "];\n");
      if (ProvenRun(kernel_.getResultAttrDict(i), use.get().getType(), map->second, j, rs_.vec)) {
        absl::StrAppend(&stores, indent, "tir_store_run_aligned<", rs_.vec, ">(", at, ", ", name, ");\n");
      } else {
        absl::StrAppend(&stores, indent, "tir_store_run<", rs_.vec, ">(", at, ", ", output, "_stride[", j, "], ", name,
                        ");\n");
      }
      run_writes_[i] = name;
    }
    return absl::OkStatus();
  };
  auto runBody = [&](std::string &out, const std::string &indent) -> absl::Status {
    std::string decls, stores, inner;
    TIR_RETURN_IF_ERROR(runStores(decls, stores, indent));
    TIR_RETURN_IF_ERROR(body(inner, indent + "  "));
    values_ = saved;
    run_writes_.clear();
    absl::StrAppend(&out, decls, indent, "const tir_i64 run_i", last, " = i", last, ";\n", "#pragma unroll\n", indent,
                    "for (int v = 0; v < ", rs_.vec, "; ++v) {\n", indent, "  const tir_i64 i", last, " = run_i", last,
                    " + v;\n", inner, indent, "}\n", stores);
    return absl::OkStatus();
  };
  if (rs_.cache) {
    for (const auto &[use, name] : rs_.cached) run_reads_[use] = name + "[e]";
    std::string inner;
    TIR_RETURN_IF_ERROR(runBody(inner, "        "));
    run_reads_.clear();
    absl::StrAppend(&code, "#pragma unroll\n    for (int e = 0; e < rc_n; ++e) {\n",
                    "      const tir_i64 j0 = ((tir_i64)e * tpr + lane) * ", rs_.vec, ";\n",
                    "      if (active && j0 < len) {\n", InnerIndices(rs_.red, "j0", "        "), inner, "      }\n    }\n");
    return absl::OkStatus();
  }
  // Runs stay inside the innermost reduced dim when its extent is a
  // multiple of the run; otherwise the element loop runs (with a static
  // extent that is known here).
  const bool runsCover = rs_.vec > 1 && domain[last] >= 0 && domain[last] % rs_.vec == 0;
  if (rs_.vec > 1) {
    std::string loads, inner;
    std::vector<std::pair<std::string, std::string>> candidates;  // name, its load
    std::map<std::pair<unsigned, const void *>, std::string> named;  // (input, map) -> its run
    for (mlir::OpOperand *use : RowReads(rowOps_)) {
      mlir::AffineMap map = maps_.operands.find(use)->second;
      const int j = RunDim(map, last);
      if (j < 0) continue;
      auto arg = use->get().cast<mlir::BlockArgument>();
      auto [it, fresh] = named.emplace(std::make_pair(arg.getArgNumber(), map.getAsOpaquePointer()),
                                       absl::StrCat("row_run", named.size()));
      run_reads_[use] = it->second;
      if (!fresh) continue;
      TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(use->get().getType()));
      const std::string &name = it->second, input = absl::StrCat("a.in", arg.getArgNumber());
      candidates.emplace_back(name, absl::StrCat("      ", t.storage, " ", name, "[", rs_.vec, "];\n      tir_load_run<",
                                                 rs_.vec, ">(", input, " + (", Offset(map, input + "_stride"), "), ", input,
                                                 "_stride[", j, "], ", name, ");\n"));
    }
    TIR_RETURN_IF_ERROR(runBody(inner, "      "));
    run_reads_.clear();
    // Only the runs this pass reads.
    for (const auto &[name, load] : candidates) {
      if (inner.find(name + "[") != std::string::npos) loads += load;
    }
    const std::string runs = absl::StrCat("    if (active) for (tir_i64 j0 = jb + (tir_i64)lane * ", rs_.vec,
                                          "; j0 < je; j0 += (tir_i64)tpr * ", rs_.vec, ") {\n",
                                          InnerIndices(rs_.red, "j0", "      "), loads, inner, "    }\n");
    if (runsCover) {
      absl::StrAppend(&code, runs);
      return absl::OkStatus();
    }
    absl::StrAppend(&code, "    if (a.dim[", last, "] % ", rs_.vec, " == 0) {\n", runs, "    } else {\n");
  }
  std::string inner;
  TIR_RETURN_IF_ERROR(body(inner, "      "));
  values_ = saved;
  absl::StrAppend(&code, "    if (active) for (tir_i64 j = jb + lane; j < je; j += tpr) {\n",
                  InnerIndices(rs_.red, "j", "      "), inner, "    }\n", rs_.vec > 1 ? "    }\n" : "");
  return absl::OkStatus();
}

// One pass over each row computing reduction `r`.
absl::Status KernelEmitter::ReductionPass(ReduceOp r, const std::set<mlir::Operation *> &rowOps, const std::vector<int> &red,
                                          std::string &code) {
  (void)red;
  rowOps_ = rowOps;
  TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(r.getInput().getType()));
  const bool ints = !t.is_float;
  const std::string acc = absl::StrCat("acc", next_++);
  const std::string at = AccType(t, r.getInput().getType().cast<mlir::ShapedType>().getElementType());
  const std::string scratch = at == "tir_i64" ? "scratch_i" : at == "float" ? "scratch_f" : "scratch_d";
  std::string init, combine;
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
  absl::StrAppend(&code, "    ", at, " ", acc, " = (", at, ")(", init, ");\n");
  // The row ops this pass computes (what an earlier pass kept is read).
  std::vector<mlir::Operation *> slice;
  for (mlir::Operation *op : Slice(r->getOperands(), rowOps)) {
    if (!kept_.count(op)) slice.push_back(op);
  }
  TIR_RETURN_IF_ERROR(RowReciprocals(slice, code));
  // Row-resident: a value of this pass that a later pass reads again (a
  // user outside the slice) stays in registers, `rc_n x vec` of them a
  // value, while the kept values stay within kKeepFloats a lane.
  constexpr int64_t kKeepFloats = 32;
  std::map<mlir::Operation *, std::string> keep;
  if (rs_.cache) {
    std::set<mlir::Operation *> in(slice.begin(), slice.end());
    for (mlir::Operation *op : slice) {
      if (op->getNumResults() != 1 || !op->getResult(0).getType().isa<mlir::RankedTensorType>()) continue;
      bool later = false;
      for (mlir::Operation *user : op->getResult(0).getUsers()) later |= !in.count(user) && user != r.getOperation();
      if (!later) continue;
      if (static_cast<int64_t>(kept_.size() + keep.size() + 1) * rs_.cache_gpu * rs_.vec > kKeepFloats) break;
      TIR_ASSIGN_OR_RETURN(TypeInfo kt, Info(op->getResult(0).getType()));
      const std::string name = absl::StrCat("kept", next_++);
      absl::StrAppend(&code, "    ", kt.compute, " ", name, "[rc_n][", rs_.vec, "];\n");
      keep[op] = name;
    }
  }
  TIR_RETURN_IF_ERROR(RowLoop(code, [&](std::string &inner, const std::string &indent) -> absl::Status {
    for (const auto &[op, name] : kept_) values_[op->getResult(0).getAsOpaquePointer()] = name + "[e][v]";
    for (mlir::Operation *op : slice) TIR_RETURN_IF_ERROR(EmitOp(op, inner, indent));
    for (const auto &[op, name] : keep) {
      absl::StrAppend(&inner, indent, name, "[e][v] = ", values_[op->getResult(0).getAsOpaquePointer()], ";\n");
    }
    TIR_ASSIGN_OR_RETURN(std::string x, Operand(r->getOpOperand(0), inner, indent));
    std::string term = "(" + at + ")(" + x + ")";
    if (mode == ReductionMode::amax || mode == ReductionMode::norm1) {
      term = ints ? "tir_max(" + term + ", -" + term + ")" : "fabs(" + term + ")";
    }
    if (mode == ReductionMode::norm2) term = term + " * " + term;
    // Zeros (+0 and -0) count as 1; NaN is not a zero.
    if (mode == ReductionMode::mul_no_zeros) term = "tir_nonzero_or_one(" + term + ")";
    absl::StrAppend(&inner, indent, acc, " = ", comb(acc, term), ";\n");
    return absl::OkStatus();
  }));
  kept_.insert(keep.begin(), keep.end());
  const std::string op = absl::StrCat("[](", at, " x, ", at, " y) { return ", comb("x", "y"), "; }");
  if (rs_.column) {
    absl::StrAppend(&code, "    ", acc, " = tir_strided_reduce(", acc, ", tpr, rpb, ", scratch, ", ", op, ");\n");
  } else {
    absl::StrAppend(&code, "    ", acc, " = tir_group_reduce(", acc, ", tpr, ", scratch, ", ", op, ");\n");
  }
  if (rs_.split > 1) {
    absl::StrAppend(&code, SplitCombine(rs_.split, at, acc, absl::StrCat("(", at, ")(", init, ")"), comb, "tir_volatile_load"));
  }
  std::string value = acc;
  if (mode == ReductionMode::avg) value = ints ? acc + " / (len ? len : 1)" : absl::StrCat(acc, " / (", at, ")len");
  if (mode == ReductionMode::norm2) value = "sqrt(" + acc + ")";
  const std::string var = absl::StrCat("v", next_++);
  absl::StrAppend(&code, "    const ", t.compute, " ", var, " = ", Sub(t.round, "(" + t.compute + ")(" + value + ")"), ";\n");
  values_[r.getOutput().getAsOpaquePointer()] = var;
  return absl::OkStatus();
}

absl::Status KernelEmitter::OnlinePass(OnlineSoftmax o, const std::set<mlir::Operation *> &rowOps,
                                        std::string &code) {
  rowOps_ = rowOps;
  TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(o.max.getInput().getType()));
  const bool f64 = o.max.getInput().getType().cast<mlir::ShapedType>().getElementType().isF64();
  const std::string at = f64 ? "double" : "float", ot = "tir_online<" + at + ">";
  const std::string scratch = f64 ? "scratch_od" : "scratch_of";
  const std::string acc = absl::StrCat("onl", next_++);
  absl::StrAppend(&code, "    ", ot, " ", acc, " = tir_online_identity<", at, ">();\n");
  std::vector<mlir::Operation *> slice = Slice(o.max->getOperands(), rowOps);
  TIR_RETURN_IF_ERROR(RowReciprocals(slice, code));
  TIR_RETURN_IF_ERROR(RowLoop(code, [&](std::string &inner, const std::string &indent) -> absl::Status {
    for (mlir::Operation *op : slice) TIR_RETURN_IF_ERROR(EmitOp(op, inner, indent));
    TIR_ASSIGN_OR_RETURN(std::string x, Operand(o.max->getOpOperand(0), inner, indent));
    const std::string a = absl::StrCat("oa", next_++);
    absl::StrAppend(&inner, indent, "const ", at, " ", a, " = (", at, ")(", x, ");\n", indent, acc, ".t = tir_fmax(",
                    acc, ".t, ", a, ");\n", indent, "if (", a, " > ", acc, ".r) {\n", indent, "  ", acc, ".s *= tir_online_scale(",
                    acc, ".r, ", a, ");\n", indent, "  ", acc, ".r = ", a, ";\n", indent, "}\n");
    // exp(a - m) against the running reference (a - r <= 0, or NaN).
    values_[o.max.getOutput().getAsOpaquePointer()] = acc + ".r";
    if (o.broadcast) values_[o.broadcast.getOutput().getAsOpaquePointer()] = acc + ".r";
    TIR_RETURN_IF_ERROR(EmitOp(o.sub.getOperation(), inner, indent));
    TIR_ASSIGN_OR_RETURN(std::string d, Operand(o.exp->getOpOperand(0), inner, indent));
    absl::StrAppend(&inner, indent, acc, ".s += tir_online_exp((", at, ")(", d, "));\n");
    return absl::OkStatus();
  }));
  const std::string op = absl::StrCat("[](", ot, " x, ", ot, " y) { return tir_online_combine(x, y); }");
  absl::StrAppend(&code, "    ", acc, " = tir_group_reduce(", acc, ", tpr, ", scratch, ", ", op, ");\n");
  if (rs_.split > 1) {
    auto combine = [](const std::string &x, const std::string &y) { return absl::StrCat("tir_online_combine(", x, ", ", y, ")"); };
    absl::StrAppend(&code, SplitCombine(rs_.split, ot, acc, absl::StrCat("tir_online_identity<", at, ">()"), combine,
                                        "tir_online_volatile_load"));
  }
  // m is the true max (NaN when any element is); z rescales s from the
  // reference to it: NaN for a row of -inf, as exp(-inf - -inf) sums to.
  const std::string m = absl::StrCat("v", next_++), z = absl::StrCat("v", next_++);
  absl::StrAppend(&code, "    const ", t.compute, " ", m, " = (", t.compute, ")(", acc, ".t);\n", "    const ",
                  t.compute, " ", z, " = len == 0 ? (", t.compute, ")0 : ",
                  Sub(t.round, absl::StrCat("(", t.compute, ")tir_online_sum(", acc, ")")), ";\n");
  values_[o.max.getOutput().getAsOpaquePointer()] = m;
  values_[o.sum.getOutput().getAsOpaquePointer()] = z;
  return absl::OkStatus();
}

// Float divisions among `ops` whose divisor is a per-row value (a kernel
// input read without the reduced dims, or a value computed once per row)
// multiply by its reciprocal, computed here once per row.
absl::Status KernelEmitter::RowReciprocals(const std::vector<mlir::Operation *> &ops, std::string &code) {
  for (mlir::Operation *op : ops) {
    auto pw = reference::PointwiseOf(op->getName().getStringRef());
    if (!pw || *pw != reference::Pointwise::kDiv || reciprocals_.count(op)) continue;
    TIR_ASSIGN_OR_RETURN(TypeInfo out, Info(op->getResult(0).getType()));
    TIR_ASSIGN_OR_RETURN(TypeInfo in, Info(op->getOperand(0).getType()));
    if (!out.is_float || !in.is_float) continue;
    mlir::OpOperand &divisor = op->getOpOperand(1);
    if (divisor.get().isa<mlir::BlockArgument>()) {
      auto map = maps_.operands.find(&divisor);
      if (map == maps_.operands.end() || UsesReduced(map->second)) continue;
    } else if (rowOps_.count(divisor.get().getDefiningOp())) {
      continue;
    }
    TIR_ASSIGN_OR_RETURN(std::string d, Operand(divisor, code, "    "));
    const std::string name = absl::StrCat("rcp", next_++);
    absl::StrAppend(&code, "    const ", out.compute, " ", name, " = (", out.compute, ")1 / (", d, ");\n");
    reciprocals_[op] = name;
  }
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
  absl::StrAppend(&code, "    if (active) for (tir_i64 j = 0; j < len; ++j) {\n", InnerIndices(red, "j", "        "));
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
