//===- Registration.h - dialects a tir context needs ----------*- C++ -*-===//

#ifndef TIR_COMPILER_IR_REGISTRATION_H_
#define TIR_COMPILER_IR_REGISTRATION_H_

#include <memory>
#include <string>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

namespace tir {

// Adds the tir dialect and the dialects its graphs use (arith, builtin).
void registerTirDialects(mlir::DialectRegistry &registry);

// A context with those dialects loaded and threading disabled (tir runs many
// small compiles in parallel rather than one large one).
std::unique_ptr<mlir::MLIRContext> makeTirContext();

// Parses MLIR text (tir's form or TensorIR's) or MLIR bytecode into a module
// and verifies it. Diagnostics go to the context's handlers.
mlir::OwningOpRef<mlir::ModuleOp> parseTirModule(llvm::StringRef source,
                                                 mlir::MLIRContext *context,
                                                 llvm::StringRef bufferName = "graph.mlir");

}  // namespace tir

#endif  // TIR_COMPILER_IR_REGISTRATION_H_
