//===- TileHints.h - the user's tile for a graph ----------------*- C++ -*-===//
//
// TensorIR graphs may name their tile in graph attributes:
//   tile_size = array<i32: 32, 16>            the tile (per dimension of the
//                                             iteration space; for reductions
//                                             and matmuls the output dims)
//   tile_candidates = [array<i32: 64, 32>, ...]   tiles an analysis proposed
//   reduction_tile_size = 128                 the chunk a block reduces at once
// tir maps them onto its own tile parameters (planning/UserTile.h): the
// candidate they name joins the space and becomes the default. This header
// reads and checks them; a malformed one makes the graph invalid.
//
// Also here: which attributes are TensorIR's analysis results (written back
// by its passes onto graphs, ops, arguments and results). tir accepts them
// and ignores them: they change no kernel and do not enter the fingerprint.

#ifndef TIR_COMPILER_IR_TILEHINTS_H_
#define TIR_COMPILER_IR_TILEHINTS_H_

#include <optional>
#include <string>
#include <vector>

#include "llvm/ADT/StringRef.h"
#include "mlir/Support/LogicalResult.h"

namespace mlir {
class Operation;
}

namespace tir {

class GraphOp;

struct TileHints {
  // tile_size, when given.
  std::optional<std::vector<int64_t>> tile;
  // tile_candidates, in order.
  std::vector<std::vector<int64_t>> candidates;
  // reduction_tile_size, when given.
  std::optional<int64_t> reduction_tile;
  bool empty() const { return !tile && candidates.empty() && !reduction_tile; }
  // "tile_size = [32, 16], reduction_tile_size = 128" for messages.
  std::string ToString() const;
};

// Reads the graph's tile attributes. On a malformed one returns failure and
// sets `why` (e.g. "expects tile_size to be an array<i32: ...> of positive
// extents, got [0, 4]").
mlir::FailureOr<TileHints> parseTileHints(mlir::Operation *graph, std::string *why);

// Whether `name` is an analysis attribute TensorIR's passes write (accepted
// and ignored): on ops `layout`, `iteration_space`, `tir.iter_space_*`,
// `tir.layout`, `result_layouts`, `result_views`, ...; on signatures
// `tir.iter_space_*`, `tir.cost`, `tir.allow_tma`, `tir.layout`.
bool isAnalysisAttribute(llvm::StringRef name);

}  // namespace tir

#endif  // TIR_COMPILER_IR_TILEHINTS_H_
