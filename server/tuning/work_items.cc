#include "server/tuning/work_items.h"

#include "absl/strings/str_cat.h"
#include "compiler/codegen/Emitter.h"
#include "compiler/support/status.h"
#include "llvm/Support/raw_ostream.h"

namespace tir::tuning {

absl::StatusOr<std::vector<KernelWork>> BuildWorkItems(GraphOp graph, const target::ArchInfo &arch,
                                                       size_t per_kernel, const tir::v1::MeasurementPolicy &policy) {
  planning::AnalyticCostModel model;
  TIR_ASSIGN_OR_RETURN(planning::PlannedGraph planned, planning::PlanGraph(graph, arch, model, 1));
  mlir::OwningOpRef<mlir::ModuleOp> module = planning::BuildPartitionedModule(graph, planned.partition);
  const std::string name = graph.getSymName().str();
  std::vector<KernelWork> out;
  for (size_t k = 0; k < planned.partition.kernels.size(); ++k) {
    GraphOp kernel;
    for (GraphOp g : module->getOps<GraphOp>()) {
      if (g.getSymName() == absl::StrCat(name, "_k", k)) kernel = g;
    }
    if (!kernel) return MakeError(absl::StatusCode::kInternal, "INTERNAL", absl::StrCat("kernel ", k, " missing"));
    KernelWork work;
    tir::v1::WorkItem &item = work.item;
    llvm::raw_string_ostream os(*item.mutable_kernel_mlir());
    kernel->print(os);
    os.flush();
    item.set_arch(arch.name);
    *item.mutable_policy() = policy;
    const auto &space = planned.spaces[k].kept;
    for (size_t i = 0; i < space.size(); ++i) {
      if (i < per_kernel || space[i].is_default) work.ranks.push_back(i);
    }
    work.space_size = space.size();
    work.kind = planning::KernelKindName(planned.partition.kernels[k].space.kind);
    for (size_t i : work.ranks) {
      const planning::TileCandidate &c = space[i];
      if (c.is_default) work.default_position = item.candidates_size();
      TIR_ASSIGN_OR_RETURN(codegen::EmittedKernel emitted, codegen::EmitKernel(kernel, c.params));
      tir::v1::CandidateWork *cw = item.add_candidates();
      cw->set_candidate_index(static_cast<uint32_t>(i));
      *cw->mutable_candidate() =
          planning::CandidateToProto(c, planned.predictions[k][i], planned.partition.kernels[k].space.kind, i);
      cw->set_source(emitted.source);
      cw->set_entry_symbol(emitted.entry);
      *cw->mutable_launch() = emitted.launch;
    }
    out.push_back(std::move(work));
  }
  return out;
}

}  // namespace tir::tuning
