// What the lane-by-lane tests of the sm_90a matmul share: a graph planned
// to its one kernel (its space, sampled inputs and reference outputs), and
// a candidate emitted, optionally edited (a planted fault), built in the
// emulated form and run against the reference.

#ifndef TIR_COMPILER_CODEGEN_TESTING_PLANNEDKERNEL_H_
#define TIR_COMPILER_CODEGEN_TESTING_PLANNEDKERNEL_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/codegen/HostBuild.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/TirDialect.h"
#include "compiler/planning/Candidates.h"
#include "compiler/reference/Interpreter.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

namespace tir::codegen::lanetest {

// One planned graph: its only kernel, its space for `arch`, inputs (seed 7)
// and the reference's outputs.
struct PlannedKernel {
  std::unique_ptr<mlir::MLIRContext> ctx;
  std::optional<LoadedGraph> loaded;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  GraphOp kernel;
  std::vector<planning::TileCandidate> space;
  std::vector<reference::Tensor> inputs, want;
};

// Plans `text` (a graph of one kernel) for `arch`; nullptr after a gtest
// failure that says why.
std::unique_ptr<PlannedKernel> PlanOneKernel(const char *text, const std::string &arch = "sm_90a");

struct LaneRun {
  std::function<std::string(std::string)> edit;  // applied to the emitted source
  int blocks = 0;                                  // > 0: the persistent grid's cap
  std::optional<LaneSchedules> schedules;          // else the launcher's default
};

// Emits `params`, builds the emulated form under `work_dir` and runs it: the
// worst relative L2 error over the outputs (NaN counts as 1e30), or the
// emulator's (or the build's) error.
absl::StatusOr<double> RunLanes(const PlannedKernel &p, const std::map<std::string, int64_t> &params,
                                const std::string &work_dir, const LaneRun &run = {});

// "k=v k=v", for traces.
std::string ParamsText(const std::map<std::string, int64_t> &params);

// $TEST_TMPDIR/<name> (or /tmp/<name>).
std::string TestWorkDir(const std::string &name);

}  // namespace tir::codegen::lanetest

#endif  // TIR_COMPILER_CODEGEN_TESTING_PLANNEDKERNEL_H_
