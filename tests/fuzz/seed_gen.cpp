// Writes fuzz seeds: for every graph in the given .mlir files, its wire form
// (for graph_proto_fuzzer) and its printed text (for graph_text_fuzzer).
// Usage: seed_gen OUT_DIR FILE.mlir...

#include <fstream>
#include <iostream>
#include <sstream>

#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  if (argc < 3) {
    std::cerr << "usage: seed_gen OUT_DIR FILE.mlir...\n";
    return 2;
  }
  auto context = tir::makeTirContext();
  int n = 0;
  for (int i = 2; i < argc; ++i) {
    std::ifstream in(argv[i]);
    std::stringstream ss;
    ss << in.rdbuf();
    auto module = tir::parseTirModule(ss.str(), context.get(), argv[i]);
    if (!module) continue;
    for (tir::GraphOp graph : module->getOps<tir::GraphOp>()) {
      auto proto = tir::ExportGraph(graph);
      if (!proto.ok()) continue;
      std::ofstream(std::string(argv[1]) + "/proto/" + std::to_string(n) + ".pb") << proto->SerializeAsString();
      std::string text;
      llvm::raw_string_ostream os(text);
      graph.print(os);
      std::ofstream(std::string(argv[1]) + "/text/" + std::to_string(n) + ".mlir") << os.str();
      ++n;
    }
  }
  std::cout << n << " seeds\n";
  return n > 0 ? 0 : 1;
}
