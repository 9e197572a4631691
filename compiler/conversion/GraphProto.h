// Lossless conversion between the wire graph (tir.v1.Graph) and the dialect.
//
// Import checks what the wire format alone cannot: ids defined once and
// before use (no cycles, no dangling operands), known op kinds, limits (rank
// <= 8, extents <= 2^40, element counts <= 2^48), then builds the ops and runs
// the dialect verifier. Every error is INVALID_ARGUMENT with reason
// INVALID_GRAPH, UNSUPPORTED_OP or LIMIT_EXCEEDED, naming the op or value.

#ifndef TIR_COMPILER_CONVERSION_GRAPHPROTO_H_
#define TIR_COMPILER_CONVERSION_GRAPHPROTO_H_

#include <vector>

#include "absl/status/statusor.h"
#include "compiler/ir/TirDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "tir/v1/graph.pb.h"

namespace tir {

// The wire schema version this code reads and writes.
inline constexpr uint32_t kGraphSchemaVersion = 1;

// Builds a module holding one verified tir.graph from `graph`.
absl::StatusOr<mlir::OwningOpRef<mlir::ModuleOp>> ImportGraph(const tir::v1::Graph &graph,
                                                              mlir::MLIRContext *context);

// Serializes a verified graph. Value ids are assigned in definition order:
// inputs 0..n-1, then op results.
absl::StatusOr<tir::v1::Graph> ExportGraph(GraphOp graph);

// A graph from any accepted encoding, parsed and verified: the module and its
// single tir.graph (a source with zero or several graphs is INVALID_GRAPH).
// LoadGraphSource is what a compile request goes through, so it also refuses
// a graph without outputs (valid IR, as in TensorIR, but nothing to compile)
// and a name longer than kMaxGraphNameBytes (LIMIT_EXCEEDED); LoadGraphText
// accepts both.
struct LoadedGraph {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  GraphOp graph;
};
absl::StatusOr<LoadedGraph> LoadGraphSource(const tir::v1::GraphSource &source,
                                            mlir::MLIRContext *context);

// Every graph of a module (TensorIR's test files hold several per module):
// what `tirctl plan` and `emit` work through one by one. Errors as for
// LoadGraphText; zero graphs is INVALID_GRAPH.
struct LoadedGraphs {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::vector<GraphOp> graphs;
};
absl::StatusOr<LoadedGraphs> LoadGraphsText(llvm::StringRef text, mlir::MLIRContext *context,
                                            llvm::StringRef bufferName = "graph.mlir");

// Same, for MLIR text in tir's or TensorIR's form, or MLIR bytecode.
absl::StatusOr<LoadedGraph> LoadGraphText(llvm::StringRef text, mlir::MLIRContext *context,
                                          llvm::StringRef bufferName = "graph.mlir");

}  // namespace tir

#endif  // TIR_COMPILER_CONVERSION_GRAPHPROTO_H_
