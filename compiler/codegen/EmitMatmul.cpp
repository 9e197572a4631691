// Matmul kernels: the mma.sync / ldmatrix / cp.async tile form for bf16/f16
// operands and the per-element loop form.

#include "compiler/codegen/KernelEmitter.h"

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"

namespace tir::codegen::detail {

// Prologue ops of a matmul kernel (maps that read K), in graph order.
std::set<mlir::Operation *> KernelEmitter::MatmulPrologue() {
  std::set<mlir::Operation *> prologue;
  for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) {
    auto m = maps_.results.find(&op);
    if (m != maps_.results.end() && UsesReduced(m->second) && !llvm::isa<MatmulOp>(op)) prologue.insert(&op);
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
  TIR_ASSIGN_OR_RETURN(TypeInfo ct, Info(mm.getC().getType()));
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
  auto argA = mm.getA().dyn_cast<mlir::BlockArgument>(), argB = mm.getB().dyn_cast<mlir::BlockArgument>();
  auto mapA = maps_.operands.find(&mm->getOpOperand(0)), mapB = maps_.operands.find(&mm->getOpOperand(1));
  auto tail = [&](decltype(mapA) m, int r, int c) {
    const unsigned n = m->second.getNumResults();
    if (n < 2 || m->second.getResult(n - 2) != mlir::getAffineDimExpr(r, m->second.getContext()) ||
        m->second.getResult(n - 1) != mlir::getAffineDimExpr(c, m->second.getContext())) {
      return false;
    }
    for (unsigned j = 0; j + 2 < n; ++j) {
      for (int d : {b, b + 1, b + 2}) {
        if (m->second.getResult(j).isFunctionOfDim(d)) return false;
      }
    }
    return true;
  };
  const int64_t pipelineStages = Param("stages", 1);
  if (pipelineStages >= 2 && prologue.empty() && argA && argB && mapA != maps_.operands.end() &&
      mapB != maps_.operands.end() && tail(mapA, b, b + 2) && tail(mapB, b + 2, b + 1)) {
    stages = pipelineStages;
  }
  const int64_t aBytes = stages * bm * bk * 2, smemBytes = aBytes + stages * bk * bn * 2;
  std::string code = absl::StrCat(
      "  const tir_i64 M = a.dim[", b, "], N = a.dim[", b + 1, "], K = a.dim[", b + 2, "];\n",
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
  // The epilogue, once per output element owned.
  std::string epi;
  absl::StrAppend(&epi, "    const tir_i64 i", b + 2, " = 0;\n", "    if (i", b, " < M && i", b + 1, " < N) {\n");
  std::string inner;
  std::string init = "0";
  if (mm.getAccumulator()) {
    TIR_ASSIGN_OR_RETURN(init, Operand(mm->getOpOperand(2), inner, "      "));
  }
  const std::string var = absl::StrCat("v", next_++);
  absl::StrAppend(&inner, "      const ", ct.compute, " ", var, " = ", Sub(ct.round, "accv + (float)(" + init + ")"), ";\n");
  values_[mm.getC().getAsOpaquePointer()] = var;
  for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) {
    if (prologue.count(&op) || &op == mm.getOperation()) continue;
    TIR_RETURN_IF_ERROR(EmitOp(&op, inner, "      "));
  }
  TIR_RETURN_IF_ERROR(StoreOutputs(inner, "      ", -1));
  absl::StrAppend(&epi, inner, "    }\n");
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
  const int64_t bm = Param("block_m", 64), bn = Param("block_n", 64), warps = Param("warps", 4);
  const int64_t threads = warps * 32;
  const int b = rank_ - 3;  // batch dims; then M, N, K
  MatmulOp mm;
  for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) {
    if (auto m = llvm::dyn_cast<MatmulOp>(op)) mm = m;
  }
  {
    // bf16/f16 operands take the tensor-core form when the tile splits into
    // whole m16n8k16 fragments per warp.
    mlir::Type ea = mm.getA().getType().cast<mlir::ShapedType>().getElementType();
    mlir::Type eb = mm.getB().getType().cast<mlir::ShapedType>().getElementType();
    const int64_t bk = Param("block_k", 32);
    int64_t warpsM = 1;
    while (warpsM * 2 <= warps && bm / (warpsM * 2) >= 16) warpsM *= 2;
    const int64_t warpsN = warps / warpsM;
    const bool shapes = bm % (16 * warpsM) == 0 && warpsN > 0 && bn % (8 * warpsN) == 0 && bk % 16 == 0 &&
                        warpsM * warpsN == warps;
    if (ea == eb && (ea.isBF16() || ea.isF16()) && shapes) {
      TIR_ASSIGN_OR_RETURN(std::string tiled, MatmulTiled(mm, bm, bn, bk, warpsM, warpsN, ea.isBF16() ? "bf16" : "f16"));
      AddMatmulLaunch(bm, bn, threads, b);
      return tiled;
    }
  }
  TIR_ASSIGN_OR_RETURN(TypeInfo ct, Info(mm.getC().getType()));
  TIR_ASSIGN_OR_RETURN(TypeInfo at, Info(mm.getA().getType()));
  const std::string acct = at.is_float ? (mm.getA().getType().cast<mlir::ShapedType>().getElementType().isF64() ? "double" : "float") : "tir_i64";
  std::string code = absl::StrCat("  tir_i64 batches = 1;\n");
  for (int d = 0; d < b; ++d) absl::StrAppend(&code, "  batches *= a.dim[", d, "];\n");
  absl::StrAppend(&code, "  const tir_i64 M = a.dim[", b, "], N = a.dim[", b + 1, "], K = a.dim[", b + 2, "];\n",
                  "  const tir_i64 tiles_m = (M + ", bm - 1, ") / ", bm, ", tiles_n = (N + ", bn - 1, ") / ", bn, ";\n",
                  TileCoords(),
                  "  (void)tiles_m; (void)tiles_n;\n",
                  "  for (tir_i64 e = threadIdx.x; e < ", bm * bn, "; e += blockDim.x) {\n",
                  "    const tir_i64 i", b, " = tm * ", bm, " + e / ", bn, ";\n",
                  "    const tir_i64 i", b + 1, " = tn * ", bn, " + e % ", bn, ";\n",
                  "    if (i", b, " >= M || i", b + 1, " >= N || batch >= batches) continue;\n");
  absl::StrAppend(&code, Delinearize("batch", [&] { std::vector<int> v; for (int d = 0; d < b; ++d) v.push_back(d); return v; }(), "    "));
  // Prologue ops (maps that use K) are evaluated inside the K loop.
  std::set<mlir::Operation *> prologue;
  for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) {
    auto m = maps_.results.find(&op);
    if (m != maps_.results.end() && UsesReduced(m->second) && !llvm::isa<MatmulOp>(op)) prologue.insert(&op);
  }
  for (mlir::Operation &op : kernel_.getBodyBlock().without_terminator()) {
    if (prologue.count(&op)) continue;
    if (&op != mm.getOperation()) {
      TIR_RETURN_IF_ERROR(EmitOp(&op, code, "    "));
      continue;
    }
    std::string init = "0";
    if (mm.getAccumulator()) {
      absl::StrAppend(&code, "    const tir_i64 i", b + 2, "_unused = 0; (void)i", b + 2, "_unused;\n");
      TIR_ASSIGN_OR_RETURN(init, Operand(mm->getOpOperand(2), code, "    "));
    }
    absl::StrAppend(&code, "    ", acct, " acc = (", acct, ")(", init, ");\n",
                    "    for (tir_i64 i", b + 2, " = 0; i", b + 2, " < K; ++i", b + 2, ") {\n");
    auto saved = values_;
    std::string inner;
    for (mlir::Operation *op2 : Ordered(prologue)) TIR_RETURN_IF_ERROR(EmitOp(op2, inner, "      "));
    TIR_ASSIGN_OR_RETURN(std::string av, Operand(mm->getOpOperand(0), inner, "      "));
    TIR_ASSIGN_OR_RETURN(std::string bv, Operand(mm->getOpOperand(1), inner, "      "));
    values_ = saved;
    absl::StrAppend(&code, inner, "      acc += (", acct, ")(", av, ") * (", acct, ")(", bv, ");\n    }\n");
    const std::string var = absl::StrCat("v", next_++);
    absl::StrAppend(&code, "    const ", ct.compute, " ", var, " = ", Sub(ct.round, "acc"), ";\n");
    values_[mm.getC().getAsOpaquePointer()] = var;
  }
  TIR_RETURN_IF_ERROR(StoreOutputs(code, "    ", -1));
  absl::StrAppend(&code, "  }\n");
  // The accumulator's map does not use K; make sure a dummy K index exists.
  code = absl::StrCat("  const tir_i64 i", b + 2, "_k_unused = 0; (void)i", b + 2, "_k_unused;\n", code);
  AddMatmulLaunch(bm, bn, threads, b);
  return code;
}

}  // namespace tir::codegen::detail
