#include "compiler/planning/Candidates.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/planning/TileRules.h"

namespace tir::planning {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t NextPow2(int64_t v) {
  int64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

// One candidate of each kind with its resources, and the structural reason it
// cannot run ("" when it can): the single rule both the enumerated space and
// a user's tile go through.
struct Made {
  TileCandidate c;
  std::string reject;
};

Made Pointwise(const KernelFacts &f, const target::ArchInfo &arch, int threads, int ept, int vec) {
  Made m;
  TileCandidate &c = m.c;
  c.params = {{"threads", threads}, {"elements_per_thread", ept}, {"vector_width", vec}};
  c.threads = threads;
  c.registers_per_thread = 16 + ept * f.live_values;
  c.blocks = CeilDiv(f.points, int64_t{threads} * ept);
  if (vec > f.max_vector) m.reject = "vector width exceeds operand alignment";
  else if (ept % vec != 0) m.reject = "elements per thread not a multiple of the vector width";
  else if (vec * f.io_bytes > 16) m.reject = "vector wider than 16 bytes";
  else if (!arch.is_gpu && vec > 8) m.reject = "host vectors above 8 lanes";
  return m;
}

struct ReductionShape {
  int64_t rows = 1, extent = 1;
  bool last_dim = false;
};
ReductionShape Rows(const KernelFacts &f) {
  ReductionShape r;
  for (int64_t d : f.space.Parallel()) r.rows *= d;
  for (int64_t d : f.space.Reduced()) r.extent *= d;
  r.last_dim = !f.space.reduced_dims.empty() &&
               f.space.reduced_dims.back() == static_cast<int>(f.space.shape.size()) - 1;
  return r;
}
int64_t DefaultThreadsPerRow(const ReductionShape &r) { return std::clamp<int64_t>(NextPow2(r.extent) / 4, 32, 1024); }

// A reduction tile. On the host a block is one thread, so threads_per_row
// is always 1 there (the host form has no lanes to spread a row over).
Made Reduction(const KernelFacts &f, const target::ArchInfo &arch, int s, int tpr, int rpb, int vec, int split) {
  const ReductionShape r = Rows(f);
  Made m;
  TileCandidate &c = m.c;
  c.params = {{"strategy", s}, {"threads_per_row", tpr}, {"rows_per_block", rpb}, {"vector_width", vec}, {"split", split}};
  c.threads = arch.is_gpu ? tpr * rpb : 1;
  const int64_t runs = CeilDiv(r.extent, int64_t{tpr} * vec);
  const int64_t cached = s == 0 ? runs * vec * std::max(1, f.row_inputs) : 0;
  // Registers: the cached row at the compute width (element_bytes: a bf16
  // row computed in f32 counts 4-byte values), and per input one run as it
  // moves (io_bytes) and as it is computed on (a register a value at least).
  // A bf16 run of 8 computed in f32 is 12 registers, an f32 run of 4 is 8.
  const int computeBytes = std::max(4, f.element_bytes);
  c.registers_per_thread = 24 + static_cast<int>(std::min<int64_t>(cached * std::max(1, f.element_bytes / 4), 1 << 20)) +
                           vec * std::max(1, f.row_inputs) * (f.io_bytes + computeBytes) / 4;
  const int warps = std::max(1, (c.threads + 31) / 32);
  c.shared_bytes = (f.column ? c.threads : warps) * 8;
  // An online max and sum combines its three values through scratch of its own.
  if (f.online) c.shared_bytes += warps * 3 * std::max(4, f.element_bytes);
  c.blocks = CeilDiv(r.rows, rpb) * split;
  if (s == 0 && f.RowPasses() < 2) {
    m.reject = "one pass reads the row once: row_resident is the streaming kernel";
  } else if (s == 0 && (!f.static_row || f.ordered_reduction)) {
    m.reject = "row_resident needs rows of static length and no reduce_ud";
  } else if (s == 0 && r.extent * f.element_bytes * rpb * std::max(1, f.row_inputs) > arch.row_budget_bytes) {
    m.reject = "row does not fit on chip";
  } else if (s == 0 && arch.is_gpu && cached > 128) {
    m.reject = "cached row above the register budget";
  } else if (s == 2 && !f.Splittable()) {
    m.reject = "split needs one reduction of whole rows and nothing stored per element";
  } else if (s == 2 && r.extent / split < int64_t{tpr} * vec) {
    m.reject = "split leaves less than one tile per block";
  } else if (vec * f.io_bytes > 16) {
    m.reject = "vector wider than 16 bytes";
  } else if (vec > 1 && (f.column || f.ordered_reduction || !r.last_dim)) {
    m.reject = "vector runs only along a reduced innermost dim";
  } else if (vec > 1 && f.static_row && f.innermost_reduced % vec != 0) {
    m.reject = "vector runs must divide the innermost reduced extent";
  } else if (tpr > std::max<int64_t>(8, NextPow2(r.extent))) {
    m.reject = "more threads per row than elements";
  }
  return m;
}

Made Matmul(const KernelFacts &f, const target::ArchInfo &arch, int bm, int bn, int bk, int warps, int stages,
            int splitK, int group) {
  const int64_t m = f.space.m, n = f.space.n, k = f.space.k;
  int64_t batch = 1;
  for (int64_t b : f.space.batch) batch *= b;
  const int bytes = f.operand_bytes;
  const int mmaK = f.tf32 ? 8 : 16;
  // cp.async copies 16 bytes: K and N extents must allow it.
  const bool aligned16 = (k * bytes) % 16 == 0 && (n * bytes) % 16 == 0;
  const int smallest = arch.is_gpu ? 32 : 16;
  const int threads = warps * (arch.is_gpu ? 32 : 1);
  const int accPerThread = bm * bn / std::max(1, threads);
  const int warpTile = bm * bn / std::max(1, warps);
  Made out;
  std::string &reject = out.reject;
  const bool mma = arch.is_gpu && f.tensor_core;
  const FfmaTile ffma = FfmaTileOf(bm, bn, warps * 32);
  const WarpGrid wg = WarpGridOf(bm, warps);
  if (mma && (bm % 16 != 0 || bn % 8 != 0 || bk % mmaK != 0)) {
    reject = "tile not a multiple of the mma.sync shape";
  } else if (mma && (bm % (16 * wg.m) != 0 || bn % (8 * wg.n) != 0 || wg.m * wg.n != warps)) {
    reject = "tile does not split into whole mma.sync fragments over the block's warps";
  } else if (mma && (warpTile < 16 * 16 || accPerThread > 128)) {
    reject = "warp tile outside mma.sync register limits";
  } else if (!f.tensor_core && !ffma.ok) {
    reject = "tile does not split into register tiles over the block's threads";
  } else if (arch.is_gpu && !f.tensor_core && ffma.tm * ffma.tn > 64) {
    reject = "register tile above 64 accumulators a thread";
  } else if (arch.is_gpu && !f.tensor_core && stages > 2) {
    reject = "the CUDA-core matmul double-buffers at most (stages 1 or 2)";
  } else if (f.tf32 && stages > 2) {
    reject = "tf32 tiles are staged element by element, double-buffered at most (stages 1 or 2)";
  } else if (mma && !f.tf32 && f.matmul_pipelined && stages < 2) {
    reject = "cp.async-pipelined operands: stages from 2";
  } else if (mma && !f.tf32 && !f.matmul_pipelined && stages != 1) {
    reject = "operands computed in the kernel are staged element by element: stages do not apply";
  } else if (bm > std::max<int64_t>(smallest, NextPow2(m)) || bn > std::max<int64_t>(smallest, NextPow2(n))) {
    reject = "tile larger than the problem";
  } else if (splitK > 1 && k / splitK < 2 * bk) {
    reject = "split-K leaves less than two K tiles per split";
  } else if (mma && !aligned16 && stages > 2) {
    reject = "operand rows not 16-byte aligned for cp.async";
  } else if (splitK > 1) {
    // Kept in the space so the count shows it; offered once codegen splits
    // K (a partial-sum pass and a reduction).
    reject = "split-K is not generated yet";
  }
  TileCandidate &c = out.c;
  c.params = {{"block_m", bm}, {"block_n", bn}, {"block_k", bk}, {"warps", warps},
              {"stages", stages}, {"split_k", splitK}, {"group_m", group}};
  if (f.tf32) c.params["tf32"] = 1;
  c.threads = threads;
  // Swizzled, unpadded tiles (see the codegen's matmul).
  // CUDA-core tiles hold accumulator-typed values (4 or 8 bytes).
  // (As the emitter stages them: f32 as f32, f64 and integers in 8 bytes.)
  const int tileBytes = f.tensor_core ? bytes : f.matmul_acc_bytes;
  // (tf32 rows are padded by 8 words against bank conflicts.)
  c.shared_bytes = !arch.is_gpu ? 0
                   : f.tf32     ? std::max(1, stages) * (bk * (bm + 8) + bk * (bn + 8)) * 4
                                : std::max(1, stages) * (bm * bk + bk * bn) * tileBytes;
  c.registers_per_thread = !arch.is_gpu ? 64
                           : f.tensor_core ? 32 + accPerThread + (bm + bn) * bk / std::max(1, c.threads) / 2
                                           : 32 + static_cast<int>(ffma.tm * ffma.tn + ffma.tm + ffma.tn);
  c.blocks = CeilDiv(m, bm) * CeilDiv(n, bn) * batch * splitK;
  return out;
}
// The Hopper form (sm_90a, bf16/f16): a producer warpgroup and `consumers`
// consumer warpgroups, 64-column K steps through `stages` TMA stages.
// `raster` orders the tiles (EmitHopper): 0 bands of `group` tile rows, 1
// bands of tile columns, 2 and 3 the same walked serpentine. In clusters
// of clusterM x clusterN CTAs (2x1: two M tiles share their B tile, 1x2:
// two N tiles their A tile, each loading half and multicasting it).
Made HopperMatmul(const KernelFacts &f, const target::ArchInfo &arch, int bm, int bn, int stages, int consumers,
                  int persistent, int group, int splitK, int raster = 0, int tmaStore = 0, int clusterM = 1,
                  int clusterN = 1) {
  const int64_t m = f.space.m, n = f.space.n, kTiles = CeilDiv(std::max<int64_t>(1, f.space.k), 64);
  int64_t batch = 1;
  for (int64_t b : f.space.batch) batch *= b;
  Made out;
  std::string &reject = out.reject;
  const int rows = bm / std::max(1, consumers);
  if (bm % (64 * consumers) != 0) {
    reject = "each consumer warpgroup takes whole 64-row wgmma tiles";
  } else if (bn % 64 != 0 || bn > 256) {
    reject = "wgmma N: a multiple of 64 up to 256 (64-column TMA boxes)";
  } else if (rows / 64 * bn / 2 > 128) {
    reject = "more than 128 accumulators a consumer thread";
  } else if (bm > std::max<int64_t>(64, NextPow2(m)) || bn > std::max<int64_t>(64, NextPow2(n))) {
    reject = "tile larger than the problem";
  } else if (group > 1 && (raster % 2 == 0 ? CeilDiv(m, bm) : CeilDiv(n, bn)) <= 1) {
    reject = "grouped rasterization of a single tile row";
  } else if (raster >= 2 && (group <= 1 || (raster == 2 ? CeilDiv(m, bm) : CeilDiv(n, bn)) <= group)) {
    reject = "a serpentine order of a single band";
  } else if (splitK > 1 && kTiles / splitK < 2) {
    reject = "split-K leaves less than two K tiles per split";
  } else if (tmaStore && (f.tma_store_bytes == 0 || splitK > 1)) {
    reject = "tma_store needs one rank-2 (M, N) output and no split-K";
  } else if (clusterM * clusterN > 1 && (splitK > 1 || clusterM * clusterN > 2)) {
    reject = "clusters of 2x1 or 1x2 CTAs, without split-K";
  } else if ((clusterM > 1 && CeilDiv(m, bm) < 2) || (clusterN > 1 && CeilDiv(n, bn) < 2)) {
    reject = "a cluster wider than the tiles along its dimension";
  }
  TileCandidate &c = out.c;
  c.params = {{"block_m", bm}, {"block_n", bn}, {"block_k", 64}, {"stages", stages}, {"consumers", consumers},
              {"persistent", persistent}, {"group_m", group}, {"split_k", splitK}, {"wgmma", 1}};
  if (raster != 0) c.params["raster"] = raster;
  if (tmaStore) c.params["tma_store"] = 1;
  if (clusterM * clusterN > 1) {
    c.params["cluster_m"] = clusterM;
    c.params["cluster_n"] = clusterN;
  }
  c.threads = 128 * (consumers + 1);
  c.shared_bytes = HopperSharedBytes(bm, bn, stages, consumers, tmaStore);
  // setmaxnreg moves registers from the producer (40) to the consumers
  // (232); at entry the launch bounds cap every thread at the file's share.
  c.registers_per_thread = std::min(arch.max_registers_per_thread, arch.registers_per_sm / c.threads);
  // Work units: tiles x split; a persistent grid launches at most one
  // block per SM, each looping over units.
  // A cluster pads its dimension's tiles to a multiple of the cluster (a
  // CTA whose tile lies past the problem still loads and releases its
  // share), and a persistent grid holds whole clusters.
  const int64_t csize = int64_t(clusterM) * clusterN;
  c.work_units = CeilDiv(CeilDiv(m, bm), clusterM) * clusterM * CeilDiv(CeilDiv(n, bn), clusterN) * clusterN * batch * splitK;
  c.blocks = persistent ? std::min<int64_t>(c.work_units, arch.sm_count / csize * csize) : c.work_units;
  return out;
}

// The Hopper default: the largest tile whose count fills the machine
// (FillUnits), else 64 x 64 tiles with the smallest split-K
// that does (each split keeping two K tiles or more). A decode GEMM (M = 1,
// N = 4096: 64 tiles of 64 x 64) gets split-K 2; a prefill GEMM (M = 512,
// N = 4096) 128 x 128 tiles, 128 of them.
// Without split-K the default pairs M tiles in 2x1 clusters, B multicast
// to both (half the L2-to-SM feed of B), where the tile rows pair up with
// at most one padded tile row in eight, and stores its output by TMA from
// shared memory where the output allows it (tma_store: the consumers hand
// each box to the TMA unit instead of issuing the tile's global stores).
struct HopperDefault {
  int bm = 64, bn = 64, consumers = 1, split = 1;
  int64_t tiles = 1;
  int cluster_m = 1;
  int tma_store = 0;
};
HopperDefault DefaultHopperTile(const KernelFacts &f, const target::ArchInfo &arch) {
  const int64_t m = f.space.m, n = f.space.n, kTiles = CeilDiv(std::max<int64_t>(1, f.space.k), 64);
  int64_t batch = 1;
  for (int64_t b : f.space.batch) batch *= b;
  const int64_t fill = FillUnits(arch);
  struct Shape {
    int bm, bn, consumers;
  };
  HopperDefault best;
  bool found = false;
  for (Shape s : {Shape{128, 256, 2}, Shape{128, 128, 2}, Shape{64, 128, 1}, Shape{64, 64, 1}}) {
    if (s.bm > std::max<int64_t>(64, NextPow2(m)) || s.bn > std::max<int64_t>(64, NextPow2(n))) continue;
    best = HopperDefault{s.bm, s.bn, s.consumers, 1, CeilDiv(m, s.bm) * CeilDiv(n, s.bn) * batch};
    found = true;
    if (best.tiles >= fill) break;
  }
  if (!found) best.tiles = CeilDiv(m, 64) * CeilDiv(n, 64) * batch;
  if (best.tiles < fill) {
    for (int sk : {2, 4, 8, 16}) {
      if (kTiles / sk < 2) break;
      best.split = sk;
      if (best.tiles * sk >= fill) break;
    }
  }
  const int64_t tilesM = CeilDiv(m, best.bm);
  if (best.split == 1 && tilesM >= 2 && (tilesM % 2 == 0 || tilesM >= 8)) best.cluster_m = 2;
  best.tma_store = best.split == 1 && f.tma_store_bytes > 0 ? 1 : 0;
  return best;
}

int DefaultStages(const KernelFacts &f, const target::ArchInfo &arch) {
  if (!arch.is_gpu) return 1;
  if (!f.tensor_core || f.tf32) return 2;
  return f.matmul_pipelined ? 3 : 1;
}
int DefaultWarps(int bm, int bn, const target::ArchInfo &arch) {
  return arch.is_gpu ? (bm * bn >= 128 * 256 ? 8 : 4) : 1;
}

struct Builder {
  const KernelFacts &f;
  const target::ArchInfo &arch;
  CandidateSpace space;

  void Offer(Made m) {
    ++space.before_pruning;
    std::string why = m.reject;
    if (why.empty()) WithinLimits(m.c, arch, &why);
    if (!why.empty()) {
      ++space.pruned[why];
      return;
    }
    // Two candidates the generated code cannot tell apart are one: on the
    // host a pointwise block is one thread walking threads x
    // elements_per_thread points, so only that product counts.
    std::map<std::string, int64_t> key = m.c.params;
    if (!arch.is_gpu && f.space.kind == KernelKind::kPointwise) {
      key["threads"] *= key["elements_per_thread"];
      key["elements_per_thread"] = 0;
    }
    auto [at, fresh] = keys_.emplace(key, space.kept.size());
    if (!fresh) {
      ++space.pruned["the same kernel as another candidate"];
      if (m.c.is_default) space.kept[at->second].is_default = true;
      return;
    }
    space.kept.push_back(std::move(m.c));
  }
  std::map<std::map<std::string, int64_t>, size_t> keys_;

  void Pointwise() {
    // 16 bytes of the widest element that moves (max_vector), as far as the
    // host's 8 lanes allow there.
    const int64_t defaultVec = arch.is_gpu ? f.max_vector : std::min(f.max_vector, 8);
    for (int threads : {64, 128, 256, 512, 1024}) {
      for (int ept : {1, 2, 4, 8, 16}) {
        for (int vec : {1, 2, 4, 8, 16}) {
          Made m = planning::Pointwise(f, arch, threads, ept, vec);
          m.c.is_default = threads == 256 && vec == defaultVec && ept == defaultVec;
          Offer(std::move(m));
        }
      }
    }
  }

  void Reduction() {
    const ReductionShape r = Rows(f);
    // 16-byte runs first (8 bf16 elements, also when computed in f32), then
    // 8- and 4-byte ones.
    const int defaultVec = [&] {
      for (int v : {8, 4, 2}) {
        if (r.last_dim && !f.column && !f.ordered_reduction && v * f.io_bytes <= 16 &&
            (!f.static_row || f.innermost_reduced % v == 0)) {
          return v;
        }
      }
      return 1;
    }();
    std::vector<int> tprs, rpbs, vecs = {1};
    if (!arch.is_gpu) {
      tprs = {1};
      rpbs = {1, 4, 16};
    } else if (f.ordered_reduction) {
      tprs = {1};
      rpbs = {32, 64, 128, 256};
    } else if (f.column) {
      tprs = {1, 2, 4, 8, 16, 32};
      rpbs = {32, 64, 128, 256, 512, 1024};
    } else {
      tprs = {8, 16, 32, 64, 128, 256, 512, 1024};
      rpbs = {1, 2, 4, 8, 16, 32};
    }
    if (!f.column && !f.ordered_reduction) vecs = {1, 2, 4, 8};
    const int64_t defaultTpr = !arch.is_gpu || f.ordered_reduction ? 1 : f.column ? 4 : DefaultThreadsPerRow(r);
    const int64_t defaultRpb = !arch.is_gpu ? 1 : f.ordered_reduction ? 64 : f.column ? 64 : 1;
    // Rows read more than once stay on chip by default when that candidate
    // can run (else the default streams them rather than falling back to
    // whichever candidate comes first).
    // The cached default takes the most threads a row (from the streaming
    // default's down to 128) whose registers hold the row: a layer norm's
    // 8192-wide bf16 rows with a weight and a bias cached at 8 lanes need 512.
    int64_t cacheTpr = defaultTpr;
    const bool cacheDefault = f.RowPasses() > 1 && f.static_row && !f.ordered_reduction && [&] {
      for (int64_t tpr = defaultTpr; tpr >= std::min<int64_t>(defaultTpr, 128); tpr /= 2) {
        Made m = planning::Reduction(f, arch, 0, static_cast<int>(tpr), static_cast<int>(defaultRpb), defaultVec, 1);
        if (m.reject.empty() && WithinLimits(m.c, arch, nullptr)) {
          cacheTpr = tpr;
          return true;
        }
      }
      return false;
    }();
    // Few long rows: split them so every SM gets a block (when the split
    // still leaves each block a full tile).
    // Fewer threads a row (down to 128) where that lets a split reach the
    // SMs: 8 rows of 32,000 split 16 ways at 128 threads of 8-element runs.
    int defaultSplit = 1;
    int64_t splitTpr = defaultTpr;
    if (arch.is_gpu && f.Splittable() && r.rows < arch.sm_count) {
      int64_t blocks = r.rows;
      for (int64_t tpr = defaultTpr; tpr >= std::min<int64_t>(defaultTpr, 128) && blocks < arch.sm_count; tpr /= 2) {
        for (int split : {4, 16, 64}) {
          if (r.extent / split < tpr * defaultVec) break;
          if (r.rows * split > blocks) {
            blocks = r.rows * split;
            defaultSplit = split;
            splitTpr = tpr;
          }
          if (r.rows * split >= arch.sm_count) break;
        }
      }
    }
    const int defaultStrategy = defaultSplit > 1 ? 2 : cacheDefault ? 0 : 1;
    const int64_t strategyTpr = defaultStrategy == 2 ? splitTpr : defaultStrategy == 0 ? cacheTpr : defaultTpr;
    for (int s : {0, 1, 2}) {
      for (int tpr : tprs) {
        for (int rpb : rpbs) {
          const int threads = arch.is_gpu ? tpr * rpb : 1;
          if (arch.is_gpu && (threads < 32 || threads > arch.max_threads_per_block)) continue;
          if (s == 2 && rpb != 1) continue;
          for (int vec : vecs) {
            for (int split : s == 2 ? std::vector<int>{4, 16, 64} : std::vector<int>{1}) {
              Made m = planning::Reduction(f, arch, s, tpr, rpb, vec, split);
              m.c.is_default = s == defaultStrategy && tpr == strategyTpr && rpb == defaultRpb && vec == defaultVec &&
                               split == defaultSplit;
              Offer(std::move(m));
            }
          }
        }
      }
    }
  }

  void Hopper() {
    const int64_t m = f.space.m;
    const HopperDefault d = DefaultHopperTile(f, arch);
    // Split-K is offered where tiles alone leave SMs idle: splits that
    // bring the work units up to the machine and no further than twice it.
    std::vector<int> splits = {1};
    for (int sk : {2, 4, 8, 16}) {
      if (d.tiles * sk / 2 < arch.sm_count) splits.push_back(sk);
    }
    for (int bm : {64, 128, 256}) {
      for (int bn : {64, 128, 192, 256}) {
        for (int stages : {2, 3, 4, 5, 6}) {
          for (int consumers : {1, 2}) {
            for (int persistent : {0, 1}) {
              for (int group : {1, 8}) {
                for (int sk : splits) {
                  for (int raster : {0, 1, 2, 3}) {
                    // Other raster orders for grouped, persistent grids
                    // (whose blocks walk the tiles in the kernel's order).
                    if (raster != 0 && (group <= 1 || persistent == 0)) continue;
                    // tma_store (the output tile stored by TMA from shared
                    // memory, overlapping the next tile's main loop) where
                    // the output allows it, for persistent blocks without
                    // split-K.
                    for (int store : {0, 1}) {
                      if (store && (f.tma_store_bytes == 0 || !persistent || sk > 1)) continue;
                      // Clusters of two CTAs sharing an operand by TMA
                      // multicast: persistent, no split-K, in the default
                      // walk (bands of 8 tile rows, or rows where there is
                      // one): the walk is priced by DRAM traffic, which a
                      // cluster does not change, and each variant costs
                      // the tuner a compile.
                      for (auto [cm, cn] : {std::pair<int, int>{1, 1}, std::pair<int, int>{2, 1}, std::pair<int, int>{1, 2}}) {
                        if (cm * cn > 1 && (!persistent || sk != 1 || raster != 0 ||
                                            group != (CeilDiv(m, bm) > 1 ? 8 : 1))) {
                          continue;
                        }
                        Made made = planning::HopperMatmul(f, arch, bm, bn, stages, consumers, persistent, group, sk,
                                                           raster, store, cm, cn);
                        made.c.is_default = bm == d.bm && bn == d.bn && consumers == d.consumers && stages == 4 &&
                                            persistent == 1 && group == (CeilDiv(m, bm) > 1 ? 8 : 1) &&
                                            sk == d.split && raster == 0 && store == d.tma_store && cm == d.cluster_m &&
                                            cn == 1;
                        if (!made.reject.empty()) {
                          ++space.before_pruning;
                          ++space.pruned[made.reject];
                          continue;
                        }
                        Offer(std::move(made));
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }

  void Matmul() {
    if (arch.has_wgmma && f.tensor_core && !f.tf32) return Hopper();
    const int64_t m = f.space.m, n = f.space.n;
    const std::vector<int> tiles = arch.is_gpu ? std::vector<int>{32, 64, 128, 256} : std::vector<int>{16, 32, 64};
    const std::vector<int> ks = {16, 32, 64};
    for (int bm : tiles) {
      for (int bn : tiles) {
        for (int bk : ks) {
          for (int warps : arch.is_gpu ? std::vector<int>{2, 4, 8} : std::vector<int>{1}) {
            for (int stages : arch.is_gpu ? std::vector<int>{1, 2, 3, 4, 5} : std::vector<int>{1}) {
              for (int splitK : {1, 2, 4}) {
                for (int group : {1, 8}) {
                  Made made = planning::Matmul(f, arch, bm, bn, bk, warps, stages, splitK, group);
                  // CUDA-core tiles are smaller: 64 x 64 over 4 warps is 32 accumulators a thread.
                  const int64_t cap = arch.is_gpu && !f.tensor_core ? 64 : 128;
                  made.c.is_default = bm == std::min<int64_t>(cap, std::max<int64_t>(32, NextPow2(m))) &&
                                      bn == std::min<int64_t>(cap, std::max<int64_t>(32, NextPow2(n))) &&
                                      bk == (arch.is_gpu && !f.tensor_core ? 16 : 32) &&
                                      warps == (arch.is_gpu && !f.tensor_core ? 4 : DefaultWarps(bm, bn, arch)) &&
                                      stages == DefaultStages(f, arch) && splitK == 1 && group == 8;
                  if (!made.reject.empty()) {  // counted without keeping the candidate
                    ++space.before_pruning;
                    ++space.pruned[made.reject];
                    continue;
                  }
                  Offer(std::move(made));
                }
              }
            }
          }
        }
      }
    }
  }
};

std::string Fmt(const std::vector<int64_t> &v) { return "[" + absl::StrJoin(v, ", ") + "]"; }

std::string ParamsText(const TileCandidate &c) {
  std::vector<std::string> parts;
  for (const auto &[k, v] : c.params) parts.push_back(absl::StrCat(k, "=", v));
  return absl::StrJoin(parts, " ");
}

// The user's tile mapped onto tir's parameters for this kernel, or the reason
// it cannot be.
Made FromUserTile(const KernelFacts &f, const target::ArchInfo &arch, const TileHints &hints, std::string &how,
                  std::string &detail) {
  const std::vector<int64_t> tile = hints.tile ? *hints.tile : hints.candidates.front();
  const std::string name = hints.tile ? "tile_size" : "tile_candidates[0]";
  int64_t volume = 1;
  for (int64_t t : tile) volume = std::min<int64_t>(volume * t, int64_t{1} << 40);
  Made m;
  how = absl::StrCat(name, " ", Fmt(tile));
  switch (f.space.kind) {
    case KernelKind::kPointwise: {
      // tir's pointwise blocks take consecutive points of the flattened
      // domain: a block as large as the tile.
      int64_t threads = 1;
      const int64_t cap = std::min<int64_t>(arch.max_threads_per_block, 256);
      while (threads * 2 <= cap && volume % (threads * 2) == 0) threads *= 2;
      int64_t ept = volume / threads;
      while (ept > 16 && threads * 2 <= arch.max_threads_per_block && ept % 2 == 0) {
        threads *= 2;
        ept /= 2;
      }
      if (ept > 16 || threads * ept != volume) {
        m.reject = absl::StrCat("a block of ", volume, " points is not threads x elements_per_thread with at most ",
                                arch.max_threads_per_block, " threads and 16 elements per thread");
        break;
      }
      int vec = 1;
      for (int v : {16, 8, 4, 2}) {
        if (ept % v == 0 && v <= f.max_vector && v * f.io_bytes <= 16 && (arch.is_gpu || v <= 8)) {
          vec = v;
          break;
        }
      }
      m = planning::Pointwise(f, arch, static_cast<int>(threads), static_cast<int>(ept), vec);
      detail = absl::StrCat(volume, " points a block: tir tiles the flattened domain");
      break;
    }
    case KernelKind::kReduction: {
      // The tile covers the kept (row) dims: rows a block; reduction_tile_size
      // is the chunk of a row a block reduces at once.
      const ReductionShape r = Rows(f);
      int vec = 1;
      for (int v : {8, 4, 2}) {
        if (r.last_dim && !f.column && !f.ordered_reduction && v * f.io_bytes <= 16 &&
            (!f.static_row || f.innermost_reduced % v == 0)) {
          vec = v;
          break;
        }
      }
      int64_t tpr = f.ordered_reduction || !arch.is_gpu ? 1 : DefaultThreadsPerRow(r);
      if (hints.reduction_tile && arch.is_gpu && !f.ordered_reduction) {
        tpr = NextPow2(std::max<int64_t>(1, *hints.reduction_tile / vec));
      }
      if (arch.is_gpu && volume * tpr < 32) tpr = NextPow2(CeilDiv(32, volume));
      if (volume * tpr > arch.max_threads_per_block) {
        m.reject = absl::StrCat(volume, " rows a block x ", tpr, " threads a row exceeds ", arch.max_threads_per_block,
                                " threads a block");
        break;
      }
      m = planning::Reduction(f, arch, 0, static_cast<int>(tpr), static_cast<int>(volume), vec, 1);
      if (!m.reject.empty()) m = planning::Reduction(f, arch, 1, static_cast<int>(tpr), static_cast<int>(volume), vec, 1);
      detail = absl::StrCat("the tile is rows a block",
                            hints.reduction_tile ? absl::StrCat("; reduction_tile_size ", *hints.reduction_tile,
                                                                " elements of a row at once")
                                                 : "");
      break;
    }
    case KernelKind::kMatmul: {
      // [batch..., M, N]; K is not in the tile (reduction_tile_size is block_k).
      if (tile.size() < 2) {
        m.reject = absl::StrCat(name, " ", Fmt(tile), " has no M and N entries (expected [batch..., M, N])");
        break;
      }
      const int64_t bm = tile[tile.size() - 2], bn = tile[tile.size() - 1];
      std::string batchNote;
      for (size_t i = 0; i + 2 < tile.size(); ++i) {
        if (tile[i] != 1) batchNote = "; its batch entries are not honoured: a tir matmul block takes one batch element";
      }
      const int bk = hints.reduction_tile ? static_cast<int>(*hints.reduction_tile) : 32;
      // As many warps as the default would use and the tile has room for.
      int warps = DefaultWarps(bm, bn, arch);
      while (arch.is_gpu && warps > 1 && bm * bn / warps < 16 * 16) warps /= 2;
      if (arch.has_wgmma && f.tensor_core && !f.tf32) {
        // The Hopper form: tiles of whole 64 x 64 wgmma / TMA units; a
        // smaller tile becomes the smallest one holding it. K steps are 64
        // (reduction_tile_size does not apply).
        const int64_t hm = std::max<int64_t>(64, CeilDiv(bm, 64) * 64), hn = std::max<int64_t>(64, CeilDiv(bn, 64) * 64);
        m = planning::HopperMatmul(f, arch, static_cast<int>(hm), static_cast<int>(hn), 4, hm >= 128 && hm % 128 == 0 ? 2 : 1,
                                   1, CeilDiv(f.space.m, hm) > 1 ? 8 : 1, 1);
        detail = absl::StrCat("the tile is M and N a block",
                              hm != bm || hn != bn ? absl::StrCat(", rounded up to ", hm, "x", hn,
                                                                  " (the sm_90a wgmma form takes 64 x 64 units)")
                                                   : " (the sm_90a wgmma form)",
                              "; K steps of 64", batchNote);
        break;
      }
      m = planning::Matmul(f, arch, static_cast<int>(bm), static_cast<int>(bn), bk, warps, DefaultStages(f, arch), 1, 8);
      detail = absl::StrCat("the tile is M and N a block", hints.reduction_tile ? ", reduction_tile_size K" : "",
                            batchNote);
      break;
    }
  }
  return m;
}

}  // namespace

int64_t FillUnits(const target::ArchInfo &arch) { return (int64_t{arch.sm_count} * 10 + 10) / 11; }

bool WithinLimits(const TileCandidate &c, const target::ArchInfo &arch, std::string *why) {
  auto fail = [&](const char *w) {
    if (why) *why = w;
    return false;
  };
  if (c.threads > arch.max_threads_per_block) return fail("threads per block above the arch limit");
  if (c.shared_bytes > arch.max_shared_bytes_per_block) return fail("shared memory above the per-block limit");
  if (c.registers_per_thread > arch.max_registers_per_thread) return fail("registers per thread above the limit");
  if (int64_t{c.registers_per_thread} * c.threads > arch.registers_per_sm) return fail("registers per block above the SM's file");
  if (c.blocks <= 0) return fail("no blocks");
  if (c.blocks > (int64_t{1} << 31) - 1) return fail("more blocks than a grid holds");
  return true;
}

CandidateSpace GenerateCandidates(const KernelFacts &facts, const target::ArchInfo &arch, const TileHints *hints) {
  Builder b{facts, arch, {}};
  switch (facts.space.kind) {
    case KernelKind::kPointwise: b.Pointwise(); break;
    case KernelKind::kReduction: b.Reduction(); break;
    case KernelKind::kMatmul: b.Matmul(); break;
  }
  // The user's tile (TensorIR's tile_size, else tile_candidates[0]) is the
  // default when it maps onto a candidate that can run.
  if (hints && (hints->tile || !hints->candidates.empty())) {
    std::string how, detail;
    Made m = FromUserTile(facts, arch, *hints, how, detail);
    if (m.reject.empty() && !m.c.params.empty()) WithinLimits(m.c, arch, &m.reject);
    const std::string note = detail.empty() ? "" : " (" + detail + ")";
    if (!m.reject.empty()) {
      b.space.user_tile = absl::StrCat(how, " is not honoured: ", m.reject, note, "; the heuristic default stands");
    } else {
      auto same = std::find_if(b.space.kept.begin(), b.space.kept.end(),
                               [&](const TileCandidate &c) { return c.params == m.c.params; });
      for (TileCandidate &c : b.space.kept) c.is_default = false;
      if (same == b.space.kept.end()) {
        m.c.is_default = true;
        b.space.kept.push_back(m.c);
        ++b.space.before_pruning;
      } else {
        same->is_default = true;
      }
      b.space.user_tile = absl::StrCat(how, " became the default candidate ", ParamsText(m.c), note);
    }
  }
  // Guarantee one default: if the heuristic's pick was pruned, the first kept
  // candidate stands in for it.
  bool hasDefault = false;
  for (const TileCandidate &c : b.space.kept) hasDefault |= c.is_default;
  if (!hasDefault && !b.space.kept.empty()) b.space.kept.front().is_default = true;
  return b.space;
}

}  // namespace tir::planning
