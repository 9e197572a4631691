// The canonical fingerprint of a graph: a SHA-256 of what it computes.
//
// Algorithm (a Merkle hash over the DAG):
// 1. Each input hashes its position, type, strides (absent strides count as
//    the row-major default they mean) and other signature attributes.
// 2. Each op hashes its name, attributes (sorted by name; dense literals by
//    their bytes), the hashes of its operands in order, its result types and
//    its regions (hashed the same way, arguments by position); each result is
//    the op hash plus its index.
// 3. The graph hashes a version tag, the input hashes in order, the output
//    hashes in order with the outputs' strides and attributes, the sorted
//    multiset of all op hashes (so unused ops still count), and the user's
//    tile hints (tile_size, ...: they choose the default candidate).
// Value names, the graph name, the textual order of ops, the spelling of a
// stride string and TensorIR's analysis annotations (TileHints.h) do not
// enter; any change to structure, dtype, shape, stride or its divisibility
// hints, alignment, attribute or output order does.

#ifndef TIR_COMPILER_FINGERPRINT_FINGERPRINT_H_
#define TIR_COMPILER_FINGERPRINT_FINGERPRINT_H_

#include <string>

#include "compiler/ir/TirDialect.h"

namespace tir {

// 64 lowercase hex digits.
std::string FingerprintGraph(GraphOp graph);

}  // namespace tir

#endif  // TIR_COMPILER_FINGERPRINT_FINGERPRINT_H_
