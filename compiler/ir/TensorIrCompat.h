//===- TensorIrCompat.h - accept NVIDIA TensorIR's textual form -*- C++ -*-===//
//
// TensorIR writes the same ops as tir under the `nv_tensor_ir` namespace
// (`nv_tensor_ir.graph`, `nv_tensor_ir.yield`, `nv_tensor_ir.stride`,
// `#nv_tensor_ir.tensor_source<...>`). Before parsing, every identifier token
// that starts with `nv_tensor_ir.` (outside string literals and comments) is
// respelled `tir.`, padded on the left with spaces so that every line and
// every column after the token are unchanged: diagnostics and
// `expected-error` annotations keep pointing where the author wrote them.

#ifndef TIR_COMPILER_IR_TENSORIRCOMPAT_H_
#define TIR_COMPILER_IR_TENSORIRCOMPAT_H_

#include <string>

#include "llvm/ADT/StringRef.h"

namespace tir {

// Returns `text` with the `nv_tensor_ir.` namespace respelled `tir.`.
std::string aliasTensorIrNamespace(llvm::StringRef text);

// Whether `text` mentions the TensorIR namespace outside strings and comments.
bool usesTensorIrNamespace(llvm::StringRef text);

}  // namespace tir

#endif  // TIR_COMPILER_IR_TENSORIRCOMPAT_H_
