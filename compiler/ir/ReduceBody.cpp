#include "compiler/ir/ReduceBody.h"

#include "llvm/ADT/StringMap.h"
#include "mlir/Dialect/Arith/IR/Arith.h"

namespace tir {
namespace {

const llvm::StringMap<BodyOp> &Table() {
  static const auto *table = new llvm::StringMap<BodyOp>{
      {"arith.constant", BodyOp::kConstant},   {"arith.addf", BodyOp::kAddF},
      {"arith.subf", BodyOp::kSubF},           {"arith.mulf", BodyOp::kMulF},
      {"arith.divf", BodyOp::kDivF},           {"arith.remf", BodyOp::kRemF},
      {"arith.negf", BodyOp::kNegF},           {"arith.maxf", BodyOp::kMaxF},
      {"arith.minf", BodyOp::kMinF},           {"arith.cmpf", BodyOp::kCmpF},
      {"arith.extf", BodyOp::kExtF},           {"arith.truncf", BodyOp::kTruncF},
      {"arith.addi", BodyOp::kAddI},           {"arith.subi", BodyOp::kSubI},
      {"arith.muli", BodyOp::kMulI},           {"arith.divsi", BodyOp::kDivSI},
      {"arith.divui", BodyOp::kDivUI},         {"arith.ceildivsi", BodyOp::kCeilDivSI},
      {"arith.ceildivui", BodyOp::kCeilDivUI}, {"arith.floordivsi", BodyOp::kFloorDivSI},
      {"arith.remsi", BodyOp::kRemSI},         {"arith.remui", BodyOp::kRemUI},
      {"arith.maxsi", BodyOp::kMaxSI},         {"arith.maxui", BodyOp::kMaxUI},
      {"arith.minsi", BodyOp::kMinSI},         {"arith.minui", BodyOp::kMinUI},
      {"arith.andi", BodyOp::kAndI},           {"arith.ori", BodyOp::kOrI},
      {"arith.xori", BodyOp::kXOrI},           {"arith.shli", BodyOp::kShLI},
      {"arith.shrsi", BodyOp::kShRSI},         {"arith.shrui", BodyOp::kShRUI},
      {"arith.cmpi", BodyOp::kCmpI},           {"arith.extsi", BodyOp::kExtSI},
      {"arith.extui", BodyOp::kExtUI},         {"arith.trunci", BodyOp::kTruncI},
      {"arith.sitofp", BodyOp::kSIToFP},       {"arith.uitofp", BodyOp::kUIToFP},
      {"arith.fptosi", BodyOp::kFPToSI},       {"arith.fptoui", BodyOp::kFPToUI},
      {"arith.select", BodyOp::kSelect},
  };
  return *table;
}

}  // namespace

std::optional<BodyOp> classifyBodyOp(mlir::Operation &op) {
  auto it = Table().find(op.getName().getStringRef());
  if (it == Table().end()) return std::nullopt;
  // Scalars only: no vector or tensor forms.
  for (mlir::Type t : op.getOperandTypes()) {
    if (!t.isIntOrFloat()) return std::nullopt;
  }
  for (mlir::Type t : op.getResultTypes()) {
    if (!t.isIntOrFloat()) return std::nullopt;
  }
  if (it->second == BodyOp::kConstant) {
    auto c = llvm::cast<mlir::arith::ConstantOp>(op);
    if (!c.getValue().isa<mlir::IntegerAttr, mlir::FloatAttr>()) return std::nullopt;
  }
  return it->second;
}

std::string supportedBodyOpNames() {
  std::string out;
  for (const char *name : {"constant", "addf", "subf", "mulf", "divf", "remf", "negf", "maximumf (maxf)",
                           "minimumf (minf)", "cmpf", "extf", "truncf", "addi", "subi", "muli", "divsi", "divui",
                           "ceildivsi", "ceildivui", "floordivsi", "remsi", "remui", "maxsi", "maxui", "minsi",
                           "minui", "andi", "ori", "xori", "shli", "shrsi", "shrui", "cmpi", "extsi", "extui",
                           "trunci", "sitofp", "uitofp", "fptosi", "fptoui", "select"}) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return "arith." + out;
}

}  // namespace tir
