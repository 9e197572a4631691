#include "client/plan_command.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/planning/Calibration.h"
#include "compiler/planning/Plan.h"
#include "compiler/support/status.h"
#include "google/protobuf/util/json_util.h"
#include "server/store/rocksdb_kernel_store.h"
#include "server/tuning/trial_points.h"

namespace tir::client {

namespace {

absl::StatusOr<std::string> PlanOne(GraphOp graph, const target::ArchInfo &info, bool json,
                                    const planning::CostModel &model, const planning::PlanOptions &plan) {
  if (graph.getNumResults() == 0 && !json) {
    // Valid IR (TensorIR accepts it), but a compile of it is refused.
    return absl::StrCat("@", graph.getSymName().str(), " for ", info.name,
                        ": 0 kernels; the graph has no outputs, so there is nothing to compute\n");
  }
  TIR_ASSIGN_OR_RETURN(planning::PlannedGraph planned, planning::PlanGraph(graph, info, model, 5, plan));
  if (!json) return planning::PlanToText(planned.plan);
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  if (!google::protobuf::util::MessageToJsonString(planned.plan, &out, options).ok()) {
    return MakeError(absl::StatusCode::kInternal, "INTERNAL", "could not render the plan as JSON");
  }
  return out;
}

}  // namespace

absl::StatusOr<std::string> PlanCommand(const std::string &text, const std::string &arch, bool json) {
  PlanOptions o;
  o.arch = arch;
  o.json = json;
  return PlanCommand(text, o);
}

absl::StatusOr<std::string> PlanCommand(const std::string &text, const PlanOptions &options) {
  TIR_ASSIGN_OR_RETURN(target::ArchInfo info, target::LookupArch(options.arch));
  const bool json = options.json;
  auto context = makeTirContext();
  TIR_ASSIGN_OR_RETURN(LoadedGraphs loaded, LoadGraphsText(text, context.get()));
  TIR_RETURN_IF_ERROR(planning::CheckPrecision(options.precision));
  const planning::PlanOptions plan{options.precision};
  planning::AnalyticCostModel analytic;
  planning::Calibration calibration;
  std::string header;
  if (!options.store_dir.empty()) {
    if (!std::filesystem::exists(options.store_dir)) {
      header = absl::StrCat("cost model calibration: no store at ", options.store_dir,
                            " (nothing measured here yet): the analytic model alone\n");
    } else {
      absl::StatusOr<std::unique_ptr<store::RocksDbKernelStore>> db = store::RocksDbKernelStore::OpenReadOnly(options.store_dir);
      if (!db.ok()) {
        header = absl::StrCat("cost model calibration: the store at ", options.store_dir, " cannot be read (",
                              db.status().message(), "): the analytic model alone\n");
      } else {
        const ledger::Ledger trials(std::shared_ptr<store::KernelStore>(*std::move(db)), nullptr);
        TIR_ASSIGN_OR_RETURN(std::vector<planning::TrialPoint> points, tuning::LoadTrialPoints(trials));
        calibration = planning::Calibration::Fit(std::move(points));
        header = calibration.ToText();
      }
    }
  }
  planning::CalibratedCostModel calibrated(analytic, calibration);
  const planning::CostModel &model = calibration.empty() ? static_cast<const planning::CostModel &>(analytic) : calibrated;
  if (loaded.graphs.size() == 1) {
    TIR_ASSIGN_OR_RETURN(std::string one, PlanOne(loaded.graphs[0], info, json, model, plan));
    return json ? one : header + one;
  }
  // Several graphs: each is planned on its own (a JSON list of plans).
  std::string out = json ? "[\n" : header;
  for (size_t i = 0; i < loaded.graphs.size(); ++i) {
    TIR_ASSIGN_OR_RETURN(std::string one, PlanOne(loaded.graphs[i], info, json, model, plan));
    absl::StrAppend(&out, json && i ? ",\n" : "", one, !json && i + 1 < loaded.graphs.size() ? "\n" : "");
  }
  return json ? out + "]\n" : out;
}

}  // namespace tir::client
