// The argument layout: tir_args fields (pointers, extents, sizes and strides) and candidate parameters.

#include "compiler/codegen/KernelEmitter.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"

namespace tir::codegen::detail {

// The names of tir_args' fields, in order (what Run's DeclareArgs gives).
absl::StatusOr<std::vector<std::string>> KernelEmitter::FieldNames() {
  rank_ = kernel_->getAttrOfType<mlir::DenseI64ArrayAttr>("tir.iteration_domain").size();
  mlir::FailureOr<planning::AccessMaps> maps = planning::ComputeAccessMaps(kernel_);
  if (mlir::failed(maps)) {
    return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_GRAPH", "access maps could not be computed");
  }
  maps_ = *maps;
  TIR_RETURN_IF_ERROR(DeclareArgs());
  return field_names_;
}

int64_t KernelEmitter::Param(const char *name, int64_t fallback) const {
  auto it = params_.find(name);
  return it == params_.end() ? fallback : it->second;
}

void KernelEmitter::Field(const std::string &decl, const std::string &name) {
  fields_.push_back(decl);
  field_names_.push_back(name);
}

absl::Status KernelEmitter::DeclareArgs() {
  mlir::Block &block = kernel_.getBodyBlock();
  for (mlir::BlockArgument arg : block.getArguments()) {
    TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(arg.getType()));
    const std::string name = absl::StrCat("in", arg.getArgNumber());
    if (arg.getType().isa<mlir::RankedTensorType>()) {
      Field(absl::StrCat("const ", t.storage, " *", name), name);
    } else {
      Field(absl::StrCat(t.storage, " ", name), name);
    }
  }
  auto results = llvm::cast<ResultsOp>(block.getTerminator());
  for (auto [i, v] : llvm::enumerate(results.getValues())) {
    // A scalar result is one element behind its pointer.
    TIR_ASSIGN_OR_RETURN(TypeInfo t, Info(v.getType()));
    Field(absl::StrCat(t.storage, " *out", i), absl::StrCat("out", i));
  }
  // Two-phase reductions and split-K matmuls keep partials and tickets in a
  // workspace.
  const llvm::StringRef kind = kernel_->getAttrOfType<mlir::StringAttr>("tir.kernel_kind").getValue();
  if (kind == "reduction" || (kind == "matmul" && Param("split_k", 1) > 1)) {
    Field("tir_u8 *workspace", "workspace");
  }
  // (One entry at least: a rank-0 domain still passes an array.)
  Field(absl::StrCat("tir_i64 dim[", std::max(1, rank_), "]"), "dim");
  for (mlir::BlockArgument arg : block.getArguments()) {
    if (auto r = arg.getType().dyn_cast<mlir::RankedTensorType>()) {
      Field(absl::StrCat("tir_i64 in", arg.getArgNumber(), "_size[", std::max<int64_t>(1, r.getRank()), "]"),
            absl::StrCat("in", arg.getArgNumber(), "_size"));
      Field(absl::StrCat("tir_i64 in", arg.getArgNumber(), "_stride[", std::max<int64_t>(1, r.getRank()), "]"),
            absl::StrCat("in", arg.getArgNumber(), "_stride"));
    }
  }
  for (auto [i, v] : llvm::enumerate(results.getValues())) {
    auto r = v.getType().dyn_cast<mlir::RankedTensorType>();
    Field(absl::StrCat("tir_i64 out", i, "_stride[", std::max<int64_t>(1, r ? r.getRank() : 1), "]"),
          absl::StrCat("out", i, "_stride"));
  }
  // The Hopper matmul form loads A and B by TMA: a tensor map each, encoded
  // by the launcher, with the boxes HopperBoxes gives; with a cluster the
  // shared operand's map has the half box each CTA multicasts.
  if (kernel_->getAttrOfType<mlir::StringAttr>("tir.kernel_kind").getValue() == "matmul" && Param("wgmma", 0)) {
    MatmulOp mm;
    for (mlir::Operation &op : block.without_terminator()) {
      if (auto m = llvm::dyn_cast<MatmulOp>(op)) mm = m;
    }
    const HopperOperands h = mm ? HopperPlan(mm) : HopperOperands{};
    if (h.tma) {
      const HopperBoxes boxes = HopperBoxesOf(h);
      std::vector<std::string> names;
      const bool clustered = boxes.shared_arg >= 0, shareB = boxes.share_b;
      if (!clustered || shareB) names.push_back(TensorMapFieldName(h.arg_a, boxes.a[0], boxes.a[1]));
      if (!clustered || !shareB) names.push_back(TensorMapFieldName(h.arg_b, boxes.b[0], boxes.b[1]));
      if (boxes.shared_arg >= 0) names.push_back(TensorMapFieldName(boxes.shared_arg, boxes.half[0], boxes.half[1]));
      for (const std::string &name : names) {
        if (std::find(field_names_.begin(), field_names_.end(), name) == field_names_.end()) {
          Field("tir_tensor_map " + name, name);
        }
      }
    }
    // With tma_store, the output's map: 64-row boxes of 128 bytes.
    if (Param("tma_store", 0)) {
      const HopperOutput o = HopperStorePlan();
      if (o.output >= 0) {
        const std::string name = OutputTensorMapFieldName(o.output, 128 / o.elem_bytes, 64);
        Field("tir_tensor_map " + name, name);
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace tir::codegen::detail
