//===- Passes.h - tir passes ----------------------------------*- C++ -*-===//

#ifndef TIR_COMPILER_TRANSFORMS_PASSES_H_
#define TIR_COMPILER_TRANSFORMS_PASSES_H_

#include <memory>

#include "mlir/Pass/Pass.h"

namespace tir {

#define GEN_PASS_DECL
#include "compiler/transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/transforms/Passes.h.inc"

}  // namespace tir

#endif  // TIR_COMPILER_TRANSFORMS_PASSES_H_
