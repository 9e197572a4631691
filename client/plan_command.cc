#include "client/plan_command.h"

#include "absl/strings/str_cat.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/planning/Plan.h"
#include "compiler/support/status.h"
#include "google/protobuf/util/json_util.h"

namespace tir::client {

namespace {

absl::StatusOr<std::string> PlanOne(GraphOp graph, const target::ArchInfo &info, bool json) {
  if (graph.getNumResults() == 0 && !json) {
    // Valid IR (TensorIR accepts it), but a compile of it is refused.
    return absl::StrCat("@", graph.getSymName().str(), " for ", info.name,
                        ": 0 kernels; the graph has no outputs, so there is nothing to compute\n");
  }
  planning::AnalyticCostModel model;
  TIR_ASSIGN_OR_RETURN(planning::PlannedGraph planned, planning::PlanGraph(graph, info, model));
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
  TIR_ASSIGN_OR_RETURN(target::ArchInfo info, target::LookupArch(arch));
  auto context = makeTirContext();
  TIR_ASSIGN_OR_RETURN(LoadedGraphs loaded, LoadGraphsText(text, context.get()));
  if (loaded.graphs.size() == 1) return PlanOne(loaded.graphs[0], info, json);
  // Several graphs: each is planned on its own (a JSON list of plans).
  std::string out = json ? "[\n" : "";
  for (size_t i = 0; i < loaded.graphs.size(); ++i) {
    TIR_ASSIGN_OR_RETURN(std::string one, PlanOne(loaded.graphs[i], info, json));
    absl::StrAppend(&out, json && i ? ",\n" : "", one, !json && i + 1 < loaded.graphs.size() ? "\n" : "");
  }
  return json ? out + "]\n" : out;
}

}  // namespace tir::client
