#include "compiler/planning/Candidates.h"

#include <algorithm>

namespace tir::planning {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t NextPow2(int64_t v) {
  int64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

struct Builder {
  const KernelFacts &f;
  const target::ArchInfo &arch;
  CandidateSpace space;

  void Offer(TileCandidate c, const std::string &structural_reject = "") {
    ++space.before_pruning;
    std::string why = structural_reject;
    if (why.empty() && !WithinLimits(c, arch, &why)) {
      // why set by WithinLimits
    }
    if (!why.empty()) {
      ++space.pruned[why];
      return;
    }
    space.kept.push_back(std::move(c));
  }

  void Pointwise() {
    const int64_t points = f.points;
    const int64_t defaultVec = f.max_vector;
    for (int threads : {64, 128, 256, 512, 1024}) {
      for (int ept : {1, 2, 4, 8, 16}) {
        for (int vec : {1, 2, 4, 8, 16}) {
          TileCandidate c;
          c.params = {{"threads", threads}, {"elements_per_thread", ept}, {"vector_width", vec}};
          c.threads = threads;
          c.registers_per_thread = 16 + ept * f.live_values;
          c.blocks = CeilDiv(points, int64_t{threads} * ept);
          c.is_default = threads == 256 && vec == defaultVec && ept == defaultVec;
          std::string reject;
          if (vec > f.max_vector) reject = "vector width exceeds operand alignment";
          else if (ept % vec != 0) reject = "elements per thread not a multiple of the vector width";
          else if (vec * f.element_bytes > 16) reject = "vector wider than 16 bytes";
          else if (!arch.is_gpu && vec > 8) reject = "host vectors above 8 lanes";
          Offer(std::move(c), reject);
        }
      }
    }
  }

  void Reduction() {
    const std::vector<int64_t> par = f.space.Parallel(), red = f.space.Reduced();
    int64_t rows = 1, extent = 1;
    for (int64_t d : par) rows *= d;
    for (int64_t d : red) extent *= d;
    const bool lastDim = !f.space.reduced_dims.empty() &&
                         f.space.reduced_dims.back() == static_cast<int>(f.space.shape.size()) - 1;
    const int64_t defaultTpr = std::clamp<int64_t>(NextPow2(extent) / 4, 32, 1024);
    for (const char *strategy : {"row_resident", "streaming", "split"}) {
      const int s = strategy[0] == 'r' ? 0 : strategy[1] == 't' ? 1 : 2;
      for (int tpr : {32, 64, 128, 256, 512, 1024}) {
        for (int rpb : {1, 2, 4, 8}) {
          for (int vec : {1, 2, 4, 8}) {
            for (int split : {1, 4, 16, 64}) {
              if (s != 2 && split != 1) continue;
              if (s == 2 && split == 1) continue;
              TileCandidate c;
              c.params = {{"strategy", s}, {"threads_per_row", tpr}, {"rows_per_block", rpb},
                          {"vector_width", vec}, {"split", split}};
              c.threads = tpr * rpb;
              const int64_t perThread = CeilDiv(extent, tpr);
              c.registers_per_thread = 24 + (s == 0 ? static_cast<int>(std::min<int64_t>(perThread, 1 << 20)) : vec * 2);
              c.shared_bytes = rpb * 32 * 8;  // one partial per warp per row
              c.blocks = CeilDiv(rows, rpb) * split;
              c.is_default = (f.space.row_resident ? s == 0 : s == 1) && tpr == defaultTpr && rpb == 1 &&
                             vec == std::min(4, f.max_vector) && split == 1;
              std::string reject;
              if (s == 0 && !f.space.row_resident && extent * f.element_bytes > arch.row_budget_bytes) {
                reject = "row does not fit on chip";
              } else if (s != 0 && f.space.row_resident) {
                reject = "kernel needs rows resident (reduced values are broadcast back)";
              } else if (vec > f.max_vector || (!lastDim && vec > 1)) {
                reject = "vector width exceeds operand alignment";
              } else if (s == 2 && extent / split < int64_t{tpr} * vec) {
                reject = "split leaves less than one tile per block";
              } else if (tpr > NextPow2(extent) && tpr > 32) {
                reject = "more threads per row than elements";
              }
              Offer(std::move(c), reject);
            }
          }
        }
      }
    }
  }

  void Matmul() {
    const int64_t m = f.space.m, n = f.space.n, k = f.space.k;
    int64_t batch = 1;
    for (int64_t b : f.space.batch) batch *= b;
    const int bytes = f.operand_bytes;
    const int mmaK = f.tf32 ? 8 : 16;
    // cp.async copies 16 bytes: K and N extents must allow it.
    const bool aligned16 = (k * bytes) % 16 == 0 && (n * bytes) % 16 == 0;
    const std::vector<int> tiles = arch.is_gpu ? std::vector<int>{32, 64, 128, 256} : std::vector<int>{16, 32, 64};
    const std::vector<int> ks = arch.is_gpu ? std::vector<int>{16, 32, 64} : std::vector<int>{16, 32, 64};
    for (int bm : tiles) {
      for (int bn : tiles) {
        for (int bk : ks) {
          for (int warps : arch.is_gpu ? std::vector<int>{2, 4, 8} : std::vector<int>{1}) {
            for (int stages : arch.is_gpu ? std::vector<int>{2, 3, 4, 5} : std::vector<int>{1}) {
              for (int splitK : {1, 2, 4}) {
                for (int group : {1, 8}) {
                  const int threads = warps * (arch.is_gpu ? 32 : 1);
                  const int accPerThread = bm * bn / std::max(1, threads);
                  std::string reject;
                  const int warpTile = bm * bn / warps;
                  if (arch.is_gpu && (bm % 16 != 0 || bn % 8 != 0 || bk % mmaK != 0)) {
                    reject = "tile not a multiple of the mma.sync shape";
                  } else if (arch.is_gpu && (warpTile < 16 * 16 || accPerThread > 128)) {
                    reject = "warp tile outside mma.sync register limits";
                  } else if (bm > std::max<int64_t>(tiles.front(), NextPow2(m)) ||
                             bn > std::max<int64_t>(tiles.front(), NextPow2(n))) {
                    reject = "tile larger than the problem";
                  } else if (splitK > 1 && k / splitK < 2 * bk) {
                    reject = "split-K leaves less than two K tiles per split";
                  } else if (arch.is_gpu && !aligned16 && stages > 2) {
                    reject = "operand rows not 16-byte aligned for cp.async";
                  } else if (!f.tensor_core && arch.is_gpu && stages > 3) {
                    reject = "deep pipelines only for tensor-core operands";
                  } else if (splitK > 1) {
                    // Kept in the space so the count shows it; offered once
                    // codegen splits K (a partial-sum pass and a reduction).
                    reject = "split-K is not generated yet";
                  }
                  if (!reject.empty()) {  // counted without building the candidate
                    ++space.before_pruning;
                    ++space.pruned[reject];
                    continue;
                  }
                  TileCandidate c;
                  c.params = {{"block_m", bm}, {"block_n", bn}, {"block_k", bk}, {"warps", warps},
                              {"stages", stages}, {"split_k", splitK}, {"group_m", group}};
                  c.threads = threads;
                  // Swizzled, unpadded tiles (see the codegen's matmul).
                  c.shared_bytes = arch.is_gpu ? stages * (bm * bk + bk * bn) * bytes : 0;
                  c.registers_per_thread = arch.is_gpu ? 32 + accPerThread + (bm + bn) * bk / std::max(1, c.threads) / 2 : 64;
                  c.blocks = CeilDiv(m, bm) * CeilDiv(n, bn) * batch * splitK;
                  const int defaultWarps = bm * bn >= 128 * 256 ? 8 : 4;
                  c.is_default = bm == std::min<int64_t>(128, std::max<int64_t>(32, NextPow2(m))) &&
                                 bn == std::min<int64_t>(128, std::max<int64_t>(32, NextPow2(n))) && bk == 32 &&
                                 (warps == (arch.is_gpu ? defaultWarps : 1)) && stages == (arch.is_gpu ? 3 : 1) &&
                                 splitK == 1 && group == 8;
                  Offer(std::move(c));
                }
              }
            }
          }
        }
      }
    }
  }
};

}  // namespace

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
  return true;
}

CandidateSpace GenerateCandidates(const KernelFacts &facts, const target::ArchInfo &arch) {
  Builder b{facts, arch, {}};
  switch (facts.space.kind) {
    case KernelKind::kPointwise: b.Pointwise(); break;
    case KernelKind::kReduction: b.Reduction(); break;
    case KernelKind::kMatmul: b.Matmul(); break;
  }
  // Guarantee one default: if the heuristic's pick was pruned, the first kept
  // candidate stands in for it.
  bool hasDefault = false;
  for (const TileCandidate &c : b.space.kept) hasDefault |= c.is_default;
  if (!hasDefault && !b.space.kept.empty()) b.space.kept.front().is_default = true;
  return b.space;
}

}  // namespace tir::planning
