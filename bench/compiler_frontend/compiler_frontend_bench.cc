// Frontend speed: parse + verify + fingerprint of generated graphs of 100,
// 1,000 and 10,000 ops, from MLIR text and from the wire form. The baseline,
// measured in the same run, is MLIR's parser alone on the same text with
// verification off; the ratio is what tir's verifier and fingerprint add.
// Goal: a 1,000-op graph in under 20 ms.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "bench/graphgen/graph_generator.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/fingerprint/Fingerprint.h"
#include "bench/timing/timing.h"
#include "compiler/ir/Registration.h"
#include "compiler/ir/TirDialect.h"
#include "mlir/Parser/Parser.h"

using tir::bench::MedianMs;

int main() {
  auto context = tir::makeTirContext();
  std::printf("%8s %9s %12s %14s %12s %10s %12s %14s\n", "ops", "bytes", "parse-only", "parse+verify",
              "fingerprint", "total", "us/op", "wire import+fp");
  double total1000 = 0;
  for (int ops : {100, 1000, 10000}) {
    const std::string text = tir::bench::GenerateGraphText(ops);
    const int reps = ops >= 10000 ? 5 : 21;
    // Baseline: MLIR's parser alone, no verification.
    mlir::ParserConfig noVerify(context.get(), /*verifyAfterParse=*/false);
    const double baseline = MedianMs(reps, [&] {
      auto m = mlir::parseSourceString<mlir::ModuleOp>(text, noVerify);
      if (!m) std::abort();
    });
    const double parse = MedianMs(reps, [&] {
      auto g = tir::LoadGraphText(text, context.get());
      if (!g.ok()) {
        std::fprintf(stderr, "%s\n", g.status().ToString().c_str());
        std::abort();
      }
    });
    auto loaded = tir::LoadGraphText(text, context.get());
    const double fp = MedianMs(reps, [&] { tir::FingerprintGraph(loaded->graph); });
    auto proto = tir::ExportGraph(loaded->graph);
    const double wire = MedianMs(reps, [&] {
      auto m = tir::ImportGraph(*proto, context.get());
      if (!m.ok()) std::abort();
      tir::FingerprintGraph(*(*m)->getOps<tir::GraphOp>().begin());
    });
    const double total = parse + fp;
    if (ops == 1000) total1000 = total;
    std::printf("%8d %9zu %10.2fms %12.2fms %10.2fms %8.2fms %12.2f %12.2fms   (x%.2f of parse-only)\n", ops,
                text.size(), baseline, parse, fp, total, 1000.0 * total / ops, wire, total / baseline);
  }
  std::printf("\n1,000-op graph, parse + verify + fingerprint: %.2f ms (goal < 20 ms: %s)\n", total1000,
              total1000 < 20 ? "met" : "NOT met");
  return 0;
}
