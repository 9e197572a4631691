// Tile candidates per kernel kind, pruned by what the target arch allows.
//
//  - pointwise: threads per block, elements per thread, vector width.
//  - reduction: row-resident / streaming / split rows across blocks, threads
//    per row, rows per block, vector width, split factor.
//  - matmul: block M/N/K, warps, pipeline stages, split-K, rasterization
//    group size (mma.sync with a cp.async pipeline; the host backend uses
//    the same tiles without tensor cores).
// Pruning: threads per block, shared memory per block, registers per thread,
// tensor-core tile shapes, and the alignment of every operand's contiguous
// dimension (vector width and cp.async 16-byte copies). The static default —
// what a heuristic alone would pick, or the graph's own tile (TensorIR's
// tile_size) mapped onto these parameters — is always kept and marked.

#ifndef TIR_COMPILER_PLANNING_CANDIDATES_H_
#define TIR_COMPILER_PLANNING_CANDIDATES_H_

#include <map>
#include <string>
#include <vector>

#include "compiler/ir/TileHints.h"
#include "compiler/planning/KernelFacts.h"
#include "compiler/target/ArchTable.h"

namespace tir::planning {

struct TileCandidate {
  std::map<std::string, int64_t> params;
  bool is_default = false;
  // Resources the candidate needs per block.
  int threads = 0;
  int shared_bytes = 0;
  int registers_per_thread = 0;
  // Blocks launched; a persistent grid launches fewer than its work units
  // (0: one unit a block) and each block loops over several.
  int64_t blocks = 0;
  int64_t work_units = 0;
  int64_t Units() const { return work_units > 0 ? work_units : blocks; }
};

struct CandidateSpace {
  int before_pruning = 0;
  std::vector<TileCandidate> kept;
  std::map<std::string, int> pruned;  // reason -> count
  // What the graph's own tile (tile_size, ...) became here, or why it could
  // not be honoured; empty when the graph names none.
  std::string user_tile;
};

// The space for a kernel. With `hints` naming a tile, the candidate it maps
// to joins the space (if not already in it) and is the default.
CandidateSpace GenerateCandidates(const KernelFacts &facts, const target::ArchInfo &arch,
                                  const TileHints *hints = nullptr);

// Whether `c` respects every limit of `arch` (the pruning rule, for tests).
bool WithinLimits(const TileCandidate &c, const target::ArchInfo &arch, std::string *why);

// Work units that fill `arch`'s GPU: 10/11 of its SMs (120 of an H100's or
// H200's 132, 99 of an A100's 108). Matmul defaults reach it where tiles or
// split-K can, and the ranking puts candidates that do first (Plan.cpp).
int64_t FillUnits(const target::ArchInfo &arch);

}  // namespace tir::planning

#endif  // TIR_COMPILER_PLANNING_CANDIDATES_H_
