// Invariants both fuzz targets check on every graph that loads.

#ifndef TIR_TESTS_FUZZ_FUZZ_INVARIANTS_H_
#define TIR_TESTS_FUZZ_FUZZ_INVARIANTS_H_

#include <cstdio>
#include <cstdlib>
#include <string>

#include "compiler/conversion/GraphProto.h"
#include "compiler/fingerprint/Fingerprint.h"
#include "llvm/Support/raw_ostream.h"

namespace tir::fuzz {

inline void Fail(const char *what, const std::string &detail) {
  std::fprintf(stderr, "invariant broken: %s\n%s\n", what, detail.c_str());
  std::abort();
}

inline std::string Print(mlir::Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  op->print(os);
  return s;
}

inline void CheckRoundTrips(GraphOp graph, mlir::MLIRContext *context) {
  const std::string printed = Print(graph);
  const std::string fingerprint = FingerprintGraph(graph);
  absl::StatusOr<LoadedGraph> reparsed = LoadGraphText(printed, context);
  if (!reparsed.ok()) Fail("printed graph does not re-parse", printed + "\n" + reparsed.status().ToString());
  if (Print(reparsed->graph) != printed) Fail("printing is not a fixed point", printed);
  if (FingerprintGraph(reparsed->graph) != fingerprint) Fail("fingerprint changed by re-parsing", printed);
  // The wire form refuses graphs without outputs (nothing to compile).
  if (graph.getNumResults() == 0) return;
  absl::StatusOr<tir::v1::Graph> proto = ExportGraph(graph);
  if (!proto.ok()) Fail("verified graph does not export", printed + "\n" + proto.status().ToString());
  auto imported = ImportGraph(*proto, context);
  if (!imported.ok()) Fail("exported graph does not import", printed + "\n" + imported.status().ToString());
  GraphOp back = *(*imported)->getOps<GraphOp>().begin();
  if (FingerprintGraph(back) != fingerprint) Fail("fingerprint changed through the wire form", printed);
}

}  // namespace tir::fuzz

#endif  // TIR_TESTS_FUZZ_FUZZ_INVARIANTS_H_
