#include "worker/runner/prepared_item.h"

#include <map>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "compiler/codegen/Emitter.h"
#include "compiler/codegen/LaunchContract.h"
#include "compiler/ir/Registration.h"
#include "compiler/reference/Interpreter.h"
#include "compiler/support/status.h"

namespace tir::runner {
namespace {

absl::Status InvalidWork(const std::string &m) {
  return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_WORK", m);
}

}  // namespace

absl::StatusOr<std::unique_ptr<PreparedItem>> PrepareItem(const tir::v1::WorkItem &item) {
  auto p = std::make_unique<PreparedItem>();
  p->item = item;
  p->context = makeTirContext();
  if (item.kernel_mlir().empty()) return InvalidWork("the work item has no kernel graph");
  TIR_ASSIGN_OR_RETURN(p->loaded, LoadGraphText(item.kernel_mlir(), p->context.get(), "kernel.mlir"));
  GraphOp kernel = p->loaded.graph;
  // The Hopper matmul form adds tensor maps: every candidate of an item is
  // of one form (the planner offers wgmma candidates alone on sm_90a).
  std::map<std::string, int64_t> form;
  for (const tir::v1::CandidateWork &c : item.candidates()) {
    const bool wgmma = c.candidate().params().count("wgmma") > 0 && c.candidate().params().at("wgmma") != 0;
    if (&c == &item.candidates(0)) {
      if (wgmma) form["wgmma"] = 1;
    } else if (wgmma != (form.count("wgmma") > 0)) {
      return InvalidWork("the work item mixes wgmma and other matmul candidates (their arguments differ)");
    }
  }
  TIR_ASSIGN_OR_RETURN(p->field_names, codegen::ArgumentFieldNames(kernel, form));
  const uint64_t seed = item.policy().seed() ? item.policy().seed() : 1;
  TIR_RETURN_IF_ERROR(reference::CheckVerificationFits(kernel, 1));
  p->inputs = reference::SampleInputs(kernel, 1, seed);
  std::vector<bool> hinted(p->inputs.size(), false);
  for (const tir::v1::ShapeHint &h : item.shapes()) {
    if (h.input() >= p->inputs.size() || p->inputs[h.input()].scalar) {
      return InvalidWork(absl::StrCat("shape hint for input ", h.input(), " which is not a tensor input"));
    }
    std::vector<int64_t> shape(h.shape().begin(), h.shape().end());
    for (int64_t d : shape) {
      if (d < 0 || d > (int64_t{1} << 32)) return InvalidWork(absl::StrCat("shape hint extent ", d, " is out of range"));
    }
    p->inputs[h.input()] = reference::RandomTensor(p->inputs[h.input()].dtype, shape, seed + h.input());
    hinted[h.input()] = true;
  }
  mlir::Block &block = kernel.getBodyBlock();
  for (mlir::BlockArgument arg : block.getArguments()) {
    auto type = arg.getType().dyn_cast<mlir::RankedTensorType>();
    if (type && !type.hasStaticShape() && !hinted[arg.getArgNumber()]) {
      return InvalidWork(absl::StrCat("input ", arg.getArgNumber(), " has dynamic dims and no shape hint"));
    }
  }
  TIR_ASSIGN_OR_RETURN(p->expected, reference::Evaluate(kernel, p->inputs));
  p->expected = codegen::AsStoredOutputs(kernel, std::move(p->expected));  // a stride-0 output dim stores index 0 only
  return p;
}

absl::StatusOr<const tir::v1::CandidateWork *> CandidateAt(const PreparedItem *prepared, uint32_t position) {
  if (prepared == nullptr) return MakeError(absl::StatusCode::kFailedPrecondition, "NO_ITEM", "no work item is prepared");
  if (position >= static_cast<uint32_t>(prepared->item.candidates_size())) {
    return InvalidWork(absl::StrCat("no candidate ", position));
  }
  return &prepared->item.candidates(position);
}

TimedRuns TimedRunsOf(const tir::v1::MeasurementPolicy &policy, int default_min_runs) {
  TimedRuns t;
  t.min_runs = policy.min_runs() ? static_cast<int>(policy.min_runs()) : default_min_runs;
  t.budget_seconds = policy.has_time_budget() ? policy.time_budget().seconds() + policy.time_budget().nanos() * 1e-9 : 0.05;
  return t;
}

tir::v1::Verification Verify(const std::vector<reference::Tensor> &got, const std::vector<reference::Tensor> &want,
                             int64_t reduction_length, bool tf32_operands) {
  tir::v1::Verification v;
  v.set_verdict(tir::v1::VERDICT_PASSED);
  if (got.size() != want.size()) {
    v.set_verdict(tir::v1::VERDICT_WRONG);
    v.set_relative_l2_error(INFINITY);
    v.set_detail(absl::StrCat(got.size(), " outputs, the reference has ", want.size()));
    return v;
  }
  double worst = 0, tolerance = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double err = reference::RelativeL2Error(got[i], want[i]);
    const double bound = reference::RelativeL2Bound(want[i].dtype, reduction_length, tf32_operands);
    if (i == 0 || err > worst || std::isnan(err)) {
      worst = std::isnan(err) ? INFINITY : err;
      tolerance = bound;
    }
    if (!(err <= bound)) {
      v.set_verdict(tir::v1::VERDICT_WRONG);
      absl::StrAppendFormat(v.mutable_detail(), "%soutput %d: relative L2 error %.3g over the bound %.3g",
                            v.detail().empty() ? "" : "; ", i, err, bound);
    }
  }
  v.set_relative_l2_error(worst);
  v.set_tolerance(tolerance);
  return v;
}

}  // namespace tir::runner
