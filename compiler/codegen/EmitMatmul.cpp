// Matmul kernels: the mma.sync / ldmatrix / cp.async tile form for bf16/f16
// operands and the per-element loop form.

#include "compiler/codegen/KernelEmitter.h"

#include "absl/strings/str_cat.h"
#include "compiler/planning/TileRules.h"
#include "compiler/support/status.h"

namespace tir::codegen::detail {

bool KernelEmitter::ReadsTail(mlir::AffineMap m, int r, int c, int b) {
  const unsigned n = m.getNumResults();
  if (n < 2 || m.getResult(n - 2) != mlir::getAffineDimExpr(r, m.getContext()) ||
      m.getResult(n - 1) != mlir::getAffineDimExpr(c, m.getContext())) {
    return false;
  }
  for (unsigned j = 0; j + 2 < n; ++j) {
    for (int d : {b, b + 1, b + 2}) {
      if (m.getResult(j).isFunctionOfDim(d)) return false;
    }
  }
  return true;
}

// Whether `op` (not the matmul) computes values indexed by K: it runs where
// the operands are staged, not in the epilogue.
bool KernelEmitter::ReadsReduced(mlir::Operation *op) {
  auto m = maps_.results.find(op);
  return m != maps_.results.end() && UsesReduced(m->second) && !llvm::isa<MatmulOp>(op);
}

// Prologue ops of a matmul kernel: those that read K, and every op whose
// value one of them reads (a `rsqrt` of a per-row factor the staged operand
// is scaled by), in graph order. An op of the second kind is also in the
// epilogue when the epilogue reads it (MatmulEpilogue).
std::set<mlir::Operation *> KernelEmitter::MatmulPrologue() {
  std::set<mlir::Operation *> prologue;
  std::vector<mlir::Operation *> ops;
  for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) {
    ops.push_back(&op);
    if (ReadsReduced(&op)) prologue.insert(&op);
  }
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    mlir::Operation *op = *it;
    if (prologue.count(op) || llvm::isa<MatmulOp>(op)) continue;
    for (mlir::Operation *user : op->getUsers()) {
      if (prologue.count(user)) {
        prologue.insert(op);
        break;
      }
    }
  }
  return prologue;
}

// The tensor-core form for bf16/f16 operands. Each K step stages a
// block_m x block_k tile of A and a block_k x block_n tile of B in shared
// memory (prologue ops applied, out-of-range elements zero), then:
//  - on a GPU, each warp owns a (block_m / warps_m) x (block_n / warps_n)
//    sub-tile and issues mma.sync.m16n8k16 (f32 accumulate) on fragments read
//    from shared memory;
//  - on the host, the one thread multiplies the same shared tiles in loops.
// The epilogue runs per output element on the f32 accumulator.
absl::StatusOr<std::string> KernelEmitter::MatmulTiled(MatmulOp mm, int64_t bm, int64_t bn, int64_t bk, int64_t warpsM,
                                        int64_t warpsN, const std::string &mmaType) {
  const int b = rank_ - 3;
  TIR_ASSIGN_OR_RETURN(TypeInfo at, Info(mm.getA().getType()));
  TIR_ASSIGN_OR_RETURN(TypeInfo bt, Info(mm.getB().getType()));
  const std::string toBits = mmaType == "bf16" ? "tir_to_bf16" : "tir_to_f16";
  const std::string fromBits = mmaType == "bf16" ? "tir_from_bf16" : "tir_from_f16";
  const std::string storage = mmaType == "bf16" ? "tir_bf16" : "tir_f16";
  const int64_t wm = bm / warpsM, wn = bn / warpsN;
  std::set<mlir::Operation *> prologue = MatmulPrologue();
  // The cp.async pipeline: A and B are kernel inputs read as they are (no
  // prologue) and indexed (.., m, k) and (.., k, n). Whether the run-time
  // layout allows 16-byte copies is checked in the kernel, which otherwise
  // stages element by element.
  int64_t stages = 1;
  // An operand converted from the mma type to f32 is copied as the 16-bit
  // input it converts (the conversion is exact).
  auto sourceUse = [&](int operand) -> mlir::OpOperand * {
    mlir::Value v = mm->getOperand(operand);
    if (planning::MmaOperandOf(v).converted) return &v.getDefiningOp()->getOpOperand(0);
    return &mm->getOpOperand(operand);
  };
  mlir::OpOperand *useA = sourceUse(0), *useB = sourceUse(1);
  std::set<mlir::Operation *> others = prologue;
  for (mlir::OpOperand *u : {useA, useB}) {
    if (u->getOwner() != mm.getOperation()) others.erase(u->getOwner());
  }
  auto argA = useA->get().dyn_cast<mlir::BlockArgument>(), argB = useB->get().dyn_cast<mlir::BlockArgument>();
  auto mapA = maps_.operands.find(useA), mapB = maps_.operands.find(useB);
  const int64_t pipelineStages = Param("stages", 1);
  if (pipelineStages >= 2 && others.empty() && argA && argB && mapA != maps_.operands.end() &&
      mapB != maps_.operands.end() && ReadsTail(mapA->second, b, b + 2, b) && ReadsTail(mapB->second, b + 2, b + 1, b)) {
    stages = pipelineStages;
  }
  const int64_t aBytes = stages * bm * bk * 2, smemBytes = aBytes + stages * bk * bn * 2;
  std::string code = absl::StrCat(
      "  const tir_i64 M = ", DimExpr(b), ", N = ", DimExpr(b + 1), ", K = ", DimExpr(b + 2), ";\n",
      TileCoords(),
      // Tiles live in dynamic shared memory (above the 48 KiB static limit
      // with the launcher's opt-in), stage after stage, each in the swizzled
      // layout of tir_swz: A tiles block_m x block_k, B tiles block_k x
      // block_n.
      "  TIR_DYNAMIC_SHARED(tir_smem, ", smemBytes, ");\n",
      "  tir_sptr<tir_u16> As = tir_sptr_cast<tir_u16>(tir_smem);\n",
      "  tir_sptr<tir_u16> Bs = tir_sptr_cast<tir_u16>(tir_smem + ", aBytes, ");\n");
  // Element (r, c) of stage `st`'s A or B tile, and its address.
  auto index_a = [&](const std::string &st, const std::string &r, const std::string &c) {
    return absl::StrCat("(", st, ") * ", bm * bk, " + tir_swz<", bk, ">(", r, ", ", c, ")");
  };
  auto index_b = [&](const std::string &st, const std::string &r, const std::string &c) {
    return absl::StrCat("(", st, ") * ", bk * bn, " + tir_swz<", bn, ">(", r, ", ", c, ")");
  };
  auto at_a = [&](const std::string &st, const std::string &r, const std::string &c) { return "As[" + index_a(st, r, c) + "]"; };
  auto at_b = [&](const std::string &st, const std::string &r, const std::string &c) { return "Bs[" + index_b(st, r, c) + "]"; };
  auto addr_a = [&](const std::string &st, const std::string &r, const std::string &c) { return "As + (" + index_a(st, r, c) + ")"; };
  auto addr_b = [&](const std::string &st, const std::string &r, const std::string &c) { return "Bs + (" + index_b(st, r, c) + ")"; };
  launch_.set_dynamic_shared_memory_bytes(static_cast<uint32_t>(smemBytes));
  absl::StrAppend(&code, Delinearize("batch", [&] { std::vector<int> v; for (int d = 0; d < b; ++d) v.push_back(d); return v; }(), "  "));
  absl::StrAppend(&code, "#if TIR_LANES\n",
                  "  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;\n",
                  "  const int warp_m = warp / ", warpsN, ", warp_n = warp % ", warpsN, ";\n",
                  "  float acc[", wm / 16, "][", wn / 8, "][4];\n",
                  "  for (int i = 0; i < ", wm / 16, "; ++i) for (int j = 0; j < ", wn / 8,
                  "; ++j) for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.f;\n",
                  "#else\n  TIR_SHARED float acc_h[", bm * bn, "];\n",
                  "  for (int e = 0; e < ", bm * bn, "; ++e) acc_h[e] = 0.f;\n#endif\n");
  // One K step on the tiles of stage `st`.
  const std::string compute = absl::StrCat(
      "#if TIR_LANES\n",
      "    for (int ks = 0; ks < ", bk, "; ks += 16) {\n",
      "      for (int i = 0; i < ", wm / 16, "; ++i) {\n",
      // ldmatrix.x4: matrices (rows 0-7 | 8-15) x (k 0-7 | 8-15) of the
      // warp's 16-row slice are exactly the a0..a3 fragments of mma.sync.
      "        tir_u32 a0, a1, a2, a3;\n",
      "        tir_ldmatrix_x4(a0, a1, a2, a3, ", addr_a("st", absl::StrCat("warp_m * ", wm, " + i * 16 + lane % 16"), "ks + (lane / 16) * 8"), ");\n",
      "        for (int j = 0; j < ", wn / 8, "; ++j) {\n",
      // B is stored k-major; the transposing load gives the column fragments.
      "          tir_u32 b0, b1;\n",
      "          tir_ldmatrix_x2_trans(b0, b1, ", addr_b("st", "ks + lane % 16", absl::StrCat("warp_n * ", wn, " + j * 8")), ");\n",
      "          tir_mma_m16n8k16_", mmaType, "(acc[i][j], a0, a1, a2, a3, b0, b1);\n",
      "        }\n      }\n    }\n",
      "#else\n",
      "    for (int r = 0; r < ", bm, "; ++r)\n      for (int kk = 0; kk < ", bk, "; ++kk) {\n",
      "        tir_", storage.substr(4), " av; av.bits = ", at_a("st", "r", "kk"), ";\n",
      "        const float x = ", fromBits, "(av);\n",
      "        for (int c = 0; c < ", bn, "; ++c) {\n",
      "          tir_", storage.substr(4), " bv; bv.bits = ", at_b("st", "kk", "c"), ";\n",
      "          acc_h[r * ", bn, " + c] += x * ", fromBits, "(bv);\n        }\n      }\n",
      "#endif\n");
  if (stages > 1) {
    const std::string inA = absl::StrCat("a.in", argA.getArgNumber()), inB = absl::StrCat("a.in", argB.getArgNumber());
    const unsigned ra = mapA->second.getNumResults(), rb = mapB->second.getNumResults();
    absl::StrAppend(&code, "  const tir_u16 *pa = 0, *pb = 0;\n  {\n    const tir_i64 i", b, " = 0, i", b + 1, " = 0, i", b + 2,
                    " = 0;\n    pa = (const tir_u16 *)(", inA, " + (", Offset(mapA->second, inA + "_stride"), "));\n",
                    "    pb = (const tir_u16 *)(", inB, " + (", Offset(mapB->second, inB + "_stride"), "));\n  }\n",
                    "  const tir_i64 sam = ", inA, "_stride[", ra - 2, "], sbk = ", inB, "_stride[", rb - 2, "];\n",
                    "  const bool pipe = K % 8 == 0 && N % 8 == 0 && ", inA, "_stride[", ra - 1, "] == 1 && ", inB,
                    "_stride[", rb - 1, "] == 1 && sam % 8 == 0 && sbk % 8 == 0 && (tir_u64)pa % 16 == 0 && "
                    "(tir_u64)pb % 16 == 0;\n");
    // Copies the K tile starting at `k` into stage `s`, 16 bytes per copy;
    // chunks past M, N or K are zero-filled.
    auto load = [&](const std::string &st, const std::string &k) {
      return absl::StrCat(
          "      for (int e = threadIdx.x; e < ", bm * bk / 8, "; e += blockDim.x) {\n",
          "        const int r = e / ", bk / 8, ", c = (e % ", bk / 8, ") * 8;\n",
          "        const tir_i64 gm = tm * ", bm, " + r, gk = ", k, " + c;\n",
          "        const bool ok = gm < M && gk < K;\n",
          "        tir_cp_async16(", addr_a(st, "r", "c"), ", ok ? pa + gm * sam + gk : pa, ok ? 16 : 0);\n      }\n",
          "      for (int e = threadIdx.x; e < ", bk * bn / 8, "; e += blockDim.x) {\n",
          "        const int r = e / ", bn / 8, ", c = (e % ", bn / 8, ") * 8;\n",
          "        const tir_i64 gk = ", k, " + r, gn = tn * ", bn, " + c;\n",
          "        const bool ok = gk < K && gn < N;\n",
          "        tir_cp_async16(", addr_b(st, "r", "c"), ", ok ? pb + gk * sbk + gn : pb, ok ? 16 : 0);\n      }\n");
    };
    absl::StrAppend(&code, "  if (pipe) {\n", "    const tir_i64 KT = (K + ", bk - 1, ") / ", bk, ";\n",
                    "    for (int s = 0; s < ", stages - 1, "; ++s) {\n", "      if (s < KT) {\n",
                    load("s", absl::StrCat("(tir_i64)s * ", bk)), "      }\n      tir_cp_async_commit();\n    }\n",
                    "    for (tir_i64 kt = 0; kt < KT; ++kt) {\n", "      tir_cp_async_wait<", stages - 2, ">();\n",
                    "      TIR_SYNC();\n", "      const tir_i64 nk = kt + ", stages - 1, ";\n", "      if (nk < KT) {\n",
                    "        const int sn = (int)(nk % ", stages, ");\n", load("sn", absl::StrCat("nk * ", bk)),
                    "      }\n      tir_cp_async_commit();\n", "      const int st = (int)(kt % ", stages, ");\n",
                    compute, "    }\n    tir_cp_async_wait<0>();\n  } else {\n");
  }
  absl::StrAppend(&code, "  for (tir_i64 k0 = 0; k0 < K; k0 += ", bk, ") {\n");
  // Stage A (m, k) and B (k, n) with their prologues.
  auto stage = [&](int operand, const std::string &rows, const std::string &cols, const std::string &tile,
                   const std::string &rowVar, const std::string &colVar, int rowDim, int colDim) -> absl::Status {
    absl::StrAppend(&code, "    for (int e = threadIdx.x; e < ", rows, " * ", cols, "; e += blockDim.x) {\n",
                    "      const int r = e / ", cols, ", c = e % ", cols, ";\n",
                    "      const tir_i64 i", rowDim, " = ", rowVar, ";\n",
                    "      const tir_i64 i", colDim, " = ", colVar, ";\n",
                    "      const tir_i64 i", b + (operand == 0 ? 1 : 0), " = 0;\n",
                    "      float val = 0.f;\n      if (i", b, " < M && i", b + 1, " < N && i", b + 2, " < K) {\n");
    auto saved = values_;
    std::string inner;
    for (mlir::Operation *op : Ordered(prologue)) TIR_RETURN_IF_ERROR(EmitOp(op, inner, "        "));
    TIR_ASSIGN_OR_RETURN(std::string v, Operand(mm->getOpOperand(operand), inner, "        "));
    values_ = saved;
    absl::StrAppend(&code, inner, "        val = (float)(", v, ");\n      }\n",
                    "      ", tile, "[tir_swz<", cols, ">(r, c)] = ", toBits, "(val).bits;\n    }\n");
    return absl::OkStatus();
  };
  (void)at;
  (void)bt;
  // A tile: m = tm*bm + r (dim b), k = k0 + c (dim b+2); n is fixed in range (0).
  TIR_RETURN_IF_ERROR(stage(0, std::to_string(bm), std::to_string(bk), "As", absl::StrCat("tm * ", bm, " + r"),
                            "k0 + c", b, b + 2));
  // B tile: k = k0 + r (dim b+2), n = tn*bn + c (dim b+1); m fixed at 0.
  TIR_RETURN_IF_ERROR(stage(1, std::to_string(bk), std::to_string(bn), "Bs", "k0 + r",
                            absl::StrCat("tn * ", bn, " + c"), b + 2, b + 1));
  absl::StrAppend(&code, "    TIR_SYNC();\n    {\n    const int st = 0;\n", compute, "    }\n    TIR_SYNC();\n  }\n",
                  stages > 1 ? "  }\n" : "");
  TIR_ASSIGN_OR_RETURN(const std::string epi, MatmulEpilogue(mm, prologue, "float", ""));
  absl::StrAppend(&code, "#if TIR_LANES\n",
                  "  for (int i = 0; i < ", wm / 16, "; ++i) for (int j = 0; j < ", wn / 8, "; ++j) for (int q = 0; q < 4; ++q) {\n",
                  "    const tir_i64 i", b, " = tm * ", bm, " + warp_m * ", wm, " + i * 16 + (lane / 4) + (q >= 2 ? 8 : 0);\n",
                  "    const tir_i64 i", b + 1, " = tn * ", bn, " + warp_n * ", wn, " + j * 8 + (lane % 4) * 2 + (q & 1);\n",
                  "    const float accv = acc[i][j][q];\n", epi, "  }\n#else\n",
                  "  for (int e = 0; e < ", bm * bn, "; ++e) {\n",
                  "    const tir_i64 i", b, " = tm * ", bm, " + e / ", bn, ";\n",
                  "    const tir_i64 i", b + 1, " = tn * ", bn, " + e % ", bn, ";\n",
                  "    const float accv = acc_h[e];\n", epi, "  }\n#endif\n");
  return code;
}

// The epilogue for one output element (i<b>, i<b+1> set, `accv` its
// accumulator of type `acct`): the accumulator input added, the ops after
// the matmul, the stores; `guard` adds to the bounds test.
absl::StatusOr<std::string> KernelEmitter::MatmulEpilogue(MatmulOp mm, const std::set<mlir::Operation *> &prologue,
                                                          const std::string &acct, const std::string &guard) {
  const int b = rank_ - 3;
  TIR_ASSIGN_OR_RETURN(TypeInfo ct, Info(mm.getC().getType()));
  std::string epi = absl::StrCat("    const tir_i64 i", b + 2, " = 0;\n", "    if (i", b, " < M && i", b + 1, " < N", guard,
                                 ") {\n");
  std::string inner;
  std::string init = "0";
  if (mm.getAccumulator()) {
    TIR_ASSIGN_OR_RETURN(init, Operand(mm->getOpOperand(2), inner, "      "));
  }
  const std::string var = absl::StrCat("v", next_++);
  absl::StrAppend(&inner, "      const ", ct.compute, " ", var, " = ",
                  Sub(ct.round, "(" + ct.compute + ")(accv + (" + acct + ")(" + init + "))"), ";\n");
  values_[mm.getC().getAsOpaquePointer()] = var;
  for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) {
    if ((prologue.count(&op) && ReadsReduced(&op)) || &op == mm.getOperation()) continue;
    TIR_RETURN_IF_ERROR(EmitOp(&op, inner, "      "));
  }
  TIR_RETURN_IF_ERROR(StoreOutputs(inner, "      ", -1));
  absl::StrAppend(&epi, inner, "    }\n");
  return epi;
}

// The output tile (tm, tn) of this block. With group_m > 1, consecutive
// blocks walk a column of group_m tile rows before moving to the next
// column, so the B tiles they share are still in L2 (a bijection over the
// grid; the last group may be shorter).
std::string KernelEmitter::TileCoords() {
  const int64_t group = Param("group_m", 1);
  if (group <= 1) return "  const tir_i64 tn = blockIdx.x, tm = blockIdx.y, batch = blockIdx.z;\n";
  return absl::StrCat("  const tir_i64 tiles_m_ = gridDim.y, tiles_n_ = gridDim.x, batch = blockIdx.z;\n",
                      "  const tir_i64 pid_ = (tir_i64)blockIdx.y * tiles_n_ + blockIdx.x;\n",
                      "  const tir_i64 width_ = ", group, " * tiles_n_, first_m_ = (pid_ / width_) * ", group, ";\n",
                      "  const tir_i64 rows_ = tiles_m_ - first_m_ < ", group, " ? tiles_m_ - first_m_ : ", group, ";\n",
                      "  const tir_i64 tm = first_m_ + (pid_ % width_) % rows_, tn = (pid_ % width_) / rows_;\n");
}

absl::StatusOr<std::string> KernelEmitter::Matmul() {
  const int64_t bm = Param("block_m", 64), bn = Param("block_n", 64), bk = Param("block_k", 32), warps = Param("warps", 4);
  const int64_t threads = warps * 32;
  const int b = rank_ - 3;  // batch dims; then M, N, K
  MatmulOp mm;
  for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) {
    if (auto m = llvm::dyn_cast<MatmulOp>(op)) mm = m;
  }
  // bf16/f16 operands (or their exact conversions to f32) take the
  // tensor-core form when the tile splits into whole m16n8k16 fragments per
  // warp.
  const planning::MmaOperand oa = planning::MmaOperandOf(mm.getA()), ob = planning::MmaOperandOf(mm.getB());
  // The Hopper form (sm_90a candidates): wgmma, TMA, warp specialization.
  if (Param("wgmma", 0)) {
    if (!(oa.element == ob.element && (oa.element.isBF16() || oa.element.isF16()))) {
      return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_CANDIDATE",
                       "the wgmma form takes bf16 or f16 operands (or their conversions to f32)");
    }
    return MatmulHopper(mm, oa.element.isBF16() ? "bf16" : "f16");
  }
  const planning::WarpGrid wg = planning::WarpGridOf(bm, warps);
  const bool shapes = bm % (16 * wg.m) == 0 && wg.n > 0 && bn % (8 * wg.n) == 0 && bk % 16 == 0 && wg.m * wg.n == warps;
  if (oa.element == ob.element && (oa.element.isBF16() || oa.element.isF16()) && shapes) {
    TIR_ASSIGN_OR_RETURN(std::string tiled, MatmulTiled(mm, bm, bn, bk, wg.m, wg.n, oa.element.isBF16() ? "bf16" : "f16"));
    AddMatmulLaunch(bm, bn, threads, b);
    return tiled;
  }
  // f32 operands on tf32 tensor cores, when the candidate says so (the
  // graph's compile options asked for precision tf32).
  if (Param("tf32", 0) && oa.element.isF32() && ob.element.isF32()) {
    if (!(bm % (16 * wg.m) == 0 && bn % (8 * wg.n) == 0 && bk % 8 == 0 && wg.m * wg.n == warps)) {
      return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_CANDIDATE",
                       absl::StrCat("a ", bm, "x", bn, "x", bk, " tile does not split into m16n8k8 fragments over ", warps,
                                    " warps"));
    }
    TIR_ASSIGN_OR_RETURN(std::string code, MatmulFfma(mm, bm, bn, bk, threads, 0, 0, wg.m, wg.n));
    AddMatmulLaunch(bm, bn, threads, b);
    return code;
  }
  const planning::FfmaTile ft = planning::FfmaTileOf(bm, bn, threads);
  if (!ft.ok) {
    return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_CANDIDATE",
                     absl::StrCat("a ", bm, "x", bn, " tile does not split into register tiles over ", threads, " threads"));
  }
  TIR_ASSIGN_OR_RETURN(std::string code, MatmulFfma(mm, bm, bn, bk, threads, ft.tm, ft.tn, 0, 0));
  AddMatmulLaunch(bm, bn, threads, b);
  return code;
}

// The CUDA-core form (f32, f64, integers): per K step a block_m x block_k
// tile of A (stored k-major) and a block_k x block_n tile of B go to shared
// memory with the prologue applied (zeros outside the problem), and each
// thread accumulates its tm x tn register tile from them: tm + tn shared
// reads per tm * tn multiply-adds. With stages = 2 the tiles are double
// buffered: the next K step is staged while this one is multiplied, one
// barrier a step. On the host the block's one thread multiplies the same
// tiles in loops.
//
// With warps_m > 0 it is the tf32 form instead: the staged values are
// rounded to tf32 (tir_to_tf32), rows padded by 8 words so a warp's fragment
// reads hit 32 banks, and each warp owns a (block_m / warps_m) x
// (block_n / warps_n) sub-tile multiplied with mma.sync.m16n8k8.tf32; the
// host multiplies the same rounded tiles in loops.
absl::StatusOr<std::string> KernelEmitter::MatmulFfma(MatmulOp mm, int64_t bm, int64_t bn, int64_t bk, int64_t threads,
                                                      int64_t tm, int64_t tn, int64_t warpsM, int64_t warpsN) {
  const int b = rank_ - 3;
  const bool tf32 = warpsM > 0;
  TIR_ASSIGN_OR_RETURN(TypeInfo at, Info(mm.getA().getType()));
  mlir::Type ea = mm.getA().getType().cast<mlir::ShapedType>().getElementType();
  const std::string acct = at.is_float ? (ea.isF64() ? "double" : "float") : "tir_i64";
  // What a tile holds: the accumulator type, or tf32 bit patterns.
  const std::string tilet = tf32 ? "tir_u32" : acct;
  const int64_t accBytes = acct == "float" ? 4 : 8;
  const int64_t stages = Param("stages", 1) >= 2 ? 2 : 1;
  const int64_t ldA = tf32 ? bm + 8 : bm, ldB = tf32 ? bn + 8 : bn;
  const int64_t aTile = bk * ldA, bTile = bk * ldB;
  const int64_t smemBytes = stages * (aTile + bTile) * accBytes;
  const int64_t colsN = tf32 ? 1 : bn / tn;
  const int64_t wm = tf32 ? bm / warpsM : 0, wn = tf32 ? bn / warpsN : 0;
  std::set<mlir::Operation *> prologue = MatmulPrologue();
  launch_.set_dynamic_shared_memory_bytes(static_cast<uint32_t>(smemBytes));
  std::string code = absl::StrCat("  tir_i64 batches = 1;\n");
  for (int d = 0; d < b; ++d) absl::StrAppend(&code, "  batches *= ", DimExpr(d), ";\n");
  absl::StrAppend(&code, "  const tir_i64 M = ", DimExpr(b), ", N = ", DimExpr(b + 1), ", K = ", DimExpr(b + 2), ";\n",
                  TileCoords(), "  (void)batches;\n",
                  "  TIR_DYNAMIC_SHARED(tir_smem, ", smemBytes, ");\n",
                  "  tir_sptr<", tilet, "> As = tir_sptr_cast<", tilet, ">(tir_smem);\n",
                  "  tir_sptr<", tilet, "> Bs = tir_sptr_cast<", tilet, ">(tir_smem + ", stages * aTile * accBytes, ");\n");
  absl::StrAppend(&code, Delinearize("batch", [&] { std::vector<int> v; for (int d = 0; d < b; ++d) v.push_back(d); return v; }(), "  "));
  if (tf32) {
    absl::StrAppend(&code, "#if TIR_LANES\n",
                    "  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;\n",
                    "  const int warp_m = warp / ", warpsN, ", warp_n = warp % ", warpsN, ";\n",
                    "  const int g = lane / 4, t = lane % 4;\n",
                    "  float acc[", wm / 16, "][", wn / 8, "][4];\n",
                    "  for (int i = 0; i < ", wm / 16, "; ++i) for (int j = 0; j < ", wn / 8,
                    "; ++j) for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.f;\n");
  } else {
    absl::StrAppend(&code, "#if TIR_LANES\n",
                    "  const int tr = threadIdx.x / ", colsN, ", tc = threadIdx.x % ", colsN, ";\n",
                    "  ", acct, " acc[", tm, "][", tn, "];\n",
                    "  for (int i = 0; i < ", tm, "; ++i) for (int j = 0; j < ", tn, "; ++j) acc[i][j] = 0;\n");
  }
  absl::StrAppend(&code, "#else\n  TIR_SHARED ", acct, " acc_h[", bm * bn, "];\n",
                  "  for (int e = 0; e < ", bm * bn, "; ++e) acc_h[e] = 0;\n#endif\n",
                  "  const tir_i64 KT = (K + ", bk - 1, ") / ", bk, ";\n");
  // Stages A (m, k) and B (k, n) of K step `kt` into buffer `st`.
  std::string stageCode;
  auto stage = [&](int operand) -> absl::Status {
    const bool isA = operand == 0;
    const int64_t rows = isA ? bm : bk, cols = isA ? bk : bn;
    const std::string rowVar = isA ? absl::StrCat("tm * ", bm, " + r") : "k0 + r";
    const std::string colVar = isA ? "k0 + c" : absl::StrCat("tn * ", bn, " + c");
    const int rowDim = isA ? b : b + 2, colDim = isA ? b + 2 : b + 1;
    const std::string slot = isA ? absl::StrCat("As[st * ", aTile, " + c * ", ldA, " + r]")
                                 : absl::StrCat("Bs[st * ", bTile, " + r * ", ldB, " + c]");
    absl::StrAppend(&stageCode, "    for (int e = threadIdx.x; e < ", rows * cols, "; e += blockDim.x) {\n",
                    "      const int r = e / ", cols, ", c = e % ", cols, ";\n",
                    "      const tir_i64 i", rowDim, " = ", rowVar, ";\n",
                    "      const tir_i64 i", colDim, " = ", colVar, ";\n",
                    "      const tir_i64 i", b + (isA ? 1 : 0), " = 0;\n",
                    "      ", acct, " val = 0;\n      if (i", b, " < M && i", b + 1, " < N && i", b + 2, " < K) {\n");
    auto saved = values_;
    std::string inner;
    for (mlir::Operation *op : Ordered(prologue)) TIR_RETURN_IF_ERROR(EmitOp(op, inner, "        "));
    TIR_ASSIGN_OR_RETURN(std::string v, Operand(mm->getOpOperand(operand), inner, "        "));
    values_ = saved;
    absl::StrAppend(&stageCode, inner, "        val = (", acct, ")(", v, ");\n      }\n      ", slot, " = ",
                    tf32 ? "tir_to_tf32(val)" : "val", ";\n    }\n");
    return absl::OkStatus();
  };
  TIR_RETURN_IF_ERROR(stage(0));
  TIR_RETURN_IF_ERROR(stage(1));
  const std::string stageFn = absl::StrCat("  auto stage_k = [&](int st, tir_i64 kt) {\n    const tir_i64 k0 = kt * ", bk,
                                           ";\n", stageCode, "  };\n");
  auto a_at = [&](const std::string &k, const std::string &m) { return absl::StrCat("As[st * ", aTile, " + (", k, ") * ", ldA, " + ", m, "]"); };
  auto b_at = [&](const std::string &k, const std::string &n) { return absl::StrCat("Bs[st * ", bTile, " + (", k, ") * ", ldB, " + ", n, "]"); };
  std::string compute;
  if (tf32) {
    const std::string row = absl::StrCat("warp_m * ", wm, " + i * 16 + g"), col = absl::StrCat("warp_n * ", wn, " + j * 8 + g");
    compute = absl::StrCat(
        "#if TIR_LANES\n",
        "    for (int kk = 0; kk < ", bk, "; kk += 8) {\n",
        "      for (int i = 0; i < ", wm / 16, "; ++i) {\n",
        "        const tir_u32 a0 = ", a_at("kk + t", row), ", a1 = ", a_at("kk + t", row + " + 8"), ";\n",
        "        const tir_u32 a2 = ", a_at("kk + t + 4", row), ", a3 = ", a_at("kk + t + 4", row + " + 8"), ";\n",
        "        for (int j = 0; j < ", wn / 8, "; ++j) {\n",
        "          const tir_u32 b0 = ", b_at("kk + t", col), ", b1 = ", b_at("kk + t + 4", col), ";\n",
        "          tir_mma_m16n8k8_tf32(acc[i][j], a0, a1, a2, a3, b0, b1);\n",
        "        }\n      }\n    }\n",
        "#else\n",
        "    for (int r = 0; r < ", bm, "; ++r)\n      for (int kk = 0; kk < ", bk, "; ++kk) {\n",
        "        const float x = tir_tf32_value(", a_at("kk", "r"), ");\n",
        "        for (int c = 0; c < ", bn, "; ++c) acc_h[r * ", bn, " + c] += x * tir_tf32_value(", b_at("kk", "c"), ");\n",
        "      }\n#endif\n");
  } else {
    compute = absl::StrCat(
        "#if TIR_LANES\n",
        "    for (int kk = 0; kk < ", bk, "; ++kk) {\n",
        "      ", acct, " av[", tm, "], bv[", tn, "];\n",
        "      for (int i = 0; i < ", tm, "; ++i) av[i] = ", a_at("kk", absl::StrCat("tr * ", tm, " + i")), ";\n",
        "      for (int j = 0; j < ", tn, "; ++j) bv[j] = ", b_at("kk", absl::StrCat("tc + j * ", colsN)), ";\n",
        "      for (int i = 0; i < ", tm, "; ++i) for (int j = 0; j < ", tn, "; ++j) acc[i][j] += av[i] * bv[j];\n",
        "    }\n",
        "#else\n",
        "    for (int r = 0; r < ", bm, "; ++r)\n      for (int kk = 0; kk < ", bk, "; ++kk) {\n",
        "        const ", acct, " x = ", a_at("kk", "r"), ";\n",
        "        for (int c = 0; c < ", bn, "; ++c) acc_h[r * ", bn, " + c] += x * ", b_at("kk", "c"), ";\n",
        "      }\n#endif\n");
  }
  absl::StrAppend(&code, stageFn);
  if (stages == 2) {
    absl::StrAppend(&code, "  if (KT > 0) stage_k(0, 0);\n  TIR_SYNC();\n",
                    "  for (tir_i64 kt = 0; kt < KT; ++kt) {\n",
                    "    if (kt + 1 < KT) stage_k((int)((kt + 1) % 2), kt + 1);\n",
                    "    const int st = (int)(kt % 2);\n", compute, "    TIR_SYNC();\n  }\n");
  } else {
    absl::StrAppend(&code, "  for (tir_i64 kt = 0; kt < KT; ++kt) {\n    stage_k(0, kt);\n    TIR_SYNC();\n",
                    "    const int st = 0;\n", compute, "    TIR_SYNC();\n  }\n");
  }
  TIR_ASSIGN_OR_RETURN(const std::string epi, MatmulEpilogue(mm, prologue, acct, " && batch < batches"));
  if (tf32) {
    absl::StrAppend(&code, "#if TIR_LANES\n",
                    "  for (int i = 0; i < ", wm / 16, "; ++i) for (int j = 0; j < ", wn / 8, "; ++j) for (int q = 0; q < 4; ++q) {\n",
                    "    const tir_i64 i", b, " = tm * ", bm, " + warp_m * ", wm, " + i * 16 + g + (q >= 2 ? 8 : 0);\n",
                    "    const tir_i64 i", b + 1, " = tn * ", bn, " + warp_n * ", wn, " + j * 8 + t * 2 + (q & 1);\n",
                    "    const float accv = acc[i][j][q];\n", epi, "  }\n");
  } else {
    absl::StrAppend(&code, "#if TIR_LANES\n",
                    "  for (int i = 0; i < ", tm, "; ++i) for (int j = 0; j < ", tn, "; ++j) {\n",
                    "    const tir_i64 i", b, " = tm * ", bm, " + tr * ", tm, " + i;\n",
                    "    const tir_i64 i", b + 1, " = tn * ", bn, " + tc + j * ", colsN, ";\n",
                    "    const ", acct, " accv = acc[i][j];\n", epi, "  }\n");
  }
  absl::StrAppend(&code, "#else\n",
                  "  for (int e = 0; e < ", bm * bn, "; ++e) {\n",
                  "    const tir_i64 i", b, " = tm * ", bm, " + e / ", bn, ";\n",
                  "    const tir_i64 i", b + 1, " = tn * ", bn, " + e % ", bn, ";\n",
                  "    const ", acct, " accv = acc_h[e];\n", epi, "  }\n#endif\n");
  return code;
}

}  // namespace tir::codegen::detail
