//===- MaterializeDefaultStrides.cpp - explicit row-major strides ---------===//
//
// For every tensor argument and result of every graph without `tir.stride`,
// attach the row-major default (compiler/ir/StrideAttr.h: strides outside the
// innermost dynamic extent are dynamic). Existing strides are left alone.

#include "compiler/ir/StrideAttr.h"
#include "compiler/ir/TirDialect.h"
#include "compiler/transforms/Passes.h"
#include "mlir/IR/BuiltinOps.h"

namespace tir {
#define GEN_PASS_DEF_MATERIALIZEDEFAULTSTRIDES
#include "compiler/transforms/Passes.h.inc"
}  // namespace tir

namespace tir {
namespace {

class MaterializeDefaultStridesPass
    : public impl::MaterializeDefaultStridesBase<MaterializeDefaultStridesPass> {
  void runOnOperation() override {
    getOperation().walk([](GraphOp graph) {
      mlir::Builder b(graph.getContext());
      auto strideFor = [&](mlir::Type t) -> mlir::StringAttr {
        auto tensor = t.dyn_cast<mlir::RankedTensorType>();
        if (!tensor) return {};
        return b.getStringAttr(formatStrideString(rowMajorStrides(tensor.getShape())));
      };
      for (unsigned i = 0; i < graph.getNumArguments(); ++i) {
        if (graph.getArgAttr(i, TirDialect::kStrideAttr)) continue;
        if (auto s = strideFor(graph.getArgumentTypes()[i])) {
          graph.setArgAttr(i, TirDialect::kStrideAttr, s);
        }
      }
      for (unsigned i = 0; i < graph.getNumResults(); ++i) {
        if (graph.getResultAttr(i, TirDialect::kStrideAttr)) continue;
        if (auto s = strideFor(graph.getResultTypes()[i])) {
          graph.setResultAttr(i, TirDialect::kStrideAttr, s);
        }
      }
    });
  }
};

}  // namespace
}  // namespace tir
