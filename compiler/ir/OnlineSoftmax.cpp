#include "compiler/ir/OnlineSoftmax.h"

namespace tir {
namespace {

// The one user of `v` among the kernel's ops, or null.
mlir::Operation *OnlyUser(mlir::Value v, const std::function<bool(mlir::Operation *)> &inKernel) {
  mlir::Operation *only = nullptr;
  for (mlir::Operation *user : v.getUsers()) {
    if (!inKernel(user)) continue;
    if (only && only != user) return nullptr;
    only = user;
  }
  return only;
}

// f32 or f64, the same element type and shape as `shapeOf`.
bool OnlineFloat(mlir::Type t, mlir::Type shapeOf) {
  auto s = t.dyn_cast<mlir::RankedTensorType>();
  auto ref = shapeOf.dyn_cast<mlir::RankedTensorType>();
  if (!s || !ref || s.getShape() != ref.getShape()) return false;
  mlir::Type e = s.getElementType();
  return (e.isF32() || e.isF64()) && e == ref.getElementType();
}

}  // namespace

std::optional<OnlineSoftmax> MatchOnlineSoftmax(ReduceOp max,
                                                const std::function<bool(mlir::Operation *)> &inKernel) {
  if (max.getReductionMode() != ReductionMode::max) return std::nullopt;
  const mlir::Value a = max.getInput();
  if (!OnlineFloat(a.getType(), a.getType())) return std::nullopt;
  // m's one use over the row; its others are per row (after the pass).
  mlir::Operation *user = nullptr;
  const mlir::Type perRow = max.getOutput().getType();
  for (mlir::Operation *u : max.getOutput().getUsers()) {
    if (!inKernel(u) || u == user) continue;
    // A per-row use: a result of the row value's shape (tir.dim's index
    // result is not a tensor and is a use over the row).
    if (u->getNumResults() == 1) {
      auto shaped = u->getResult(0).getType().dyn_cast<mlir::ShapedType>();
      if (shaped && shaped.hasRank() && shaped.getShape() == perRow.cast<mlir::ShapedType>().getShape()) continue;
    }
    if (user) return std::nullopt;
    user = u;
  }
  mlir::Value m = max.getOutput();
  auto broadcast = llvm::dyn_cast_or_null<BroadcastOp>(user);
  if (broadcast) {
    m = broadcast.getOutput();
    user = OnlyUser(m, inKernel);
  }
  auto sub = llvm::dyn_cast_or_null<SubOp>(user);
  if (!sub || sub.getLhs() != a || sub.getRhs() != m || !OnlineFloat(sub.getOutput().getType(), a.getType())) {
    return std::nullopt;
  }
  auto exp = llvm::dyn_cast_or_null<ExpOp>(OnlyUser(sub.getOutput(), inKernel));
  if (!exp || !OnlineFloat(exp.getOutput().getType(), a.getType())) return std::nullopt;
  auto sum = llvm::dyn_cast_or_null<ReduceOp>(OnlyUser(exp.getOutput(), inKernel));
  if (!sum || sum.getInput() != exp.getOutput() || sum.getReductionMode() != ReductionMode::add) return std::nullopt;
  llvm::SmallVector<int32_t> d1(max.getDimensions()), d2(sum.getDimensions());
  llvm::sort(d1);
  llvm::sort(d2);
  if (d1 != d2) return std::nullopt;
  if (sum.getOutput().getType() != max.getOutput().getType()) return std::nullopt;
  return OnlineSoftmax{max, broadcast, sub, exp, sum};
}

}  // namespace tir
