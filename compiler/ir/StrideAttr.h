//===- StrideAttr.h - the tir.stride and layout string syntax --*- C++ -*-===//
//
// Strides are written "(s0,s1,...)" with a positive integer or `?` (dynamic,
// given at launch) per dimension. Layouts (tensor_source) are CuTe-style
// "(shape)" or "(shape):(stride)" with nested tuples allowed, e.g.
// "((2,4),8):((1,2),8)"; `?` marks a dynamic entry.

#ifndef TIR_COMPILER_IR_STRIDEATTR_H_
#define TIR_COMPILER_IR_STRIDEATTR_H_

#include <cstdint>
#include <optional>
#include <string>

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

namespace tir {

// Parses a stride string; kDynamic for `?`. On error returns nullopt and
// sets `why`.
std::optional<llvm::SmallVector<int64_t>> parseStrideString(llvm::StringRef text, std::string *why);

// Formats strides as "(8,1)" with `?` for dynamic entries.
std::string formatStrideString(llvm::ArrayRef<int64_t> strides);

// Row-major strides of `shape`: dynamic from the first dynamic extent
// (exclusive) outwards; the innermost stride is always 1.
llvm::SmallVector<int64_t> rowMajorStrides(llvm::ArrayRef<int64_t> shape);

// Parses a layout string; returns whether it is well formed; `flatShape`
// (optional) receives the flattened shape entries.
bool parseLayoutString(llvm::StringRef text, llvm::SmallVectorImpl<int64_t> *flatShape,
                       std::string *why);

}  // namespace tir

#endif  // TIR_COMPILER_IR_STRIDEATTR_H_
