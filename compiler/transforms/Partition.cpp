//===- Partition.cpp - the tir-partition pass -----------------------------===//
//
// 1. For each graph that is not already partitioned (holds no launch), run the
//    partitioner (compiler/planning/Partition.h) for the target arch.
// 2. Replace the graph by its kernel graphs and stitching graph, keeping the
//    graph's position in the module.
// 3. Emit a remark per split with its reason, so --mlir-print-... shows why.

#include "compiler/ir/TirDialect.h"
#include "compiler/planning/Partition.h"
#include "compiler/transforms/Passes.h"
#include "mlir/IR/BuiltinOps.h"

namespace tir {
#define GEN_PASS_DEF_PARTITION
#include "compiler/transforms/Passes.h.inc"
}  // namespace tir

namespace tir {
namespace {

class PartitionPass : public impl::PartitionBase<PartitionPass> {
 public:
  using PartitionBase::PartitionBase;

  void runOnOperation() override {
    absl::StatusOr<target::ArchInfo> archInfo = target::LookupArch(arch);
    if (!archInfo.ok()) {
      getOperation().emitError() << archInfo.status().message();
      return signalPassFailure();
    }
    llvm::SmallVector<GraphOp> graphs;
    for (GraphOp g : getOperation().getOps<GraphOp>()) {
      if (g.getBodyBlock().getOps<LaunchOp>().empty() && !g->hasAttr("tir.kernel_kind")) graphs.push_back(g);
    }
    for (GraphOp graph : graphs) {
      absl::StatusOr<planning::Partition> partition = planning::PartitionGraph(graph, *archInfo);
      if (!partition.ok()) {
        graph.emitError() << partition.status().message();
        return signalPassFailure();
      }
      for (const std::string &split : partition->splits) mlir::emitRemark(graph.getLoc()) << split;
      mlir::OwningOpRef<mlir::ModuleOp> parts = planning::BuildPartitionedModule(graph, *partition);
      mlir::Block *body = parts->getBody();
      while (!body->empty()) body->front().moveBefore(graph);
      graph.erase();
    }
  }
};

}  // namespace
}  // namespace tir
