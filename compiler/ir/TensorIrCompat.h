//===- TensorIrCompat.h - accept NVIDIA TensorIR's textual form -*- C++ -*-===//
//
// TensorIR writes the same ops as tir under the `nv_tensor_ir` namespace
// (`nv_tensor_ir.graph`, `nv_tensor_ir.yield`, `nv_tensor_ir.stride`,
// `#nv_tensor_ir.tensor_source<...>`, `#nv_tensor_ir<iter_space_dim_domains[..]>`)
// and its reduce_ud bodies with upstream MLIR's arith spellings
// (`arith.maximumf`, `arith.minimumf`: MLIR 16's `arith.maxf`, `arith.minf`).
// Before parsing, every such token (outside string literals and comments,
// and in generic-form op names) is respelled, padded on the left with spaces
// so that every line and every column after the token are unchanged:
// diagnostics and `expected-error` annotations keep pointing where the author
// wrote them.

#ifndef TIR_COMPILER_IR_TENSORIRCOMPAT_H_
#define TIR_COMPILER_IR_TENSORIRCOMPAT_H_

#include <string>

#include "llvm/ADT/StringRef.h"

namespace tir {

// Returns `text` with the `nv_tensor_ir` namespace respelled `tir` and the
// upstream arith spellings respelled as MLIR 16 writes them.
std::string aliasTensorIrNamespace(llvm::StringRef text);

// Whether `text` has anything aliasTensorIrNamespace respells.
bool usesTensorIrNamespace(llvm::StringRef text);

}  // namespace tir

#endif  // TIR_COMPILER_IR_TENSORIRCOMPAT_H_
