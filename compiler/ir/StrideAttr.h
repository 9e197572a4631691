//===- StrideAttr.h - the tir.stride and layout string syntax --*- C++ -*-===//
//
// Strides are written "(s0,s1,...)", one entry per dimension, in elements:
// a non-negative integer, or `?` (given at launch) optionally followed by
// hints in braces, as TensorIR writes them: `?{div=8}` (the run-time stride
// is a multiple of 8), `?{i32}` (its integer width), several separated by
// whitespace (`?{i64 div=16}`). Whitespace may surround every token. A stride
// of 0 repeats one element along its dimension (a broadcast read; on a
// result, see GraphOp's verifier).
//
// Layouts (tensor_source and friends) are CuTe-style "(shape):(stride)" (or
// "(shape)" alone) with tuples nested at most two deep, e.g.
// "((2,4),8):((1,2),8)", and the same leaves (`?`, hints) in both halves.

#ifndef TIR_COMPILER_IR_STRIDEATTR_H_
#define TIR_COMPILER_IR_STRIDEATTR_H_

#include <cstdint>
#include <optional>
#include <string>

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

namespace tir {

// One parsed stride string.
struct StrideSpec {
  llvm::SmallVector<int64_t> strides;  // kDynamic for `?`
  // Per dimension: the stride is known to be a multiple of this (the static
  // stride itself, a `div` hint, or 1 when nothing is known).
  llvm::SmallVector<int64_t> divisors;
  // Per dimension: the `iN` width hint, 0 when absent.
  llvm::SmallVector<int> widths;
};

// Parses a stride string. On error returns nullopt and sets `why`.
std::optional<StrideSpec> parseStrideSpec(llvm::StringRef text, std::string *why);

// The strides alone (kDynamic for `?`).
std::optional<llvm::SmallVector<int64_t>> parseStrideString(llvm::StringRef text, std::string *why);

// The canonical spelling: "(?{div=8},1)" (no spaces, hints as TensorIR
// prints them: width first, then div; a divisor of 1 is not printed).
std::string formatStrideSpec(const StrideSpec &spec);

// Formats strides as "(8,1)" with `?` for dynamic entries.
std::string formatStrideString(llvm::ArrayRef<int64_t> strides);

// Row-major strides of `shape`: dynamic from the first dynamic extent
// (exclusive) outwards; the innermost stride is always 1.
llvm::SmallVector<int64_t> rowMajorStrides(llvm::ArrayRef<int64_t> shape);

// The dims a result with `spec` stores once: a stride of 0 on a dim whose
// extent in `shape` (negative: dynamic) is not 1 holds one element, so only index
// 0 along it is written (the emitters' store guard), and no copy that writes
// whole tiles (a TMA store) can write it.
llvm::SmallVector<int> zeroStrideDims(const StrideSpec &spec, llvm::ArrayRef<int64_t> shape);

// Parses a layout string; returns whether it is well formed; `flatShape`
// (optional) receives the flattened shape entries; `dynamic` (optional) the
// number of `?` leaves in shape and stride together.
bool parseLayoutString(llvm::StringRef text, llvm::SmallVectorImpl<int64_t> *flatShape, std::string *why,
                       int *dynamic = nullptr);

}  // namespace tir

#endif  // TIR_COMPILER_IR_STRIDEATTR_H_
