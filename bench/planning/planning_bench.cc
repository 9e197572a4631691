// Planning speed: partition + candidate generation + cost-model ranking of
// generated graphs of 10, 100 and 1,000 ops for sm_90a. The baseline, measured
// in the same run, is parsing and verifying the same graph. Goal: a 1,000-op
// graph planned in under 100 ms.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "bench/graphgen/graph_generator.h"
#include "compiler/conversion/GraphProto.h"
#include "bench/timing/timing.h"
#include "compiler/ir/Registration.h"
#include "compiler/planning/Plan.h"

using tir::bench::MedianMs;

int main() {
  auto context = tir::makeTirContext();
  const tir::target::ArchInfo arch = *tir::target::LookupArch("sm_90a");
  tir::planning::AnalyticCostModel model;
  std::printf("%6s %8s %10s %12s %12s %14s %16s\n", "ops", "kernels", "candidates", "parse+verify", "plan",
              "plan us/op", "plan/parse ratio");
  double plan1000 = 0;
  for (int ops : {10, 100, 1000}) {
    const std::string text = tir::bench::GenerateGraphText(ops, 7);
    const double parse = MedianMs(11, [&] {
      if (!tir::LoadGraphText(text, context.get()).ok()) std::abort();
    });
    auto loaded = tir::LoadGraphText(text, context.get());
    size_t kernels = 0, candidates = 0;
    const double plan = MedianMs(11, [&] {
      auto planned = tir::planning::PlanGraph(loaded->graph, arch, model);
      if (!planned.ok()) std::abort();
      kernels = planned->plan.kernels_size();
      candidates = 0;
      for (const auto &k : planned->plan.kernels()) candidates += k.candidates_after_pruning();
    });
    if (ops == 1000) plan1000 = plan;
    std::printf("%6d %8zu %10zu %10.2fms %10.2fms %14.1f %16.2f\n", ops, kernels, candidates, parse, plan,
                1000.0 * plan / ops, plan / parse);
  }
  std::printf("\n1,000-op graph planned in %.2f ms (goal < 100 ms: %s)\n", plan1000,
              plan1000 < 100 ? "met" : "NOT met");
  return 0;
}
