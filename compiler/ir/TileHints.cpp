#include "compiler/ir/TileHints.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"

namespace tir {
namespace {

std::string Print(mlir::Attribute a) {
  std::string s;
  llvm::raw_string_ostream os(s);
  a.print(os);
  return os.str();
}

// A tile: array<i32: ...> (TensorIR's form) or array<i64: ...>, non-empty,
// every extent >= 1.
std::optional<std::vector<int64_t>> Tile(mlir::Attribute a) {
  std::vector<int64_t> out;
  if (auto i32 = a.dyn_cast<mlir::DenseI32ArrayAttr>()) {
    out.assign(i32.asArrayRef().begin(), i32.asArrayRef().end());
  } else if (auto i64 = a.dyn_cast<mlir::DenseI64ArrayAttr>()) {
    out.assign(i64.asArrayRef().begin(), i64.asArrayRef().end());
  } else {
    return std::nullopt;
  }
  if (out.empty()) return std::nullopt;
  for (int64_t t : out) {
    if (t < 1) return std::nullopt;
  }
  return out;
}

}  // namespace

std::string TileHints::ToString() const {
  std::vector<std::string> parts;
  if (tile) parts.push_back(absl::StrCat("tile_size = [", absl::StrJoin(*tile, ", "), "]"));
  if (!candidates.empty()) {
    std::vector<std::string> c;
    for (const auto &t : candidates) c.push_back(absl::StrCat("[", absl::StrJoin(t, ", "), "]"));
    parts.push_back(absl::StrCat("tile_candidates = [", absl::StrJoin(c, ", "), "]"));
  }
  if (reduction_tile) parts.push_back(absl::StrCat("reduction_tile_size = ", *reduction_tile));
  return absl::StrJoin(parts, ", ");
}

mlir::FailureOr<TileHints> parseTileHints(mlir::Operation *graph, std::string *why) {
  TileHints h;
  if (mlir::Attribute a = graph->getAttr("tile_size")) {
    h.tile = Tile(a);
    if (!h.tile) {
      *why = "expects tile_size to be an array<i32: ...> of positive extents, got " + Print(a);
      return mlir::failure();
    }
  }
  if (mlir::Attribute a = graph->getAttr("tile_candidates")) {
    auto list = a.dyn_cast<mlir::ArrayAttr>();
    if (!list || list.empty()) {
      *why = "expects tile_candidates to be a non-empty list of array<i32: ...> tiles, got " + Print(a);
      return mlir::failure();
    }
    for (auto [i, c] : llvm::enumerate(list)) {
      std::optional<std::vector<int64_t>> t = Tile(c);
      if (!t) {
        *why = absl::StrCat("expects tile_candidates[", i, "] to be an array<i32: ...> of positive extents, got ",
                            Print(c));
        return mlir::failure();
      }
      h.candidates.push_back(*t);
    }
  }
  if (mlir::Attribute a = graph->getAttr("reduction_tile_size")) {
    std::optional<int64_t> v;
    if (auto i = a.dyn_cast<mlir::IntegerAttr>()) {
      v = i.getValue().getSExtValue();
    } else if (std::optional<std::vector<int64_t>> t = Tile(a); t && t->size() == 1) {
      v = (*t)[0];
    }
    if (!v || *v < 1 || (*v & (*v - 1)) != 0) {
      *why = "expects reduction_tile_size to be a positive power of two, got " + Print(a);
      return mlir::failure();
    }
    h.reduction_tile = v;
  }
  return h;
}

bool isAnalysisAttribute(llvm::StringRef name) {
  static constexpr llvm::StringLiteral kNames[] = {
      "layout", "iteration_space", "result_layouts", "result_views", "tir.layout", "tir.iter_space_map",
      "tir.iter_space_id", "tir.iter_space_ids", "tir.iter_space_dim_domains", "tir.cost", "tir.allow_tma",
      "tir.reduction_prologue_applied", "tir.reduction_extent", "tensor_ir.resolved_tile_size",
      "tensor_ir.resolved_iteration_space_shape",
  };
  for (llvm::StringLiteral n : kNames) {
    if (name == n) return true;
  }
  return false;
}

}  // namespace tir
