//===- InputLimits.h - bounds on untrusted graph input ----------*- C++ -*-===//
//
// MLIR's parsers and its attribute and type walks recurse once per level of
// nesting, so a few kilobytes of `[[[[...]]]]` would exhaust a thread's
// stack. Graph input from the network is bounded before MLIR sees it:
//  - text (a graph's MLIR text, an attribute's text in the proto form) is
//    scanned once, without recursion, before MLIR sees it, skipping what
//    MLIR's lexer skips (whitespace, `//` comments) and string literals:
//    its bracket depth may not pass kMaxGraphNesting; at most
//    kMaxAffineTerms arithmetic operators may follow one another with no
//    separator (`,` `;` `=` `:` brackets other than parentheses, SSA and
//    symbol names) wherever they are (the affine parser recurses once per
//    operator of a run and simplifies in time that grows with the square of
//    the terms: a bracketless `d0+d0+...` of millions of terms overflowed
//    any stack); and a shaped type (tensor, memref, vector) may have at
//    most kMaxRank dims (building a type of rank 100,000 took minutes);
//  - text and bytecode are parsed on a thread with a stack of
//    kParseStackBytes (bytecode cannot be scanned without decoding it);
//  - the parsed module's attributes and types are walked without recursion
//    and refused when deeper than kMaxGraphNesting, before anything that
//    recurses over them (printing, hashing, verification of users) runs.
// Refusals are INVALID_GRAPH naming the depth and the limit.
//
//===----------------------------------------------------------------------===//

#ifndef TIR_COMPILER_CONVERSION_INPUTLIMITS_H_
#define TIR_COMPILER_CONVERSION_INPUTLIMITS_H_

#include <cstddef>
#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "llvm/ADT/StringRef.h"
#include "mlir/IR/Operation.h"

namespace tir {

// Deepest nesting of brackets, attributes and types a graph may have. Real
// graphs stay under 20 (a module, a graph, a region, a dense literal of a
// rank-6 constant, a type with an encoding).
inline constexpr int kMaxGraphNesting = 256;

// Most operators (+ - * mod floordiv ceildiv) that may follow one another
// without a separator. Access maps of real graphs have a few dozen.
inline constexpr int64_t kMaxAffineTerms = 1024;

// Largest graph bytecode taken (it cannot be scanned before it is parsed;
// at this size its nesting fits the parse stack). Text and the proto form
// have no such cap.
inline constexpr size_t kMaxGraphBytecodeBytes = size_t{2} << 20;

// Longest graph name (its symbol) taken: the name is kept with what the
// service remembers of a request and shown with its job, so a request of a
// name many megabytes long would cost that much for as long as it is kept.
inline constexpr size_t kMaxGraphNameBytes = 1024;

// Stack of the thread that parses untrusted graphs.
inline constexpr size_t kParseStackBytes = size_t{256} << 20;

// The deepest nesting of MLIR text: brackets ( [ { < outside string
// literals and // comments ("->" is an arrow, not a closer), and runs of
// unary minus signs (the affine parser recurses once per sign) on top of
// the brackets around them. Never recurses.
int TextNesting(llvm::StringRef text);

// What one linear scan of MLIR text finds (strings and comments skipped).
struct TextFacts {
  int depth = 0;              // TextNesting
  int64_t affine_terms = 0;   // most arithmetic operators in a row (no separator between)
  int64_t rank = 0;           // dims of the shaped type of highest rank
  int64_t assignments = 0;    // `=` signs (each op with results has one)
};
TextFacts ScanText(llvm::StringRef text);

// INVALID_GRAPH when `text` nests deeper than `max_depth`, holds an affine
// map of more than kMaxAffineTerms operators or a type of rank above
// kMaxRank; `what` names it ("the graph's text", "attribute 'x'"). Linear in
// the text's length.
absl::Status CheckTextNesting(llvm::StringRef text, llvm::StringRef what, int max_depth = kMaxGraphNesting);

// INVALID_GRAPH when an attribute or type of an op under `root` (the ops'
// attributes, result and block argument types, and what they hold) nests
// deeper than `max_depth`. Never recurses.
absl::Status CheckAttributeDepth(mlir::Operation *root, int max_depth = kMaxGraphNesting);

// Runs `fn` on a new thread with a stack of `stack_bytes` and waits for it.
// INTERNAL when the thread cannot be made.
absl::Status RunOnLargeStack(const std::function<void()> &fn, size_t stack_bytes = kParseStackBytes);

}  // namespace tir

#endif  // TIR_COMPILER_CONVERSION_INPUTLIMITS_H_
