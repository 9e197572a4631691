#include "client/plan_command.h"

#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/planning/Plan.h"
#include "compiler/support/status.h"
#include "google/protobuf/util/json_util.h"

namespace tir::client {

absl::StatusOr<std::string> PlanCommand(const std::string &text, const std::string &arch, bool json) {
  TIR_ASSIGN_OR_RETURN(target::ArchInfo info, target::LookupArch(arch));
  auto context = makeTirContext();
  tir::v1::GraphSource source;
  source.set_mlir_text(text);
  TIR_ASSIGN_OR_RETURN(LoadedGraph loaded, LoadGraphSource(source, context.get()));
  planning::AnalyticCostModel model;
  TIR_ASSIGN_OR_RETURN(planning::PlannedGraph planned, planning::PlanGraph(loaded.graph, info, model));
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

}  // namespace tir::client
