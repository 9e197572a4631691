#include "compiler/codegen/testing/PlannedKernel.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "compiler/codegen/Emitter.h"
#include "compiler/ir/Registration.h"
#include "compiler/planning/Plan.h"
#include "compiler/support/status.h"
#include "compiler/target/ArchTable.h"
#include "gtest/gtest.h"

namespace tir::codegen::lanetest {

std::unique_ptr<PlannedKernel> PlanOneKernel(const char *text, const std::string &arch) {
  auto p = std::make_unique<PlannedKernel>();
  p->ctx = makeTirContext();
  auto loaded = LoadGraphText(text, p->ctx.get());
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  if (!loaded.ok()) return nullptr;
  p->loaded.emplace(std::move(*loaded));
  auto info = target::LookupArch(arch);
  EXPECT_TRUE(info.ok()) << info.status();
  if (!info.ok()) return nullptr;
  planning::AnalyticCostModel model;
  auto planned = planning::PlanGraph(p->loaded->graph, *info, model, 1);
  EXPECT_TRUE(planned.ok()) << planned.status();
  if (!planned.ok()) return nullptr;
  EXPECT_EQ(planned->partition.kernels.size(), 1u);
  p->module = planning::BuildPartitionedModule(p->loaded->graph, planned->partition);
  for (GraphOp g : p->module->getOps<GraphOp>()) {
    if (g.getSymName() == p->loaded->graph.getSymName().str() + "_k0") p->kernel = g;
  }
  EXPECT_TRUE(p->kernel) << "no kernel _k0";
  if (!p->kernel) return nullptr;
  p->space = planned->spaces[0].kept;
  p->inputs = reference::SampleInputs(p->kernel, 1, 7);
  auto want = reference::Evaluate(p->kernel, p->inputs);
  EXPECT_TRUE(want.ok()) << want.status();
  if (!want.ok()) return nullptr;
  p->want = *want;
  return p;
}

absl::StatusOr<double> RunLanes(const PlannedKernel &p, const std::map<std::string, int64_t> &params,
                                const std::string &work_dir, const LaneRun &run) {
  TIR_ASSIGN_OR_RETURN(EmittedKernel emitted, EmitKernel(p.kernel, params));
  if (run.edit) emitted.source = run.edit(emitted.source);
  if (run.blocks > 0) emitted.launch.mutable_grid(0)->set_max(run.blocks);
  HostBuildOptions lanes;
  lanes.form = HostForm::kLanes;
  TIR_ASSIGN_OR_RETURN(std::unique_ptr<HostKernel> built, BuildHostKernel(emitted, work_dir, lanes));
  TIR_ASSIGN_OR_RETURN(std::unique_ptr<HostLaunch> launch,
                       HostLaunch::Prepare(p.kernel, emitted.field_names, emitted.launch, p.inputs));
  if (run.schedules) launch->SetSchedules(*run.schedules);
  launch->Poison(0);
  TIR_RETURN_IF_ERROR(launch->Run(*built, 0));
  const std::vector<reference::Tensor> got = launch->Outputs(0);
  if (got.size() != p.want.size()) {
    return absl::InternalError(absl::StrCat(got.size(), " outputs read back, the reference has ", p.want.size()));
  }
  double worst = 0;
  for (size_t o = 0; o < p.want.size(); ++o) {
    const double err = reference::RelativeL2Error(got[o], p.want[o]);
    worst = std::max(worst, std::isnan(err) ? 1e30 : err);
  }
  return worst;
}

std::string ParamsText(const std::map<std::string, int64_t> &params) {
  std::string s;
  for (const auto &[k, v] : params) absl::StrAppend(&s, s.empty() ? "" : " ", k, "=", v);
  return s;
}

std::string TestWorkDir(const std::string &name) {
  const char *tmp = std::getenv("TEST_TMPDIR");
  return std::string(tmp != nullptr ? tmp : "/tmp") + "/" + name;
}

}  // namespace tir::codegen::lanetest
