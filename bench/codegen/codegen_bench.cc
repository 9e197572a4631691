// Codegen speed: emit time per kernel, NVRTC compile time per candidate
// (median over several candidates of each kind, sm_90a), and the time of a
// compile-cache hit, measured in the same run as the baseline (a trivial
// kernel through NVRTC: the fixed cost every compile pays).
// Goals: median NVRTC compile under 150 ms per pointwise candidate and under
// 400 ms per matmul candidate.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "bench/timing/timing.h"
#include "compiler/codegen/Emitter.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/nvrtc/compile_cache.h"
#include "compiler/planning/Plan.h"

namespace {

using tir::bench::Median;
using tir::bench::MsSince;

const char *kGraphs[][2] = {
    {"pointwise", R"mlir(
tir.graph @pw(%x: tensor<4096x4096xbf16>, %b: tensor<1x4096xbf16>) -> tensor<4096x4096xbf16> {
  %a = add %x, %b : (tensor<4096x4096xbf16>, tensor<1x4096xbf16>) -> tensor<4096x4096xbf16>
  %g = gelu_approx_tanh_fwd %a : tensor<4096x4096xbf16>
  %m = mul %g, %x : tensor<4096x4096xbf16>
  results %m : tensor<4096x4096xbf16>
})mlir"},
    {"reduction", R"mlir(
tir.graph @sm(%x: tensor<4096x4096xf32>) -> tensor<4096x4096xf32> {
  %m = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<4096x4096xf32> -> tensor<4096x1xf32>
  %s = sub %x, %m : (tensor<4096x4096xf32>, tensor<4096x1xf32>) -> tensor<4096x4096xf32>
  %e = exp %s : tensor<4096x4096xf32>
  %z = reduce(%e)<dimensions = [1], reduction_mode = <add>> : tensor<4096x4096xf32> -> tensor<4096x1xf32>
  %y = div %e, %z : (tensor<4096x4096xf32>, tensor<4096x1xf32>) -> tensor<4096x4096xf32>
  results %y : tensor<4096x4096xf32>
})mlir"},
    {"matmul", R"mlir(
tir.graph @mm(%x: tensor<4096x4096xbf16>, %w: tensor<4096x4096xbf16>, %b: tensor<1x4096xf32>) -> tensor<4096x4096xf32> {
  %m = matmul(%x, %w) : (tensor<4096x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<4096x4096xf32>
  %y = add %m, %b : (tensor<4096x4096xf32>, tensor<1x4096xf32>) -> tensor<4096x4096xf32>
  %g = gelu_approx_tanh_fwd %y : tensor<4096x4096xf32>
  results %g : tensor<4096x4096xf32>
})mlir"},
};

}  // namespace

int main() {
  auto ctx = tir::makeTirContext();
  const tir::target::ArchInfo arch = *tir::target::LookupArch("sm_90a");
  tir::planning::AnalyticCostModel model;
  tir::nvrtc::CompileOptions options;
  options.arch = "sm_90a";
  options.headers = tir::codegen::RuntimeHeaders();
  // Baseline: the fixed cost of any NVRTC compile.
  std::vector<double> base;
  for (int i = 0; i < 5; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    auto k = tir::nvrtc::CompileToCubin("extern \"C\" __global__ void k(float *x) { x[0] = " + std::to_string(i) + ".f; }", options);
    if (!k.ok()) return 1;
    base.push_back(MsSince(t0));
  }
  const double baseline = Median(base);
  std::printf("baseline: trivial kernel through NVRTC, median %.1f ms\n\n", baseline);
  std::printf("%-10s %10s %14s %16s %12s %10s\n", "kind", "candidates", "emit (median)", "NVRTC (median)", "x baseline",
              "cache hit");
  double pw = 0, mm = 0;
  int pipelined = 0, matmuls = 0;  // matmul candidates whose source has the cp.async pipeline
  for (const auto &g : kGraphs) {
    const bool isMatmul = std::string(g[0]) == "matmul";
    auto loaded = tir::LoadGraphText(g[1], ctx.get());
    auto planned = tir::planning::PlanGraph(loaded->graph, arch, model);
    auto module = tir::planning::BuildPartitionedModule(loaded->graph, planned->partition);
    tir::GraphOp kernel;
    for (tir::GraphOp k : module->getOps<tir::GraphOp>()) {
      if (k->hasAttr("tir.kernel_kind")) kernel = k;
    }
    const auto &space = planned->spaces.back().kept;
    std::vector<double> emit, compile, hits;
    tir::nvrtc::CompileCache cache;
    const size_t n = std::min<size_t>(8, space.size());
    for (size_t i = 0; i < n; ++i) {
      const size_t pick = i * (space.size() / n);
      auto t0 = std::chrono::steady_clock::now();
      auto emitted = tir::codegen::EmitKernel(kernel, space[pick].params);
      emit.push_back(MsSince(t0));
      if (!emitted.ok()) {
        std::fprintf(stderr, "%s\n", emitted.status().ToString().c_str());
        return 1;
      }
      t0 = std::chrono::steady_clock::now();
      auto cubin = cache.Compile(emitted->source, options);
      compile.push_back(MsSince(t0));
      if (!cubin.ok()) return 1;
      t0 = std::chrono::steady_clock::now();
      bool hit = false;
      auto again = cache.Compile(emitted->source, options, &hit);
      hits.push_back(MsSince(t0));
      if (!again.ok() || !hit) {
        std::fprintf(stderr, "%s candidate %zu: the second compile missed the cache\n", g[0], pick);
        return 1;
      }
      if (isMatmul && emitted->source.find("tir_cp_async16") != std::string::npos) ++pipelined;
    }
    const double c = Median(compile);
    if (std::string(g[0]) == "pointwise") pw = c;
    if (isMatmul) {
      mm = c;
      matmuls = static_cast<int>(n);
    }
    std::printf("%-10s %10zu %12.2fms %14.1fms %12.2f %8.3fms\n", g[0], n, Median(emit), c, c / baseline, Median(hits));
  }
  std::printf("\nmedian NVRTC compile per candidate: pointwise %.1f ms (goal < 150 ms: %s), matmul %.1f ms (goal < 400 ms: %s)\n",
              pw, pw < 150 ? "met" : "NOT met", mm, mm < 400 ? "met" : "NOT met");
  std::printf("matmul candidates generated with the cp.async pipeline: %d of %d\n", pipelined, matmuls);
  return 0;
}
