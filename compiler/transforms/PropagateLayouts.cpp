//===- PropagateLayouts.cpp - the tir-propagate-layouts pass --------------===//
//
// Runs ComputeAccessMaps (compiler/planning/AccessMaps.h) on every kernel
// graph of the module, which annotates it; the algorithm and the conflict
// rule are described there and in Passes.td.

#include "compiler/ir/TirDialect.h"
#include "compiler/planning/AccessMaps.h"
#include "compiler/transforms/Passes.h"
#include "mlir/IR/BuiltinOps.h"

namespace tir {
#define GEN_PASS_DEF_PROPAGATELAYOUTS
#include "compiler/transforms/Passes.h.inc"
}  // namespace tir

namespace tir {
namespace {

class PropagateLayoutsPass : public impl::PropagateLayoutsBase<PropagateLayoutsPass> {
  void runOnOperation() override {
    for (GraphOp g : getOperation().getOps<GraphOp>()) {
      if (!g->hasAttr("tir.kernel_kind") || !g->hasAttr("tir.iteration_domain")) continue;
      if (mlir::failed(planning::ComputeAccessMaps(g))) return signalPassFailure();
    }
  }
};

}  // namespace
}  // namespace tir
