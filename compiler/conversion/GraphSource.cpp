//===- GraphSource.cpp - load a graph from any accepted encoding ----------===//

#include "absl/strings/str_cat.h"
#include "compiler/conversion/DiagnosticStatus.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/conversion/InputLimits.h"
#include "compiler/ir/Registration.h"
#include "llvm/Support/MemoryBufferRef.h"
#include "mlir/Bytecode/BytecodeReader.h"
#include "compiler/support/status.h"

namespace tir {
namespace {

// Parses untrusted text or bytecode within the nesting limits
// (InputLimits.h). INVALID_GRAPH with the parser's diagnostics.
absl::StatusOr<mlir::OwningOpRef<mlir::ModuleOp>> ParseBounded(llvm::StringRef text, mlir::MLIRContext *context,
                                                               llvm::StringRef bufferName) {
  if (!mlir::isBytecode(llvm::MemoryBufferRef(text, bufferName))) {
    TIR_RETURN_IF_ERROR(CheckTextNesting(text, absl::StrCat("the graph's text (", bufferName.str(), ")")));
  } else if (text.size() > kMaxGraphBytecodeBytes) {
    return MakeError(absl::StatusCode::kResourceExhausted, "LIMIT_EXCEEDED",
                     absl::StrCat("graph bytecode of ", text.size(), " bytes; at most ", kMaxGraphBytecodeBytes,
                                  " are taken (send larger graphs as text or in the proto form)"));
  }
  DiagnosticCollector diagnostics(context);
  mlir::OwningOpRef<mlir::ModuleOp> module;
  TIR_RETURN_IF_ERROR(RunOnLargeStack([&] {
    module = parseTirModule(text, context, bufferName);
  }));
  if (!module) return diagnostics.ToStatus("INVALID_GRAPH", "graph does not parse or verify");
  TIR_RETURN_IF_ERROR(CheckAttributeDepth(module->getOperation()));
  return module;
}

absl::StatusOr<LoadedGraph> SingleGraph(mlir::OwningOpRef<mlir::ModuleOp> module) {
  LoadedGraph out;
  int graphs = 0;
  for (mlir::Operation &op : module->getBody()->getOperations()) {
    if (auto g = llvm::dyn_cast<GraphOp>(op)) {
      out.graph = g;
      ++graphs;
      continue;
    }
    return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_GRAPH",
                     absl::StrCat("expected only tir.graph ops at the top level, found '",
                                  op.getName().getStringRef().str(), "'"));
  }
  if (graphs != 1) {
    return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_GRAPH",
                     absl::StrCat("expected exactly one tir.graph, found ", graphs));
  }
  out.module = std::move(module);
  return out;
}

}  // namespace

absl::StatusOr<LoadedGraph> LoadGraphText(llvm::StringRef text, mlir::MLIRContext *context,
                                          llvm::StringRef bufferName) {
  TIR_ASSIGN_OR_RETURN(mlir::OwningOpRef<mlir::ModuleOp> module, ParseBounded(text, context, bufferName));
  return SingleGraph(std::move(module));
}

absl::StatusOr<LoadedGraphs> LoadGraphsText(llvm::StringRef text, mlir::MLIRContext *context,
                                            llvm::StringRef bufferName) {
  TIR_ASSIGN_OR_RETURN(mlir::OwningOpRef<mlir::ModuleOp> module, ParseBounded(text, context, bufferName));
  LoadedGraphs out;
  for (mlir::Operation &op : module->getBody()->getOperations()) {
    if (auto g = llvm::dyn_cast<GraphOp>(op)) {
      out.graphs.push_back(g);
      continue;
    }
    return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_GRAPH",
                     absl::StrCat("expected only tir.graph ops at the top level, found '",
                                  op.getName().getStringRef().str(), "'"));
  }
  if (out.graphs.empty()) return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_GRAPH", "no tir.graph found");
  out.module = std::move(module);
  return out;
}

namespace {

// LIMIT_EXCEEDED for a graph whose name passes kMaxGraphNameBytes.
absl::StatusOr<LoadedGraph> NameBounded(absl::StatusOr<LoadedGraph> loaded) {
  if (loaded.ok() && loaded->graph.getSymName().size() > kMaxGraphNameBytes) {
    return MakeError(absl::StatusCode::kInvalidArgument, "LIMIT_EXCEEDED",
                     absl::StrCat("the graph's name has ", loaded->graph.getSymName().size(), " bytes; at most ",
                                  kMaxGraphNameBytes, " are taken"));
  }
  return loaded;
}

absl::StatusOr<LoadedGraph> LoadAnyGraphSource(const tir::v1::GraphSource &source, mlir::MLIRContext *context);

}  // namespace

absl::StatusOr<LoadedGraph> LoadGraphSource(const tir::v1::GraphSource &source, mlir::MLIRContext *context) {
  return NameBounded(LoadAnyGraphSource(source, context));
}

namespace {

absl::StatusOr<LoadedGraph> LoadAnyGraphSource(const tir::v1::GraphSource &source, mlir::MLIRContext *context) {
  switch (source.source_case()) {
    case tir::v1::GraphSource::kGraph: {
      TIR_ASSIGN_OR_RETURN(mlir::OwningOpRef<mlir::ModuleOp> module, ImportGraph(source.graph(), context));
      TIR_RETURN_IF_ERROR(CheckAttributeDepth(module->getOperation()));
      return SingleGraph(std::move(module));
    }
    case tir::v1::GraphSource::kMlirText:
    case tir::v1::GraphSource::kMlirBytecode: {
      const bool text = source.source_case() == tir::v1::GraphSource::kMlirText;
      TIR_ASSIGN_OR_RETURN(LoadedGraph loaded,
                           LoadGraphText(text ? source.mlir_text() : source.mlir_bytecode(), context,
                                         text ? "graph.mlir" : "graph.mlirbc"));
      if (loaded.graph.getNumResults() == 0) {
        return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_GRAPH",
                         "the graph has no outputs: there is nothing to compute");
      }
      return loaded;
    }
    case tir::v1::GraphSource::SOURCE_NOT_SET:
      break;
  }
  return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_GRAPH",
                   "graph source is empty: set graph, mlir_text or mlir_bytecode");
}

}  // namespace

}  // namespace tir
