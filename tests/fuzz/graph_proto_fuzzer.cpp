// libFuzzer target: arbitrary bytes as a serialized tir.v1.Graph. Whatever
// imports must export and import again with the same printed form and
// fingerprint.

#include <cstdint>

#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "google/protobuf/stubs/logging.h"
#include "tests/fuzz/fuzz_invariants.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1 << 16)) return 0;
  static mlir::MLIRContext *context = [] {
    google::protobuf::SetLogHandler(nullptr);  // invalid UTF-8 warnings are expected here
    return tir::makeTirContext().release();
  }();
  tir::v1::Graph graph;
  if (!graph.ParseFromArray(data, static_cast<int>(size))) return 0;
  auto module = tir::ImportGraph(graph, context);
  if (!module.ok()) return 0;
  tir::fuzz::CheckRoundTrips(*(*module)->getOps<tir::GraphOp>().begin(), context);
  return 0;
}
