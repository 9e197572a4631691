//===- Emitter.cpp - CUDA C++ for one kernel and one candidate ------------===//

#include "compiler/codegen/Emitter.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

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

absl::StatusOr<std::vector<std::string>> ArgumentFieldNames(GraphOp kernel, const std::map<std::string, int64_t> &params) {
  TIR_RETURN_IF_ERROR(CheckKernelGraph(kernel));
  return detail::KernelEmitter(kernel, params).FieldNames();
}

bool ParseTensorMapField(const std::string &name, int *index, uint32_t *box0, uint32_t *box1, bool *output) {
  if (name.rfind("tmap", 0) != 0) return false;
  const bool out = name.rfind("tmapout", 0) == 0;
  const size_t from = out ? 7 : 4;
  const size_t us = name.find('_'), x = name.find('x', us == std::string::npos ? 0 : us);
  if (us == std::string::npos || x == std::string::npos || us < from) return false;
  if (output != nullptr) *output = out;
  return absl::SimpleAtoi(name.substr(from, us - from), index) && absl::SimpleAtoi(name.substr(us + 1, x - us - 1), box0) &&
         absl::SimpleAtoi(name.substr(x + 1), box1);
}

std::string TensorMapFieldName(int input, int64_t box0, int64_t box1) {
  return absl::StrCat("tmap", input, "_", box0, "x", box1);
}

std::string OutputTensorMapFieldName(int output, int64_t box0, int64_t box1) {
  return absl::StrCat("tmapout", output, "_", box0, "x", box1);
}

}  // namespace tir::codegen
