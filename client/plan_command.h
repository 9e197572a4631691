// `tirctl plan FILE --arch ARCH [-o json]`: partitions a graph and ranks each
// kernel's tile candidates, without compiling anything.

#ifndef TIR_CLIENT_PLAN_COMMAND_H_
#define TIR_CLIENT_PLAN_COMMAND_H_

#include <string>

#include "absl/status/statusor.h"

namespace tir::client {

// The plan of the graph in `text` (tir's or TensorIR's form) for `arch`, as
// text or JSON. Errors carry a reason (INVALID_GRAPH, UNKNOWN_ARCH, ...).
struct PlanOptions {
  std::string arch = "sm_90a";
  bool json = false;
  // A store whose trials calibrate the cost model (see
  // compiler/planning/Calibration.h), read beside the local service that
  // may hold it; "" = the analytic model alone.
  std::string store_dir;
  // CompileOptions.precision: "" / "ieee", or "tf32".
  std::string precision;
};
absl::StatusOr<std::string> PlanCommand(const std::string &text, const PlanOptions &options);
absl::StatusOr<std::string> PlanCommand(const std::string &text, const std::string &arch, bool json);

}  // namespace tir::client

#endif  // TIR_CLIENT_PLAN_COMMAND_H_
