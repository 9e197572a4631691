// The Hopper matmul form (sm_90a): warp-specialized and persistent, wgmma
// from 128-byte-swizzled shared tiles that TMA fills, an mbarrier pipeline.

#include "compiler/codegen/KernelEmitter.h"

#include "absl/strings/str_cat.h"
#include "compiler/planning/TileRules.h"
#include "compiler/support/status.h"

namespace tir::codegen::detail {
namespace {

// A persistent grid's blocks: one per SM of an H100 or H200 SXM.
constexpr int64_t kPersistentBlocks = 132;
// Dynamic shared memory a block may have on sm_90 (227 KiB).
constexpr int64_t kHopperSharedBytes = 227 * 1024;

}  // namespace

KernelEmitter::HopperOperands KernelEmitter::HopperPlan(MatmulOp mm) {
  HopperOperands h;
  const int b = rank_ - 3;
  // An operand is loaded as the kernel input it is a view of: through
  // transposes and exact conversions (bf16/f16 to f32) used by nothing else,
  // which only move or widen its elements.
  std::set<mlir::Operation *> through;
  auto sourceUse = [&](int operand) -> mlir::OpOperand * {
    mlir::OpOperand *u = &mm->getOpOperand(operand);
    for (;;) {
      mlir::Operation *def = u->get().getDefiningOp();
      if (def == nullptr || def->getNumOperands() != 1 || !def->getResult(0).hasOneUse()) return u;
      if (auto cv = llvm::dyn_cast<ConvertOp>(def)) {
        mlir::Type from = cv.getInput().getType().cast<mlir::ShapedType>().getElementType();
        mlir::Type to = cv.getType().cast<mlir::ShapedType>().getElementType();
        if (!(from.isBF16() || from.isF16()) || !to.isF32()) return u;
      } else if (!llvm::isa<TransposeOp>(def)) {
        return u;
      }
      through.insert(def);
      u = &def->getOpOperand(0);
    }
  };
  mlir::OpOperand *useA = sourceUse(0), *useB = sourceUse(1);
  std::set<mlir::Operation *> others = MatmulPrologue();
  for (mlir::Operation *op : through) others.erase(op);
  auto argA = useA->get().dyn_cast<mlir::BlockArgument>(), argB = useB->get().dyn_cast<mlir::BlockArgument>();
  auto mapA = maps_.operands.find(useA), mapB = maps_.operands.find(useB);
  if (!others.empty() || !argA || !argB || mapA == maps_.operands.end() || mapB == maps_.operands.end()) return h;
  auto rank2 = [](mlir::Value v) {
    auto t = v.getType().dyn_cast<mlir::RankedTensorType>();
    return t && t.getRank() == 2;
  };
  if (!rank2(argA) || !rank2(argB) || !ReadsTail(mapA->second, b, b + 2, b)) return h;
  if (ReadsTail(mapB->second, b + 2, b + 1, b)) {
    h.b_k_major = false;
  } else if (ReadsTail(mapB->second, b + 1, b + 2, b)) {
    h.b_k_major = true;
  } else {
    return h;
  }
  h.tma = true;
  h.arg_a = static_cast<int>(argA.getArgNumber());
  h.arg_b = static_cast<int>(argB.getArgNumber());
  return h;
}

KernelEmitter::HopperBoxes KernelEmitter::HopperBoxesOf(const HopperOperands &h) {
  HopperBoxes boxes;
  boxes.a[1] = Param("block_m", 128);
  if (h.b_k_major) boxes.b[1] = Param("block_n", 128);
  // 2x1 shares B (half its box's outer rows: k rows of an N-major B's
  // 64-column chunk, n rows of a K-major B), 1x2 shares A (half the m rows).
  if (Param("cluster_m", 1) * Param("cluster_n", 1) == 2) {
    boxes.share_b = Param("cluster_m", 1) == 2;
    boxes.share_a = !boxes.share_b;
    boxes.shared_arg = boxes.share_b ? h.arg_b : h.arg_a;
    boxes.half[0] = 64;
    boxes.half[1] = (boxes.share_b ? boxes.b[1] : boxes.a[1]) / 2;
  }
  return boxes;
}

KernelEmitter::HopperOutput KernelEmitter::HopperStorePlan() {
  HopperOutput o;
  if (rank_ != 3) return o;  // batches: a rank-3 output
  auto results = llvm::cast<ResultsOp>(kernel_.getBodyBlock().getTerminator());
  if (results->getNumOperands() != 1) return o;
  mlir::OpOperand &use = results->getOpOperand(0);
  auto t = use.get().getType().dyn_cast<mlir::RankedTensorType>();
  auto map = maps_.operands.find(&use);
  if (!t || t.getRank() != 2 || map == maps_.operands.end() || map->second.getNumResults() != 2 ||
      !ReadsTail(map->second, 0, 1, 0) || !StoreGuard(0, map->second).empty()) {
    return o;
  }
  const mlir::Type e = t.getElementType();
  if (!(e.isBF16() || e.isF16() || e.isF32())) return o;
  o.output = 0;
  o.elem_bytes = e.isF32() ? 4 : 2;
  return o;
}

// The device form of one wgmma shape: the operand list grows with N (N/2
// accumulators a thread), so each kernel carries the ones it uses.
std::string KernelEmitter::WgmmaDeviceFunction(int64_t n, const std::string &type, bool trans_b) {
  std::string regs, outs;
  for (int64_t i = 0; i < n / 2; ++i) {
    absl::StrAppend(&regs, i ? ", " : "", "%", i);
    absl::StrAppend(&outs, i ? ", " : "", "\"+f\"(acc.d[", i, "])");
  }
  const int64_t da = n / 2, db = da + 1, sd = da + 2;
  return absl::StrCat(
      "#if TIR_DEVICE\n",
      "template <> __device__ __forceinline__ void tir_wgmma_m64k16_", type, "<", n, ", 0, ", trans_b ? 1 : 0,
      ">(tir_wg_acc<", n, "> &acc, tir_u64 da, tir_u64 db, int scale_d) {\n",
      "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %", sd, ", 0;\\n\"\n",
      "               \"wgmma.mma_async.sync.aligned.m64n", n, "k16.f32.", type, ".", type, " {", regs, "}, %", da,
      ", %", db, ", p, 1, 1, 0, ", trans_b ? 1 : 0, ";\\n}\\n\"\n",
      "               : ", outs, "\n",
      "               : \"l\"(da), \"l\"(db), \"r\"(scale_d));\n",
      "}\n#endif\n");
}

// Warpgroup 0 produces: for each K step of each of the block's tiles it
// waits for the stage to be free (the `empty` mbarrier), then either one
// thread issues TMA loads of A (block_m x 64, K-major) and B (64 x block_n,
// N-major, or block_n x 64 K-major for a transposed B) into 128-byte
// swizzled tiles completing on the `full` mbarrier, or, when an operand's
// layout allows no tensor map or prologue ops compute it, its 128 threads
// stage the elements with ordinary stores in the same swizzle,
// fence.proxy.async and arrive. Warpgroups 1..C consume: each owns
// block_m / C rows (64-row wgmma tiles), waits for the stage, issues 4
// wgmma k16 steps per m64 tile with one commit group per K step and keeps
// one group in flight (wait_group 1) before releasing the previous stage;
// then the epilogue runs on the f32 accumulators. With `persistent` the
// grid is at most one block per SM and each block walks tiles
// blockIdx.x, + gridDim.x, ... in grouped order (group_m tile rows).
absl::StatusOr<std::string> KernelEmitter::MatmulHopper(MatmulOp mm, const std::string &type) {
  const int b = rank_ - 3;
  const int64_t bm = Param("block_m", 128), bn = Param("block_n", 128), stages = Param("stages", 4);
  const int64_t consumers = Param("consumers", 2), persistent = Param("persistent", 1), group = Param("group_m", 8);
  const int64_t split = std::max<int64_t>(1, Param("split_k", 1)), raster = Param("raster", 0);
  // A cluster of two CTAs (2x1: two M tiles sharing B; 1x2: two N tiles
  // sharing A) or none.
  const int64_t cm = Param("cluster_m", 1), cn = Param("cluster_n", 1), csize = cm * cn;
  if (cm < 1 || cn < 1 || csize > 2 || (csize > 1 && split > 1)) {
    return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_CANDIDATE",
                     absl::StrCat("a ", cm, "x", cn, " cluster with split-K ", split,
                                  " (clusters of 2x1 or 1x2 CTAs, without split-K)"));
  }
  const int64_t rowsPerConsumer = bm / std::max<int64_t>(1, consumers), msub = rowsPerConsumer / 64;
  if (consumers < 1 || bm % (64 * consumers) != 0 || bn % 64 != 0 || bn > 256 || stages < 2 || msub * bn / 2 > 128 ||
      split > 64) {
    return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_CANDIDATE",
                     absl::StrCat("a ", bm, "x", bn, " tile over ", consumers, " consumer warpgroups with ", stages,
                                  " stages and split-K ", split,
                                  " is not a wgmma tile (64-row tiles per warpgroup, N a multiple of 64 up to 256, "
                                  "at most 128 accumulators a thread, 2 stages or more, split-K at most 64)"));
  }
  const HopperOperands h = HopperPlan(mm);
  const int64_t aBytes = bm * 128, bBytes = bn * 128, stageBytes = aBytes + bBytes;
  // tma_store: each consumer stages its output rows in shared memory box by
  // box (64 rows x 128 bytes, 128-byte swizzled) through two 8 KiB slots
  // after the mbarriers' KiB, and one thread of it stores each box by TMA
  // while the warpgroup fills the other slot. 16 KiB a consumer, whatever
  // the tile: the 4 stages of a 128 x 256 tile still fit.
  const bool tmaStore = Param("tma_store", 0) != 0;
  const HopperOutput ho = tmaStore ? HopperStorePlan() : HopperOutput{};
  if (tmaStore && split > 1) {
    return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_CANDIDATE",
                     "tma_store with split-K: the thread that sums a fragment's partials is chosen per thread, and the "
                     "staged tile needs its whole warpgroup");
  }
  if (tmaStore && ho.output < 0) {
    return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_CANDIDATE",
                     "tma_store needs one rank-2 row-major bf16, f16 or f32 output indexed by (M, N)");
  }
  const int64_t eb = ho.elem_bytes, boxCols = tmaStore ? 128 / eb : 0;
  constexpr int64_t kBoxBytes = planning::kHopperStoreBoxBytes;
  const int64_t stagingAt = stages * stageBytes + 1024, perConsumer = planning::kHopperStoreSlots * kBoxBytes;
  const int64_t smem = planning::HopperSharedBytes(bm, bn, stages, consumers, tmaStore);
  if (tmaStore && smem > kHopperSharedBytes) {
    return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_CANDIDATE",
                     absl::StrCat(smem, " bytes of shared memory (", stages, " stages of ", stageBytes, " bytes",
                                  tmaStore ? absl::StrCat(" and ", consumers * perConsumer, " bytes of output slots") : "",
                                  ") do not fit the 227 KiB a Hopper block may have"));
  }
  const int64_t threads = 128 * (consumers + 1);
  const std::string toBits = type == "bf16" ? "tir_to_bf16" : "tir_to_f16";
  std::set<mlir::Operation *> prologue = MatmulPrologue();
  launch_.set_dynamic_shared_memory_bytes(static_cast<uint32_t>(smem));
  grid_constant_ = h.tma || tmaStore;
  min_blocks_ = 1;
  // Static extents are constants (DimExpr): the tile coordinates then
  // divide by constants (a multiply-high, no 64-bit division in the tile
  // loop); a dynamic extent comes from the launch.
  std::string code = absl::StrCat("  const tir_i64 M = ", DimExpr(b), ", N = ", DimExpr(b + 1), ", K = ", DimExpr(b + 2),
                                  ";\n", "  tir_i64 batches = 1;\n");
  for (int d = 0; d < b; ++d) absl::StrAppend(&code, "  batches *= ", DimExpr(d), ";\n");
  absl::StrAppend(
      &code, "  const tir_i64 tiles_m = (M + ", bm - 1, ") / ", bm, ", tiles_n = (N + ", bn - 1, ") / ", bn, ";\n",
      // With a cluster the work is walked in cluster tiles (cm x cn tiles,
      // the last row or column padded with tiles past the problem).
      csize > 1 ? absl::StrCat("  const tir_i64 ctiles_m = (tiles_m + ", cm - 1, ") / ", cm, ", ctiles_n = (tiles_n + ",
                               cn - 1, ") / ", cn, ";\n",
                               "  const tir_i64 tiles = ctiles_m * ctiles_n * batches, KT = (K + 63) / 64;\n")
                : std::string("  const tir_i64 tiles = tiles_m * tiles_n * batches, KT = (K + 63) / 64;\n"),
      // Work units: a tile, or with split-K one of `split` K ranges of it.
      "  const tir_i64 units = tiles * ", split, ";\n",
      "  TIR_DYNAMIC_SHARED(tir_smem, ", smem, ");\n",
      // Stage s: A at s * stage, B after it; tiles 1024-byte aligned (the
      // 128-byte swizzle repeats every 8 rows of 128 bytes).
      "  tir_sptr<unsigned char> base = tir_smem + ((1024u - (tir_smem_u32(tir_smem) & 1023u)) & 1023u);\n",
      "  tir_sptr<tir_u64> full = tir_sptr_cast<tir_u64>(base + ", stages * stageBytes, "), empty = full + ", stages, ";\n");
  if (h.tma) {
    auto cond = [&](int arg) {
      const std::string in = absl::StrCat("a.in", arg);
      return absl::StrCat(in, "_stride[1] == 1 && ", in, "_stride[0] > 0 && (", in, "_stride[0] * 2) % 16 == 0 && ", in,
                          "_stride[0] * 2 < (1ll << 40) && (tir_u64)", in, " % 16 == 0 && ", in, "_size[0] < (1ll << 31) && ",
                          in, "_size[1] < (1ll << 31)");
    };
    absl::StrAppend(&code, "  // TMA when both operands' layouts allow a tensor map (the launcher encodes one then).\n",
                    "  const bool tma = (", cond(h.arg_a), ") && (", cond(h.arg_b), ");\n");
  } else {
    absl::StrAppend(&code, "  const bool tma = false;\n");
  }
  if (tmaStore) {
    // The launcher's rule for encoding the output's map (TensorMapEncodable).
    const std::string out = absl::StrCat("a.out", ho.output);
    absl::StrAppend(&code, "  // The output tile by TMA when the output's layout allows a tensor map.\n",
                    "  const bool tma_out = ", out, "_stride[1] == 1 && ", out, "_stride[0] > 0 && (", out, "_stride[0] * ",
                    eb, ") % 16 == 0 && ", out, "_stride[0] * ", eb, " < (1ll << 40) && (tir_u64)", out,
                    " % 16 == 0 && M < (1ll << 31) && N < (1ll << 31);\n");
  }
  // With a cluster and TMA, a stage of every CTA of the cluster takes the
  // multicast halves of each CTA's producer: each `empty` counts the
  // consumer warps of all of them. barrier.cluster orders the inits before
  // any peer's use.
  const std::string emptyCount =
      csize > 1 ? absl::StrCat("tma ? ", csize * consumers * 4, "u : ", consumers * 4, "u") : absl::StrCat(consumers * 4, "u");
  absl::StrAppend(&code, "  if (threadIdx.x == 0) {\n", "    for (int s = 0; s < ", stages, "; ++s) {\n",
                  "      tir_mbar_init(full + s, tma ? 1u : 128u);\n", "      tir_mbar_init(empty + s, ", emptyCount, ");\n",
                  "    }\n    tir_mbar_init_fence();\n  }\n", csize > 1 ? "  tir_cluster_sync();\n" : "  TIR_SYNC();\n");
  if (csize > 1) {
    // The cluster's CTAs are consecutive along x (rank = blockIdx.x % csize)
    // and walk the cluster tiles together.
    // The grid is one-dimensional (x).
    absl::StrAppend(&code, "  const unsigned crank = blockIdx.x % ", csize, "u;\n",
                    "  const tir_i64 first_tile = (tir_i64)(blockIdx.x / ", csize, "u);\n",
                    "  const tir_i64 tile_step = (tir_i64)(gridDim.x / ", csize, "u);\n");
  } else {
    absl::StrAppend(&code,
                    "  const tir_i64 first_tile = ((tir_i64)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;\n",
                    "  const tir_i64 tile_step = (tir_i64)gridDim.x * gridDim.y * gridDim.z;\n");
  }
  // Tile `tile` -> (batch, tm, tn), group_m tile rows at a time.
  std::string coords =
      split > 1 ? absl::StrCat("      const tir_i64 tile = unit / ", split, ", part_k = unit % ", split, ";\n",
                               "      const tir_i64 kt0 = part_k * KT / ", split, ", kt1 = (part_k + 1) * KT / ", split, ";\n")
                : std::string("      const tir_i64 tile = unit, kt0 = 0, kt1 = KT;\n");
  {
    // In cluster tiles with a cluster: (ctm, ctn), then the CTA's own tile.
    const std::string gm = csize > 1 ? "ctiles_m" : "tiles_m", gn = csize > 1 ? "ctiles_n" : "tiles_n";
    const std::string tm = csize > 1 ? "ctm" : "tm", tn = csize > 1 ? "ctn" : "tn";
    absl::StrAppend(&coords, "      const tir_i64 batch = tile / (", gm, " * ", gn, "), pid = tile % (", gm, " * ", gn, ");\n");
    if (raster != 0) {
      // Raster 0 (below): bands of `group` tile rows, each walked column by
      // column. Raster 1: bands of `group` tile columns, walked row by row;
      // raster 2 and 3 as 0 and 1 with every other band walked backwards
      // (serpentine), so a band starts on the tiles the last one ended on.
      const bool alongN = raster == 1 || raster == 3, serpentine = raster >= 2;
      const std::string across = alongN ? gm : gn, banded = alongN ? gn : gm;
      absl::StrAppend(&coords, "      const tir_i64 width = ", std::max<int64_t>(1, group), " * ", across,
                      ", band = pid / width, first = band * ", std::max<int64_t>(1, group), ";\n",
                      "      const tir_i64 lines = ", banded, " - first < ", std::max<int64_t>(1, group), " ? ", banded,
                      " - first : ", std::max<int64_t>(1, group), ";\n",
                      "      const tir_i64 in_band = first + (pid % width) % lines, step_across = (pid % width) / lines;\n",
                      "      const tir_i64 across = ", serpentine ? absl::StrCat("(band & 1) ? ", across, " - 1 - step_across : ") : "",
                      "step_across;\n",
                      "      const tir_i64 ", tm, " = ", alongN ? "across" : "in_band", ", ", tn, " = ", alongN ? "in_band" : "across", ";\n");
    } else if (group <= 1) {
      absl::StrAppend(&coords, "      const tir_i64 ", tm, " = pid / ", gn, ", ", tn, " = pid % ", gn, ";\n");
    } else {
      absl::StrAppend(&coords, "      const tir_i64 width = ", group, " * ", gn, ", first_m = (pid / width) * ", group, ";\n",
                      "      const tir_i64 rows = ", gm, " - first_m < ", group, " ? ", gm, " - first_m : ", group, ";\n",
                      "      const tir_i64 ", tm, " = first_m + (pid % width) % rows, ", tn, " = (pid % width) / rows;\n");
    }
    if (csize > 1) {
      absl::StrAppend(&coords, "      const tir_i64 tm = ctm", cm > 1 ? " * 2 + crank" : "", ", tn = ctn",
                      cn > 1 ? " * 2 + crank" : "", ";\n");
    }
  }
  std::vector<int> batchDims;
  for (int d = 0; d < b; ++d) batchDims.push_back(d);
  absl::StrAppend(&coords, Delinearize("batch", batchDims, "      "));
  // Ordinary staging of one operand: `rows` x `cols` elements, with the
  // prologue applied and zeros outside the problem, stored at `dest`.
  auto stage = [&](int operand, int64_t rows, int64_t cols, const std::string &rowVar, const std::string &colVar,
                   int rowDim, int colDim, const std::string &dest, int step) -> absl::StatusOr<std::string> {
    std::string s = absl::StrCat("          for (int e = p; e < ", rows * cols, "; e += ", step, ") {\n",
                                 "            const int r = e / ", cols, ", c = e % ", cols, ";\n",
                                 "            const tir_i64 i", rowDim, " = ", rowVar, ";\n",
                                 "            const tir_i64 i", colDim, " = ", colVar, ";\n",
                                 "            const tir_i64 i", b + (operand == 0 ? 1 : 0), " = 0;\n",
                                 "            float val = 0.f;\n            if (i", b, " < M && i", b + 1, " < N && i", b + 2,
                                 " < K) {\n");
    auto saved = values_;
    std::string inner;
    for (mlir::Operation *op : Ordered(prologue)) TIR_RETURN_IF_ERROR(EmitOp(op, inner, "              "));
    TIR_ASSIGN_OR_RETURN(std::string v, Operand(mm->getOpOperand(operand), inner, "              "));
    values_ = saved;
    absl::StrAppend(&s, inner, "              val = (float)(", v, ");\n            }\n", "            ", dest, " = ", toBits,
                    "(val).bits;\n          }\n");
    return s;
  };
  // Element (r, k) of the A tile and (k, c) of the B tile in their
  // swizzled stages: A K-major (128-byte rows); B N-major (64 k rows of
  // 64-column chunks, 8 KiB apart) or K-major (block_n rows of 64 k).
  auto aAt = [](const std::string &r, const std::string &k) {
    return absl::StrCat("As[tir_swz_bytes<128>((", r, ") * 128 + (", k, ") * 2) / 2]");
  };
  auto bAt = [&](const std::string &k, const std::string &c) {
    return h.b_k_major ? absl::StrCat("Bs[tir_swz_bytes<128>((", c, ") * 128 + (", k, ") * 2) / 2]")
                       : absl::StrCat("Bs[tir_swz_bytes<128>(((", c, ") / 64) * 8192 + (", k, ") * 128 + ((", c,
                                      ") % 64) * 2) / 2]");
  };
  std::string stageA, stageB, hostA, hostB;
  for (int step : {128, 1}) {
    TIR_ASSIGN_OR_RETURN(std::string sa, stage(0, bm, 64, absl::StrCat("tm * ", bm, " + r"), "k0 + c", b, b + 2,
                                                aAt("r", "c"), step));
    TIR_ASSIGN_OR_RETURN(std::string sb, stage(1, 64, bn, "k0 + r", absl::StrCat("tn * ", bn, " + c"), b + 2, b + 1,
                                                bAt("r", "c"), step));
    (step == 1 ? hostA : stageA) = sa;
    (step == 1 ? hostB : stageB) = sb;
  }
  std::string tmaLoads, prefetch;
  if (h.tma) {
    const HopperBoxes boxes = HopperBoxesOf(h);
    const std::string ma = TensorMapFieldName(h.arg_a, boxes.a[0], boxes.a[1]),
                      mb = TensorMapFieldName(h.arg_b, boxes.b[0], boxes.b[1]);
    const bool shareA = boxes.share_a, shareB = boxes.share_b;
    const std::string half = csize > 1 ? TensorMapFieldName(boxes.shared_arg, boxes.half[0], boxes.half[1]) : "";
    // The producer's thread brings its descriptors on chip before its
    // first load (prefetch.tensormap).
    prefetch = absl::StrCat("    if (tma && p == 0) {\n", shareA ? "" : absl::StrCat("      tir_prefetch_tensormap(&a.", ma, ");\n"),
                            shareB ? "" : absl::StrCat("      tir_prefetch_tensormap(&a.", mb, ");\n"),
                            csize > 1 ? absl::StrCat("      tir_prefetch_tensormap(&a.", half, ");\n") : "", "    }\n");
    // A (and a K-major B) in one box of 128-byte rows; an N-major B's
    // 64-column chunks 8 KiB apart, a box each. With a cluster each CTA
    // loads half of every box of the shared operand into the same offset
    // of both CTAs (multicast), completing each one's `full` at the same
    // offset: every CTA still receives the whole stage, stageBytes in all.
    const std::string mask = absl::StrCat((1 << csize) - 1, "u");
    absl::StrAppend(&tmaLoads, "          if (p == 0) {\n", "            tir_mbar_arrive_tx(full + s, ", stageBytes, "u);\n");
    if (shareA) {
      absl::StrAppend(&tmaLoads, "            tir_tma_load_2d_multicast(As + crank * ", bm / 2 * 64, ", &a.", half,
                      ", (int)(kt * 64), (int)(tm * ", bm, " + crank * ", bm / 2, "), full + s, ", mask, ");\n");
    } else {
      absl::StrAppend(&tmaLoads, "            tir_tma_load_2d(As, &a.", ma, ", (int)(kt * 64), (int)(tm * ", bm, "), full + s);\n");
    }
    if (h.b_k_major) {
      if (shareB) {
        absl::StrAppend(&tmaLoads, "            tir_tma_load_2d_multicast(Bs + crank * ", bn / 2 * 64, ", &a.", half,
                        ", (int)(kt * 64), (int)(tn * ", bn, " + crank * ", bn / 2, "), full + s, ", mask, ");\n");
      } else {
        absl::StrAppend(&tmaLoads, "            tir_tma_load_2d(Bs, &a.", mb, ", (int)(kt * 64), (int)(tn * ", bn,
                        "), full + s);\n");
      }
    } else {
      absl::StrAppend(&tmaLoads, "            for (int j = 0; j < ", bn / 64, "; ++j)\n");
      if (shareB) {
        absl::StrAppend(&tmaLoads, "              tir_tma_load_2d_multicast(Bs + j * 4096 + crank * 2048, &a.", half,
                        ", (int)(tn * ", bn, " + j * 64), (int)(kt * 64 + crank * 32), full + s, ", mask, ");\n");
      } else {
        absl::StrAppend(&tmaLoads, "              tir_tma_load_2d(Bs + j * 4096, &a.", mb, ", (int)(tn * ", bn,
                        " + j * 64), (int)(kt * 64), full + s);\n");
      }
    }
    absl::StrAppend(&tmaLoads, "          }\n");
  }
  // Split-K: each unit's partial goes to the workspace, one slot per
  // consumer thread (its fragment of the tile, coalesced across the
  // warpgroup); a ticket per slot tells the thread that stores last. That
  // thread sums the `split` partials in K order (its own from registers,
  // bit-identical to what it stored), so the result does not depend on
  // which block finishes last, then runs the epilogue and resets the
  // ticket. Workspace: tickets (tiles x consumers x 128 x 4 bytes) first,
  // then the partials (tiles x split x block_m x block_n x 4 bytes).
  std::string splitDevice, splitHost;
  if (split > 1) {
    const int64_t perThread = msub * bn / 2;
    auto at = [&](const std::string &pk) {
      return absl::StrCat("part[((tile * ", split, " + ", pk, ") * ", consumers, " + cw) * ", perThread * 128,
                          " + (ms * ", bn / 2, " + i) * 128 + t]");
    };
    splitDevice = absl::StrCat(
        "      {\n", "        unsigned *tickets = (unsigned *)a.workspace;\n",
        "        float *part = (float *)(a.workspace + tiles * ", consumers * 128 * 4, ");\n",
        "        const tir_i64 slot = (tile * ", consumers, " + cw) * 128 + t;\n",
        "#pragma unroll\n        for (int ms = 0; ms < ", msub, "; ++ms)\n",
        "#pragma unroll\n          for (int i = 0; i < ", bn / 2, "; ++i) ", at("part_k"), " = acc[ms].get(i);\n",
        "        tir_fence();\n",
        "        if (tir_ticket(&tickets[slot]) != ", split - 1, "u) continue;\n",
        "        tir_fence();\n",
        "#pragma unroll\n        for (int ms = 0; ms < ", msub, "; ++ms)\n",
        "#pragma unroll\n          for (int i = 0; i < ", bn / 2, "; ++i) {\n",
        "            float sum = 0.f;\n",
        "            for (int pk = 0; pk < ", split, "; ++pk) sum += pk == part_k ? acc[ms].get(i) : tir_volatile_load(&",
        at("pk"), ");\n",
        "            acc[ms].set(i, sum);\n", "          }\n",
        "        tickets[slot] = 0u;\n", "      }\n");
    auto hat = [&](const std::string &pk) {
      return absl::StrCat("part[(tile * ", split, " + ", pk, ") * ", bm * bn, " + e]");
    };
    splitHost = absl::StrCat(
        "      {\n", "        unsigned *tickets = (unsigned *)a.workspace;\n",
        "        float *part = (float *)(a.workspace + tiles * ", consumers * 128 * 4, ");\n",
        "        const tir_i64 slot = tile * ", consumers * 128, ";\n",
        "        for (int e = 0; e < ", bm * bn, "; ++e) ", hat("part_k"), " = acc_h[e];\n",
        "        if (tir_ticket(&tickets[slot]) != ", split - 1, "u) continue;\n",
        "        for (int e = 0; e < ", bm * bn, "; ++e) {\n", "          float sum = 0.f;\n",
        "          for (int pk = 0; pk < ", split, "; ++pk) sum += ", hat("pk"), ";\n", "          acc_h[e] = sum;\n",
        "        }\n", "        tickets[slot] = 0u;\n", "      }\n");
  }
  // The producer.
  // setmaxnreg with two consumers (384 threads: 168 registers each at
  // entry; 40 for the producer, 232 for the consumers); one consumer has
  // the file's share (255) without it.
  const bool moveRegisters = consumers == 2;
  // With a cluster ptxas keeps more of the producer's loop live (the
  // cluster rank, the multicast, barrier.cluster): 96 for it leaves 208 for
  // the consumers (still 65536 in all) and spills nothing where 40 spilled.
  const std::string producerRegisters = csize > 1 ? "96" : "40", consumerRegisters = csize > 1 ? "208" : "232";
  absl::StrAppend(&code, "#if TIR_LANES\n", "  if (threadIdx.x < 128) {\n",
                  moveRegisters ? absl::StrCat("    tir_setmaxnreg_dec<", producerRegisters, ">();\n") : "",
                  "    const int p = threadIdx.x;\n", prefetch, "    tir_i64 it = 0;\n",
                  // With TMA one thread issues everything; the rest of the warpgroup idles.
                  "    for (tir_i64 unit = first_tile; unit < units && (!tma || p == 0); unit += tile_step) {\n", coords,
                  "      for (tir_i64 kt = kt0; kt < kt1; ++kt, ++it) {\n",
                  "        const int s = (int)(it % ", stages, ");\n",
                  "        tir_mbar_wait(empty + s, (unsigned)((it / ", stages, ") & 1) ^ 1u);\n",
                  "        tir_sptr<tir_u16> As = tir_sptr_cast<tir_u16>(base + s * ", stageBytes, ");\n",
                  "        tir_sptr<tir_u16> Bs = tir_sptr_cast<tir_u16>(base + s * ", stageBytes, " + ", aBytes, ");\n",
                  "        if (tma) {\n", tmaLoads, "        } else {\n", "          const tir_i64 k0 = kt * 64;\n", stageA,
                  stageB, "          tir_fence_proxy_async();\n", "          tir_mbar_arrive(full + s);\n", "        }\n",
                  "      }\n    }\n  } else {\n");
  // The consumers. A stage is released to the producer of every CTA whose
  // multicast writes it (with a cluster and TMA: all of the cluster's).
  const std::string release =
      csize > 1 ? absl::StrCat("{\n          const int es = (int)((it - 1) % ", stages, ");\n          if (tma) {\n",
                               "            for (unsigned r = 0; r < ", csize, "u; ++r) tir_mbar_arrive_cluster(empty + es, r);\n",
                               "          } else {\n            tir_mbar_arrive(empty + es);\n          }\n        }")
                : absl::StrCat("tir_mbar_arrive(empty + (int)((it - 1) % ", stages, "));");
  const std::string bDesc = h.b_k_major ? "tir_wgmma_desc(sb + ks * 32, 16, 1024, 1)"
                                        : "tir_wgmma_desc(sb + ks * 2048, 8192, 1024, 1)";
  // The device epilogue walks each thread's accumulators in pairs: in the
  // wgmma fragment (PTX ISA, "Register Fragments: wgmma .m64nNk16") d[i]
  // and d[i + 1] (i even) are one row's adjacent columns, so every output
  // whose columns are contiguous gets both values in a run and stores them
  // with one 2-element vector store (st.global.v2.f32 for f32, one 32-bit
  // store for bf16/f16) when the stride is 1 and the address aligned, one
  // by one otherwise and at the right edge.
  std::map<unsigned, std::string> pairRuns;
  std::string pairDecls, pairStores;
  {
    auto results = llvm::cast<ResultsOp>(kernel_.getBodyBlock().getTerminator());
    for (mlir::OpOperand &use : results->getOpOperands()) {
      auto map = maps_.operands.find(&use);
      if (map == maps_.operands.end() || !use.get().getType().isa<mlir::RankedTensorType>() ||
          !RunFits(use.get().getType(), 2) || !StoreGuard(use.getOperandNumber(), map->second).empty()) {
        continue;
      }
      const int j = RunDim(map->second, b + 1);
      if (j < 0) continue;
      TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(use.get().getType()));
      const unsigned i = use.getOperandNumber();
      const std::string name = absl::StrCat("out_pair", i), out = absl::StrCat("a.out", i);
      const std::string at = absl::StrCat(out, "[", Offset(map->second, out + "_stride"), "]");
      absl::StrAppend(&pairDecls, "    ", t.storage, " ", name, "[2];\n");
      absl::StrAppend(&pairStores, "      if (N - i", b + 1, " >= 2) tir_store_run<2>(&", at, ", ", out, "_stride[", j, "], ",
                      name, ");\n      else ", at, " = ", name, "[0];\n");
      pairRuns[i] = name;
    }
  }
  std::string epiPairs;
  if (!pairRuns.empty()) {
    const auto savedValues = values_;
    run_writes_ = pairRuns;
    TIR_ASSIGN_OR_RETURN(epiPairs, MatmulEpilogue(mm, prologue, "float", ""));
    run_writes_.clear();
    values_ = savedValues;
  }
  TIR_ASSIGN_OR_RETURN(const std::string epi, MatmulEpilogue(mm, prologue, "float", ""));
  // The TMA-store epilogue, box by box: each of a consumer's 64-row wgmma
  // tiles (ms) is block_n * elem_bytes / 128 boxes of 64 rows x 128 bytes.
  // For box k every thread computes its fragment's outputs in the box's
  // columns in pairs (as above) into `stage_pair` and stores them at their
  // place in slot k % 2 (the box's 8 KiB, 128-byte swizzled as the
  // output's tensor map says; elements outside the problem are left as
  // they are: the TMA store clips them), then fences them for the async
  // proxy. Thread 0 waits for the store of box k - 1 to finish reading its
  // slot (slot k + 1's), the named barrier publishes that and the box, and
  // thread 0 stores the box. So box k + 1 is written while box k is stored,
  // and the tile's last store overlaps the next tile's main loop. `sc`
  // counts the boxes a consumer stored (the slot of the next one).
  std::string epiStage;
  const int64_t boxesPerRow = tmaStore ? bn * eb / 128 : 0, pairsPerBox = boxCols / 2;
  if (tmaStore) {
    TIR_ASSIGN_OR_RETURN(TypeInfo ot, Info(llvm::cast<ResultsOp>(kernel_.getBodyBlock().getTerminator())
                                               ->getOperand(ho.output)
                                               .getType()));
    const auto savedValues = values_;
    run_writes_ = {{static_cast<unsigned>(ho.output), "stage_pair"}};
    TIR_ASSIGN_OR_RETURN(const std::string inner, MatmulEpilogue(mm, prologue, "float", ""));
    run_writes_.clear();
    values_ = savedValues;
    const std::string col = "(8 * (i >> 2) + 2 * q + v)";
    // One element of the pair, v written out (a loop over v left rolled
    // would index the accumulators at run time: local memory, and ptxas
    // serializes the wgmma).
    const auto element = [&](const char *v) {
      return absl::StrCat("    {\n    const int v = ", v, ";\n",
                          "    const tir_i64 i", b, " = tm * ", bm, " + (cw * ", msub,
                          " + ms) * 64 + 16 * w + g + 8 * ((i >> 1) & 1);\n",
                          "    const tir_i64 i", b + 1, " = tn * ", bn, " + ", col, ";\n",
                          "    const float accv = acc[ms].get(i + v);\n", inner, "    }\n");
    };
    epiStage = absl::StrCat(
        "      tir_sptr<", ot.storage, "> staging = tir_sptr_cast<", ot.storage, ">(base + ", stagingAt, " + cw * ",
        perConsumer, ");\n",
        "#pragma unroll\n      for (int ms = 0; ms < ", msub, "; ++ms)\n",
        "#pragma unroll\n      for (int c = 0; c < ", boxesPerRow, "; ++c) {\n",
        "      tir_sptr<", ot.storage, "> slot = staging + ((sc + ms * ", boxesPerRow, " + c) & 1u) * ", kBoxBytes / eb, ";\n",
        "#pragma unroll\n      for (int j = 0; j < ", pairsPerBox, "; j += 2) {\n",
        "    const int i = c * ", pairsPerBox, " + j;\n",
        "    ", ot.storage, " stage_pair[2] = {};\n", element("0"), element("1"),
        // The pair's two columns are adjacent in one 16-byte chunk of the
        // swizzled row: one shared store. Outputs past the problem's edge
        // are stored too and clipped by the TMA store.
        "    tir_sts_run<2>(slot + tir_swz_bytes<128>((16 * w + g + 8 * ((i >> 1) & 1)) * 128 + ((8 * (i >> 2) + 2 * q) % ",
        boxCols, ") * ", eb, ") / ", eb, ", stage_pair);\n",
        "      }\n",
        "      tir_fence_proxy_async();\n",
        "      if (t == 0) tir_bulk_wait_read<0>();\n",
        "      tir_named_barrier(1 + cw, 128);\n",
        "      if (t == 0) {\n",
        "        tir_tma_store_2d(&a.", OutputTensorMapFieldName(ho.output, boxCols, 64), ", slot, (int)(tn * ", bn,
        " + c * ", boxCols, "), (int)(tm * ", bm, " + (cw * ", msub, " + ms) * 64));\n",
        "        tir_bulk_commit();\n",
        "      }\n",
        "      }\n",
        "      sc += ", msub * boxesPerRow, "u;\n");
  }
  const std::string rowOf = absl::StrCat("tm * ", bm, " + (cw * ", msub, " + ms) * 64 + 16 * w + g + 8 * ((i >> 1) & 1)");
  // A TMA-store kernel's direct stores are its fallback for outputs whose
  // layout allows no tensor map (a row stride or base not 16-byte aligned,
  // a column stride other than 1), which pairs would not serve either: one
  // element at a time, which also keeps the path's registers below the
  // staging path's (pairs there cost the kernel spills).
  const std::string deviceEpilogue =
      pairRuns.empty() || tmaStore
          ? absl::StrCat("#pragma unroll\n      for (int i = 0; i < ", bn / 2, "; ++i) {\n",
                         "    const tir_i64 i", b, " = ", rowOf, ";\n",
                         "    const tir_i64 i", b + 1, " = tn * ", bn, " + 8 * (i >> 2) + 2 * q + (i & 1);\n",
                         "    const float accv = acc[ms].get(i);\n", epi, "      }\n")
          : absl::StrCat("#pragma unroll\n      for (int i = 0; i < ", bn / 2, "; i += 2) {\n", pairDecls,
                         "    const tir_i64 pair_col = tn * ", bn, " + 8 * (i >> 2) + 2 * q;\n",
                         // v written out, as in the TMA-store epilogue.
                         "    {\n    const int v = 0;\n",
                         "    const tir_i64 i", b, " = ", rowOf, ";\n",
                         "    const tir_i64 i", b + 1, " = pair_col + v;\n",
                         "    const float accv = acc[ms].get(i + v);\n", epiPairs, "    }\n",
                         "    {\n    const int v = 1;\n",
                         "    const tir_i64 i", b, " = ", rowOf, ";\n",
                         "    const tir_i64 i", b + 1, " = pair_col + v;\n",
                         "    const float accv = acc[ms].get(i + v);\n", epiPairs, "    }\n",
                         "    {\n      const tir_i64 i", b, " = ", rowOf, ";\n",
                         "      const tir_i64 i", b + 1, " = pair_col;\n      const tir_i64 i", b + 2, " = 0;\n",
                         "      (void)i", b + 2, ";\n",
                         "      if (i", b, " < M && i", b + 1, " < N) {\n", pairStores, "      }\n    }\n      }\n");
  absl::StrAppend(
      &code, moveRegisters ? absl::StrCat("    tir_setmaxnreg_inc<", consumerRegisters, ">();\n") : "",
      "    const int cw = threadIdx.x / 128 - 1, t = threadIdx.x % 128, w = t / 32, g = (t % 32) / 4, q = t % 4;\n",
      "    tir_i64 it = 0;\n", tmaStore ? "    tir_u32 sc = 0;\n" : "",
      "    for (tir_i64 unit = first_tile; unit < units; unit += tile_step) {\n", coords,
      // The unit's first wgmma scales D by 0 (its accumulators start
      // undefined); only a unit with no K steps zeroes them.
      "      tir_wg_acc<", bn, "> acc[", msub, "];\n",
      "      if (kt1 <= kt0) {\n",
      "#pragma unroll\n      for (int ms = 0; ms < ", msub, "; ++ms)\n",
      "#pragma unroll\n        for (int i = 0; i < ", bn / 2, "; ++i) acc[ms].set(i, 0.f);\n",
      "      }\n",
      "      for (tir_i64 kt = kt0; kt < kt1; ++kt, ++it) {\n",
      "        const int s = (int)(it % ", stages, ");\n",
      "        tir_mbar_wait(full + s, (unsigned)((it / ", stages, ") & 1));\n",
      "        const tir_u32 sa = tir_smem_u32(base + s * ", stageBytes, ") + cw * ", msub * 8192, ";\n",
      "        const tir_u32 sb = tir_smem_u32(base + s * ", stageBytes, " + ", aBytes, ");\n",
      "#pragma unroll\n        for (int ms = 0; ms < ", msub, "; ++ms) tir_wgmma_fence_operands(acc[ms]);\n",
      "        tir_wgmma_fence();\n",
      "#pragma unroll\n        for (int ks = 0; ks < 4; ++ks) {\n",
      "          const tir_u64 db = ", bDesc, ";\n",
      "#pragma unroll\n          for (int ms = 0; ms < ", msub, "; ++ms)\n",
      "            tir_wgmma_m64k16_", type, "<", bn, ", 0, ", h.b_k_major ? 0 : 1,
      ">(acc[ms], tir_wgmma_desc(sa + ms * 8192 + ks * 32, 16, 1024, 1), db, kt > kt0 || ks > 0);\n",
      "        }\n", "        tir_wgmma_commit();\n",
      "#pragma unroll\n        for (int ms = 0; ms < ", msub, "; ++ms) tir_wgmma_fence_operands(acc[ms]);\n",
      // One group in flight: the previous K step's is done, its stage free.
      "        tir_wgmma_wait<1>();\n",
      "        if (kt > kt0 && t % 32 == 0) ", release, "\n", "      }\n",
      "      tir_wgmma_wait<0>();\n",
      "#pragma unroll\n      for (int ms = 0; ms < ", msub, "; ++ms) tir_wgmma_fence_operands(acc[ms]);\n",
      "      if (kt1 > kt0 && t % 32 == 0) ", release, "\n",
      // The direct stores, a TMA-store kernel's fallback, are marked in the
      // PTX: the report counts the epilogue that runs.
      splitDevice,
      tmaStore ? "      if (tma_out) {\n" + epiStage + "      } else {\n      TIR_PTX_NOTE(\"fallback begin\");\n" : "",
      "#pragma unroll\n      for (int ms = 0; ms < ", msub, "; ++ms) {\n", deviceEpilogue, "      }\n",
      tmaStore ? "      TIR_PTX_NOTE(\"fallback end\");\n      }\n" : "", "    }\n",
      // No store may still read shared memory when the block exits.
      tmaStore ? "    if (tma_out && t == 0) tir_bulk_wait_read<0>();\n" : "", "  }\n",
      // No CTA leaves while a peer may still multicast into it or arrive on its barriers.
      csize > 1 ? "  tir_cluster_sync();\n" : "", "#else\n");
  // The plain host form: the block's one thread stages each K step's tiles
  // as the producer's threads do (the same swizzled stages) and multiplies
  // them in loops.
  const std::string storage = type == "bf16" ? "tir_bf16" : "tir_f16", fromBits = type == "bf16" ? "tir_from_bf16" : "tir_from_f16";
  absl::StrAppend(&code, "  (void)tma; (void)full; (void)empty;\n", tmaStore ? "  (void)tma_out;\n" : "",
                  "  const int p = 0;\n",
                  "  TIR_SHARED float acc_h[", bm * bn, "];\n",
                  "  tir_sptr<tir_u16> As = tir_sptr_cast<tir_u16>(base), Bs = tir_sptr_cast<tir_u16>(base + ", aBytes, ");\n",
                  "  for (tir_i64 unit = first_tile; unit < units; unit += tile_step) {\n", coords,
                  "      for (int e = 0; e < ", bm * bn, "; ++e) acc_h[e] = 0.f;\n",
                  "      for (tir_i64 kt = kt0; kt < kt1; ++kt) {\n", "        {\n", "          const tir_i64 k0 = kt * 64;\n",
                  hostA, hostB, "        }\n",
                  "        for (int r = 0; r < ", bm, "; ++r)\n", "          for (int kk = 0; kk < 64; ++kk) {\n",
                  "            ", storage, " av; av.bits = ", aAt("r", "kk"), ";\n",
                  "            const float x = ", fromBits, "(av);\n",
                  "            for (int c = 0; c < ", bn, "; ++c) {\n",
                  "              ", storage, " bv; bv.bits = ", bAt("kk", "c"), ";\n",
                  "              acc_h[r * ", bn, " + c] += x * ", fromBits, "(bv);\n", "            }\n          }\n",
                  "      }\n", splitHost,
                  "      for (int e = 0; e < ", bm * bn, "; ++e) {\n",
                  "    const tir_i64 i", b, " = tm * ", bm, " + e / ", bn, ";\n",
                  "    const tir_i64 i", b + 1, " = tn * ", bn, " + e % ", bn, ";\n",
                  "    const float accv = acc_h[e];\n", epi, "      }\n  }\n", "#endif\n");
  // The device wgmma of this shape, before the kernel.
  absl::StrAppend(&constants_, WgmmaDeviceFunction(bn, type, !h.b_k_major));
  // The launch: one block per work unit (tiles x split), counted in
  // tiles: ceil(M / block_m) x ceil(N / block_n) x batches x split. A
  // persistent grid has at most kPersistentBlocks of them (one per SM of an
  // H100 or H200 SXM), each looping over units.
  auto tileDims = [&](tir::v1::LaunchExtent *e) {
    for (int d = 0; d <= b + 1; ++d) {
      auto *td = e->add_dims();
      td->mutable_tensor()->set_kind(tir::v1::TensorRef::ITERATION_DOMAIN);
      td->set_dim(d);
      e->add_dim_divisors(d == b ? bm : d == b + 1 ? bn : 1);
    }
  };
  // With a cluster: csize blocks per cluster tile (the grid x a multiple
  // of the cluster, kPersistentBlocks being even), launched in clusters of
  // csize along x.
  auto clusterDims = [&](tir::v1::LaunchExtent *e) {
    for (int d = 0; d <= b + 1; ++d) {
      auto *td = e->add_dims();
      td->mutable_tensor()->set_kind(tir::v1::TensorRef::ITERATION_DOMAIN);
      td->set_dim(d);
      e->add_dim_divisors(d == b ? bm * cm : d == b + 1 ? bn * cn : 1);
    }
  };
  static_assert(kPersistentBlocks % 2 == 0, "a persistent grid holds whole clusters of two");
  auto *gx = launch_.add_grid();
  gx->set_constant(split * csize);
  if (persistent) gx->set_max(kPersistentBlocks);
  if (csize > 1) {
    clusterDims(gx);
    launch_.add_cluster(static_cast<uint32_t>(csize));
    launch_.add_cluster(1);
    launch_.add_cluster(1);
    cluster_ = {static_cast<unsigned>(csize), 1, 1};
  } else {
    tileDims(gx);
  }
  launch_.add_grid()->set_constant(1);
  launch_.add_grid()->set_constant(1);
  launch_.add_block(threads);
  launch_.add_block(1);
  launch_.add_block(1);
  if (split > 1) {
    auto *w = launch_.mutable_workspace_bytes();
    w->set_constant(consumers * 128 * 4 + split * bm * bn * 4);
    tileDims(w);
  }
  return code;
}

}  // namespace tir::codegen::detail
