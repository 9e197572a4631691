// libFuzzer target: arbitrary bytes as a graph in MLIR text (tir's or
// TensorIR's form) or bytecode. Whatever parses must also print, re-parse to
// the same text, export to the wire form and import back with the same
// fingerprint. Any crash, sanitizer report or broken invariant is a bug.

#include <cstdint>
#include <cstdlib>
#include <string>

#include "compiler/conversion/GraphProto.h"
#include "compiler/fingerprint/Fingerprint.h"
#include "compiler/ir/Registration.h"
#include "google/protobuf/stubs/logging.h"
#include "llvm/Support/raw_ostream.h"
#include "tests/fuzz/fuzz_invariants.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1 << 16)) return 0;  // the RPC layer bounds messages; keep runs fast
  static mlir::MLIRContext *context = [] {
    google::protobuf::SetLogHandler(nullptr);  // invalid UTF-8 warnings are expected here
    return tir::makeTirContext().release();
  }();
  const std::string text(reinterpret_cast<const char *>(data), size);
  absl::StatusOr<tir::LoadedGraph> loaded = tir::LoadGraphText(text, context);
  if (!loaded.ok()) return 0;
  tir::fuzz::CheckRoundTrips(loaded->graph, context);
  return 0;
}
