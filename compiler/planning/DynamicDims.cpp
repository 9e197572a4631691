//===- DynamicDims.cpp - sizes the whole graph knows, made explicit -------===//
//
// See DynamicDims.h for the algorithm.

#include "compiler/planning/DynamicDims.h"

#include <map>
#include <optional>
#include <utility>

#include "compiler/reference/ShapeSolver.h"
#include "mlir/IR/Builders.h"

namespace tir::planning {
namespace {

// The dynamic_dims operands of the ops that take them, and whether `op`
// leaves a dynamic extent of its result open: what its operands say does
// not give every one.
std::optional<mlir::MutableOperandRange> OpenDynamicDims(mlir::Operation *op) {
  auto type = op->getNumResults() == 1 ? op->getResult(0).getType().dyn_cast<mlir::RankedTensorType>()
                                       : mlir::RankedTensorType();
  if (!type || type.hasStaticShape()) return std::nullopt;
  if (auto b = llvm::dyn_cast<BroadcastOp>(op)) {
    if (!b.getDynamicDims().empty()) return std::nullopt;
    auto in = b.getInput().getType().cast<mlir::RankedTensorType>();
    for (int64_t d = 0; d < type.getRank(); ++d) {
      // A `?` from a static 1; a `?` input dim is the result's.
      if (type.isDynamicDim(d) && !in.isDynamicDim(d) && in.getDimSize(d) == 1) return b.getDynamicDimsMutable();
    }
    return std::nullopt;
  }
  if (auto s = llvm::dyn_cast<SplatOp>(op)) {
    if (s.getDynamicDims().empty()) return s.getDynamicDimsMutable();
    return std::nullopt;
  }
  if (auto i = llvm::dyn_cast<IotaOp>(op)) {
    if (i.getDynamicDims().empty()) return i.getDynamicDimsMutable();
    return std::nullopt;
  }
  if (auto r = llvm::dyn_cast<ReshapeOp>(op)) {
    // One `?` is the element count over the static extents.
    if (r.getDynamicDims().empty() && type.getNumDynamicDims() > 1) return r.getDynamicDimsMutable();
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

int MaterializeDynamicDims(GraphOp graph) {
  mlir::Block &block = graph.getBodyBlock();
  std::vector<mlir::Operation *> open;
  for (mlir::Operation &op : block.without_terminator()) {
    if (OpenDynamicDims(&op)) open.push_back(&op);
  }
  if (open.empty()) return 0;
  const auto sources = reference::ExtentSources(graph);
  mlir::OpBuilder b = mlir::OpBuilder::atBlockBegin(&block);
  std::map<std::pair<unsigned, int64_t>, mlir::Value> dims;  // (argument, dim) -> its `dim`
  auto size = [&](const reference::ExtentSource &s) -> mlir::Value {
    mlir::BlockArgument arg = block.getArgument(s.argument);
    if (s.dim < 0) return arg;  // an index argument
    mlir::Value &v = dims[{s.argument, s.dim}];
    if (!v) v = b.create<DimOp>(graph.getLoc(), b.getIndexType(), arg, b.getI64IntegerAttr(s.dim));
    return v;
  };
  int changed = 0;
  for (mlir::Operation *op : open) {
    mlir::Value result = op->getResult(0);
    auto type = result.getType().cast<mlir::RankedTensorType>();
    auto it = sources.find(result);
    if (it == sources.end()) continue;
    std::vector<reference::ExtentSource> from;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (!type.isDynamicDim(d)) continue;
      if (d >= static_cast<int64_t>(it->second.size()) || !it->second[d]) break;
      from.push_back(*it->second[d]);
    }
    if (static_cast<int64_t>(from.size()) != type.getNumDynamicDims()) continue;  // an extent no argument gives
    llvm::SmallVector<mlir::Value> operands;
    for (const reference::ExtentSource &s : from) operands.push_back(size(s));
    OpenDynamicDims(op)->assign(operands);
    ++changed;
  }
  return changed;
}

}  // namespace tir::planning
