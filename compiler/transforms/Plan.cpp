//===- Plan.cpp - the tir-plan pass ---------------------------------------===//
//
// Runs the planner (compiler/planning/Plan.h) on every graph that is not a
// kernel or stitching graph and reports the plan as a remark.

#include "compiler/ir/TirDialect.h"
#include "compiler/planning/Plan.h"
#include "compiler/transforms/Passes.h"
#include "mlir/IR/BuiltinOps.h"

namespace tir {
#define GEN_PASS_DEF_PLAN
#include "compiler/transforms/Passes.h.inc"
}  // namespace tir

namespace tir {
namespace {

class PlanPass : public impl::PlanBase<PlanPass> {
 public:
  using PlanBase::PlanBase;

  void runOnOperation() override {
    absl::StatusOr<target::ArchInfo> info = target::LookupArch(arch);
    if (!info.ok()) {
      getOperation().emitError() << info.status().message();
      return signalPassFailure();
    }
    planning::AnalyticCostModel model;
    for (GraphOp g : getOperation().getOps<GraphOp>()) {
      if (g->hasAttr("tir.kernel_kind") || !g.getBodyBlock().getOps<LaunchOp>().empty()) continue;
      absl::StatusOr<planning::PlannedGraph> planned = planning::PlanGraph(g, *info, model, top);
      if (!planned.ok()) {
        g.emitError() << planned.status().message();
        return signalPassFailure();
      }
      mlir::emitRemark(g.getLoc()) << planning::PlanToText(planned->plan);
    }
    markAllAnalysesPreserved();
  }
};

}  // namespace
}  // namespace tir
