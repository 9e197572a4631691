//===- TirOps.cpp - generated op classes ----------------------------------===//
//
// The hand-written parts live per op group: PointwiseOps.cpp, ShapeOps.cpp,
// ReduceOps.cpp, GraphOp.cpp.

#include "compiler/ir/TirDialect.h"

using namespace mlir;

#define GET_OP_CLASSES
#include "compiler/ir/TirOps.cpp.inc"
