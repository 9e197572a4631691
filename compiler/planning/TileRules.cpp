#include "compiler/planning/TileRules.h"

#include "compiler/ir/TirDialect.h"

namespace tir::planning {

MmaOperand MmaOperandOf(mlir::Value v) {
  MmaOperand o{v, v.getType().cast<mlir::ShapedType>().getElementType()};
  if (auto cv = v.getDefiningOp<ConvertOp>()) {
    mlir::Type from = cv.getInput().getType().cast<mlir::ShapedType>().getElementType();
    if ((from.isBF16() || from.isF16()) && o.element.isF32()) return MmaOperand{cv.getInput(), from, true};
  }
  return o;
}

}  // namespace tir::planning
