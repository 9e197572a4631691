//===- Emitter.cpp - CUDA C++ for one kernel and one candidate ------------===//

#include "compiler/codegen/Emitter.h"

#include "compiler/codegen/KernelEmitter.h"
#include "compiler/support/status.h"

namespace tir::codegen {

const std::string &RuntimeHeader() { return RuntimeHeaders()[0].second; }

const std::vector<std::pair<std::string, std::string>> &RuntimeHeaders() {
  static const auto *headers = new std::vector<std::pair<std::string, std::string>>{
      {"tir_runtime.h",
#include "compiler/codegen/runtime_header.inc"
      },
      {"tir_tiles.h",
#include "compiler/codegen/tiles_header.inc"
      },
      {"tir_lanes.h",
#include "compiler/codegen/lanes_header.inc"
      },
  };
  return *headers;
}

namespace {
absl::Status CheckKernelGraph(GraphOp kernel) {
  auto kind = kernel->getAttrOfType<mlir::StringAttr>("tir.kernel_kind");
  if (!kernel->getAttrOfType<mlir::DenseI64ArrayAttr>("tir.iteration_domain") || !kind ||
      (kind.getValue() != "pointwise" && kind.getValue() != "reduction" && kind.getValue() != "matmul")) {
    return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_GRAPH",
                     "not a kernel graph: tir.kernel_kind and tir.iteration_domain come from tir-partition");
  }
  return absl::OkStatus();
}
}  // namespace

absl::StatusOr<EmittedKernel> EmitKernel(GraphOp kernel, const std::map<std::string, int64_t> &params) {
  TIR_RETURN_IF_ERROR(CheckKernelGraph(kernel));
  return detail::KernelEmitter(kernel, params).Run();
}

absl::StatusOr<std::vector<std::string>> ArgumentFieldNames(GraphOp kernel) {
  TIR_RETURN_IF_ERROR(CheckKernelGraph(kernel));
  return detail::KernelEmitter(kernel, {}).FieldNames();
}

}  // namespace tir::codegen
