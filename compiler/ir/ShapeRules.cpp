#include "compiler/ir/ShapeRules.h"

#include "mlir/IR/BuiltinTypes.h"

namespace tir {

std::optional<int64_t> equalMerge(int64_t a, int64_t b) {
  if (mlir::ShapedType::isDynamic(a)) return b;
  if (mlir::ShapedType::isDynamic(b)) return a;
  if (a == b) return a;
  return std::nullopt;
}

std::optional<int64_t> broadcastMerge(int64_t a, int64_t b) {
  const bool da = mlir::ShapedType::isDynamic(a), db = mlir::ShapedType::isDynamic(b);
  if (da && db) return a;
  if (da) return b == 1 ? a : b;
  if (db) return a == 1 ? b : a;
  if (a == b) return a;
  if (a == 1) return b;
  if (b == 1) return a;
  return std::nullopt;
}

std::optional<llvm::SmallVector<int64_t>> broadcastMergeShapes(llvm::ArrayRef<int64_t> a,
                                                               llvm::ArrayRef<int64_t> b,
                                                               int64_t *conflictDim) {
  if (a.size() != b.size()) return std::nullopt;
  llvm::SmallVector<int64_t> out;
  for (size_t i = 0; i < a.size(); ++i) {
    std::optional<int64_t> m = broadcastMerge(a[i], b[i]);
    if (!m) {
      if (conflictDim) *conflictDim = static_cast<int64_t>(i);
      return std::nullopt;
    }
    out.push_back(*m);
  }
  return out;
}

std::optional<int64_t> staticElementCount(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (mlir::ShapedType::isDynamic(d) || d < 0) return std::nullopt;
    if (d != 0 && n > INT64_MAX / d) return std::nullopt;
    n *= d;
  }
  return n;
}

}  // namespace tir
