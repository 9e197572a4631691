// What the GPU code of memory-bound kernels is made of, read from the PTX
// NVRTC gives for fixed kernels (no GPU needed): bf16/f16 rounding by
// cvt.rn.bf16(x2).f32 / cvt.rn.f16.f32 and no software rounding sequence, no
// 64-bit integer division or remainder, every input run loaded once and
// moved as 16-byte vectors in and out; reductions with one shared-memory
// round per block reduction, the exp of softmax computed once per element,
// a reciprocal per row instead of a division per element.

#include <regex>

#include "absl/strings/str_cat.h"
#include "compiler/codegen/Emitter.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/nvrtc/nvrtc_compiler.h"
#include "compiler/perf/PtxMix.h"
#include "compiler/planning/Plan.h"
#include "gtest/gtest.h"

namespace tir::codegen {
namespace {

struct Compiled {
  std::string source, ptx;
  std::map<std::string, int64_t> params;  // the candidate emitted
};

// Which of the planner's candidates of kernel 0 to emit.
enum class Pick { kGiven, kDefault, kTopRanked };

// Kernel 0 of `text` planned for `arch`, emitted with `params` (or the
// planner's default or top-ranked candidate), compiled.
Compiled Compile(const std::string &text, std::map<std::string, int64_t> params, const char *arch = "sm_90a",
                 Pick pick = Pick::kGiven) {
  Compiled out;
  auto ctx = makeTirContext();
  auto loaded = LoadGraphText(text, ctx.get());
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  if (!loaded.ok()) return out;
  planning::AnalyticCostModel model;
  auto planned = planning::PlanGraph(loaded->graph, *target::LookupArch(arch), model, 1);
  EXPECT_TRUE(planned.ok()) << planned.status();
  if (!planned.ok()) return out;
  if (pick != Pick::kGiven) {
    const std::vector<planning::TileCandidate> &kept = planned->spaces[0].kept;  // ranked best first
    EXPECT_FALSE(kept.empty());
    if (kept.empty()) return out;
    params = kept[0].params;
    for (const planning::TileCandidate &c : kept) {
      if (pick == Pick::kDefault && c.is_default) params = c.params;
    }
  }
  out.params = params;
  auto module = planning::BuildPartitionedModule(loaded->graph, planned->partition);
  GraphOp kernel;
  for (GraphOp g : module->getOps<GraphOp>()) {
    if (g.getSymName() == loaded->graph.getSymName().str() + "_k0") kernel = g;
  }
  EXPECT_TRUE(kernel);
  if (!kernel) return out;
  auto emitted = EmitKernel(kernel, params);
  EXPECT_TRUE(emitted.ok()) << emitted.status();
  if (!emitted.ok()) return out;
  nvrtc::CompileOptions options;
  options.arch = arch;
  options.headers = RuntimeHeaders();
  auto cubin = nvrtc::CompileToCubin(emitted->source, options);
  EXPECT_TRUE(cubin.ok()) << cubin.status();
  if (!cubin.ok()) return out;
  out.source = emitted->source;
  out.ptx = cubin->ptx;
  return out;
}

// PTX instructions whose opcode starts with `prefix` (predicated or not).
int Count(const std::string &ptx, const std::string &prefix) {
  const std::regex line(R"(^\s*(@!?%p\d+\s+)?([a-z][\w.:]*))");
  int n = 0;
  size_t at = 0;
  while (at < ptx.size()) {
    size_t end = ptx.find('\n', at);
    if (end == std::string::npos) end = ptx.size();
    std::smatch m;
    const std::string l = ptx.substr(at, end - at);
    if (std::regex_search(l, m, line) && m[2].str().rfind(prefix, 0) == 0) ++n;
    at = end + 1;
  }
  return n;
}

int Occurrences(const std::string &text, const std::string &what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Integer division or remainder in 64 bits (what a run-time index divided
// by a run-time extent costs: a long software sequence per use).
int Wide(const std::string &ptx) {
  return Count(ptx, "div.s64") + Count(ptx, "div.u64") + Count(ptx, "rem.s64") + Count(ptx, "rem.u64");
}

// The software bf16 rounding: a NaN test against 0x7f800000 and the
// rounding bias 0x7fff added to the bit pattern.
bool SoftwareBf16Rounding(const std::string &ptx) {
  return ptx.find(", 32767;") != std::string::npos || ptx.find(", 2139095040;") != std::string::npos;
}

constexpr const char *kBf16Chain = R"mlir(
tir.graph @g(%x: tensor<64x256xbf16>, %b: tensor<1x256xbf16>) -> tensor<64x256xbf16> {
  %a = add %x, %b : (tensor<64x256xbf16>, tensor<1x256xbf16>) -> tensor<64x256xbf16>
  %g = gelu_approx_tanh_fwd %a : tensor<64x256xbf16>
  %y = mul %g, %x : tensor<64x256xbf16>
  results %y : tensor<64x256xbf16>
})mlir";

TEST(MemoryBoundPtx, Bf16PointwiseRoundsInHardwareMovesSixteenBytesAndNeverDividesIn64Bits) {
  for (const char *arch : {"sm_90a", "sm_80"}) {
    SCOPED_TRACE(arch);
    const Compiled k = Compile(kBf16Chain, {{"threads", 256}, {"elements_per_thread", 8}, {"vector_width", 8}}, arch);
    ASSERT_FALSE(k.ptx.empty());
    // Three ops round per element, eight elements a thread.
    EXPECT_GE(Count(k.ptx, "cvt.rn.bf16"), 24);
    EXPECT_FALSE(SoftwareBf16Rounding(k.ptx));
    EXPECT_EQ(Wide(k.ptx), 0);
    // x is read by the add and the mul: one run load of it, one of b.
    EXPECT_EQ(Occurrences(k.source, "tir_load_run<8>(a.in0"), 1) << k.source;
    EXPECT_EQ(Occurrences(k.source, "tir_load_run<8>(a.in1"), 1) << k.source;
    EXPECT_GE(Count(k.ptx, "ld.global.v4."), 2);
    EXPECT_GE(Count(k.ptx, "st.global.v4."), 1);
    EXPECT_EQ(Count(k.ptx, "ld.global.v2.") + Count(k.ptx, "st.global.v2."), 0);
    // Static extents whose product fits in 32 bits: a static domain has no
    // element loop behind the run loop, and indices divide by constants.
    EXPECT_EQ(k.source.find("a.dim[1] %"), std::string::npos) << k.source;
    EXPECT_NE(k.source.find("tir_u32 rem_run"), std::string::npos) << k.source;
  }
}

TEST(MemoryBoundPtx, F16PointwiseConvertsInHardware) {
  const Compiled k = Compile(R"mlir(
tir.graph @g(%x: tensor<32x64xf16>) -> tensor<32x64xf16> {
  %s = mul %x, %x : tensor<32x64xf16>
  %y = add %s, %x : tensor<32x64xf16>
  results %y : tensor<32x64xf16>
})mlir",
                             {{"threads", 128}, {"elements_per_thread", 8}, {"vector_width", 8}});
  ASSERT_FALSE(k.ptx.empty());
  EXPECT_GE(Count(k.ptx, "cvt.rn.f16.f32"), 16);
  EXPECT_GE(Count(k.ptx, "cvt.f32.f16"), 8);
  // The software f16 conversion's overflow and subnormal thresholds.
  EXPECT_EQ(k.ptx.find(", 1199566848;"), std::string::npos);
  EXPECT_EQ(k.ptx.find(", 947912704;"), std::string::npos);
  EXPECT_EQ(Wide(k.ptx), 0);
}

// Extents that are not powers of two: indices divide by constants, which
// the compiler turns into multiplications (no division instruction at all).
TEST(MemoryBoundPtx, StaticExtentsDivideByConstants) {
  const Compiled pw = Compile(R"mlir(
tir.graph @g(%x: tensor<6x10xf32>, %t: tensor<10x6xf32>) -> tensor<6x10xf32> {
  %tt = transpose %t permutation = [1, 0] : tensor<10x6xf32> -> tensor<6x10xf32>
  %y = add %x, %tt : tensor<6x10xf32>
  results %y : tensor<6x10xf32>
})mlir",
                              {{"threads", 64}, {"elements_per_thread", 2}, {"vector_width", 2}});
  ASSERT_FALSE(pw.ptx.empty());
  EXPECT_EQ(Count(pw.ptx, "div.") - Count(pw.ptx, "div.rn"), 0) << pw.ptx;
  EXPECT_EQ(Count(pw.ptx, "rem."), 0);
  // A reduction over two dims: its element index splits by the constant 10.
  const Compiled red = Compile(R"mlir(
tir.graph @g(%x: tensor<8x6x10xf32>) -> tensor<8x1x1xf32> {
  %s = reduce(%x)<dimensions = [1, 2], reduction_mode = <add>> : tensor<8x6x10xf32> -> tensor<8x1x1xf32>
  results %s : tensor<8x1x1xf32>
})mlir",
                               {{"strategy", 1}, {"threads_per_row", 32}, {"rows_per_block", 2}, {"vector_width", 2},
                                {"split", 1}});
  ASSERT_FALSE(red.ptx.empty());
  EXPECT_EQ(Count(red.ptx, "div.") - Count(red.ptx, "div.rn"), 0);
  EXPECT_EQ(Count(red.ptx, "rem."), 0);
}

// Run-time extents: one test of the point count picks a 32-bit copy of the
// loops; the 64-bit one is only for domains past 2^32 points.
TEST(MemoryBoundPtx, DynamicExtentsTakeA32BitPathWhenTheyFit) {
  const Compiled k = Compile(R"mlir(
tir.graph @g(%x: tensor<?x?xbf16>, %b: tensor<1x?xbf16>) -> tensor<?x?xbf16> {
  %a = add %x, %b : (tensor<?x?xbf16>, tensor<1x?xbf16>) -> tensor<?x?xbf16>
  %r = relu_fwd %a : tensor<?x?xbf16>
  results %r : tensor<?x?xbf16>
})mlir",
                             {{"threads", 256}, {"elements_per_thread", 8}, {"vector_width", 8}});
  ASSERT_FALSE(k.ptx.empty());
  EXPECT_NE(k.source.find("if (total <= 4294967295) {"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("rem_run % (tir_u32)a.dim[1]"), std::string::npos) << k.source;
  EXPECT_GE(Count(k.ptx, "div.u32") + Count(k.ptx, "rem.u32"), 1);
  EXPECT_FALSE(SoftwareBf16Rounding(k.ptx));
}

constexpr const char *kBf16Softmax = R"mlir(
tir.graph @g(%x: tensor<16x2048xbf16>) -> tensor<16x2048xbf16> {
  %m = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<16x2048xbf16> -> tensor<16x1xbf16>
  %s = sub %x, %m : (tensor<16x2048xbf16>, tensor<16x1xbf16>) -> tensor<16x2048xbf16>
  %e = exp %s : tensor<16x2048xbf16>
  %z = reduce(%e)<dimensions = [1], reduction_mode = <add>> : tensor<16x2048xbf16> -> tensor<16x1xbf16>
  %y = div %e, %z : (tensor<16x2048xbf16>, tensor<16x1xbf16>) -> tensor<16x2048xbf16>
  results %y : tensor<16x2048xbf16>
})mlir";

TEST(MemoryBoundPtx, RowResidentBf16SoftmaxComputesExpOnceAndMultipliesByAReciprocal) {
  // 256 threads a row, 16-byte runs: 8 elements a thread.
  const Compiled k = Compile(kBf16Softmax, {{"strategy", 0}, {"threads_per_row", 256}, {"rows_per_block", 1},
                                            {"vector_width", 8}, {"split", 1}});
  ASSERT_FALSE(k.ptx.empty());
  // expf is one ex2.approx an element: computed in the sum pass, kept for
  // the normalize pass.
  EXPECT_EQ(Count(k.ptx, "ex2.approx"), 8) << k.source;
  // One reciprocal a row, no division an element.
  EXPECT_EQ(Count(k.ptx, "div.rn.f32"), 0);
  EXPECT_EQ(Count(k.ptx, "rcp.rn.f32"), 1);
  // Two block reductions, each one round through shared memory: a thread
  // of the first warp reads one partial, every thread reads one result.
  EXPECT_EQ(Count(k.ptx, "bar.sync"), 4);
  EXPECT_LE(Count(k.ptx, "ld.shared"), 4);
  EXPECT_GE(Count(k.ptx, "max.NaN.f32"), 8);
  EXPECT_EQ(Wide(k.ptx), 0);
  EXPECT_FALSE(SoftwareBf16Rounding(k.ptx));
  EXPECT_GE(Count(k.ptx, "cvt.rn.bf16"), 8);
  EXPECT_GE(Count(k.ptx, "ld.global.v4."), 1);
  EXPECT_GE(Count(k.ptx, "st.global.v4."), 1);
}

TEST(MemoryBoundPtx, StreamingRmsNormStoresRunsAndDividesOncePerRow) {
  const Compiled k = Compile(R"mlir(
tir.graph @g(%x: tensor<16x2048xbf16>, %w: tensor<1x2048xbf16>) -> tensor<16x2048xbf16> {
  %sq = mul %x, %x : tensor<16x2048xbf16>
  %ms = reduce(%sq)<dimensions = [1], reduction_mode = <mean>> : tensor<16x2048xbf16> -> tensor<16x1xbf16>
  %eps = constant dense<1.0e-06> : tensor<16x1xbf16>
  %ve = add %ms, %eps : tensor<16x1xbf16>
  %r = rsqrt %ve : tensor<16x1xbf16>
  %n = mul %x, %r : (tensor<16x2048xbf16>, tensor<16x1xbf16>) -> tensor<16x2048xbf16>
  %y = mul %n, %w : (tensor<16x2048xbf16>, tensor<1x2048xbf16>) -> tensor<16x2048xbf16>
  results %y : tensor<16x2048xbf16>
})mlir",
                             {{"strategy", 1}, {"threads_per_row", 256}, {"rows_per_block", 1}, {"vector_width", 8},
                              {"split", 1}});
  ASSERT_FALSE(k.ptx.empty());
  // x is read once in the mean pass (mul %x, %x reads one run) and once in
  // the final pass.
  EXPECT_EQ(Occurrences(k.source, "tir_load_run<8>(a.in0"), 2) << k.source;
  EXPECT_NE(k.source.find("tir_store_run<8>(a.out0"), std::string::npos) << k.source;
  // At most the mean's division, once a row.
  EXPECT_LE(Count(k.ptx, "div.rn.f32"), 1);
  EXPECT_EQ(Wide(k.ptx), 0);
  EXPECT_FALSE(SoftwareBf16Rounding(k.ptx));
  EXPECT_GE(Count(k.ptx, "st.global.v4."), 1);
  EXPECT_GE(Count(k.ptx, "ld.global.v4."), 2);
}

// bf16 tensors whose graphs compute in f32 (convert, f32 math, convert
// back), at the sizes of bench/gpu/suite: what moves through memory is
// bf16, so the planner's default and its top-ranked candidate both move
// rows as runs of 8 elements, one 16-byte load or store each (never the
// 8-byte vectors the f32 arithmetic would give), round bf16 with cvt.rn and
// never divide 64-bit integers.
constexpr const char *kBf16PointwiseF32Math = R"mlir(
tir.graph @g(%x: tensor<16384x8192xbf16>, %b: tensor<1x8192xbf16>) -> tensor<16384x8192xbf16> {
  %xf = convert %x : tensor<16384x8192xbf16> -> tensor<16384x8192xf32>
  %bf = convert %b : tensor<1x8192xbf16> -> tensor<1x8192xf32>
  %a = add %xf, %bf : (tensor<16384x8192xf32>, tensor<1x8192xf32>) -> tensor<16384x8192xf32>
  %g = gelu_approx_tanh_fwd %a : tensor<16384x8192xf32>
  %y = mul %g, %xf : tensor<16384x8192xf32>
  %yb = convert %y : tensor<16384x8192xf32> -> tensor<16384x8192xbf16>
  results %yb : tensor<16384x8192xbf16>
})mlir";

constexpr const char *kBf16RmsNormF32Math = R"mlir(
tir.graph @g(%x: tensor<32768x4096xbf16>, %g: tensor<1x4096xbf16>) -> tensor<32768x4096xbf16> {
  %xf = convert %x : tensor<32768x4096xbf16> -> tensor<32768x4096xf32>
  %gf = convert %g : tensor<1x4096xbf16> -> tensor<1x4096xf32>
  %sq = mul %xf, %xf : tensor<32768x4096xf32>
  %ms = reduce(%sq)<dimensions = [1], reduction_mode = <mean>> : tensor<32768x4096xf32> -> tensor<32768x1xf32>
  %eps = constant dense<1.0e-06> : tensor<32768x1xf32>
  %a = add %ms, %eps : tensor<32768x1xf32>
  %r = rsqrt %a : tensor<32768x1xf32>
  %n = mul %xf, %r : (tensor<32768x4096xf32>, tensor<32768x1xf32>) -> tensor<32768x4096xf32>
  %s = mul %n, %gf : (tensor<32768x4096xf32>, tensor<1x4096xf32>) -> tensor<32768x4096xf32>
  %y = convert %s : tensor<32768x4096xf32> -> tensor<32768x4096xbf16>
  results %y : tensor<32768x4096xbf16>
})mlir";

constexpr const char *kBf16SoftmaxF32Math = R"mlir(
tir.graph @g(%x: tensor<64x4096xbf16>) -> tensor<64x4096xbf16> {
  %xf = convert %x : tensor<64x4096xbf16> -> tensor<64x4096xf32>
  %m = reduce(%xf)<dimensions = [1], reduction_mode = <max>> : tensor<64x4096xf32> -> tensor<64x1xf32>
  %s = sub %xf, %m : (tensor<64x4096xf32>, tensor<64x1xf32>) -> tensor<64x4096xf32>
  %e = exp %s : tensor<64x4096xf32>
  %z = reduce(%e)<dimensions = [1], reduction_mode = <add>> : tensor<64x4096xf32> -> tensor<64x1xf32>
  %p = div %e, %z : (tensor<64x4096xf32>, tensor<64x1xf32>) -> tensor<64x4096xf32>
  %y = convert %p : tensor<64x4096xf32> -> tensor<64x4096xbf16>
  results %y : tensor<64x4096xbf16>
})mlir";

TEST(MemoryBoundPtx, Bf16GraphsComputedInF32MoveSixteenByteRunsByDefaultAndAtTheTop) {
  struct Graph {
    const char *name, *text;
    int inputs;  // bf16 inputs read along the row
  };
  for (const Graph &g : {Graph{"pointwise", kBf16PointwiseF32Math, 2}, Graph{"rms norm", kBf16RmsNormF32Math, 2},
                         Graph{"row-resident softmax", kBf16SoftmaxF32Math, 1}}) {
    for (Pick pick : {Pick::kDefault, Pick::kTopRanked}) {
      SCOPED_TRACE(absl::StrCat(g.name, pick == Pick::kDefault ? ", default candidate" : ", top-ranked candidate"));
      const Compiled k = Compile(g.text, {}, "sm_90a", pick);
      ASSERT_FALSE(k.ptx.empty());
      EXPECT_EQ(k.params.at("vector_width"), 8);
      // Every bf16 input run and the output run move 8 elements at a time.
      for (int i = 0; i < g.inputs; ++i) {
        EXPECT_GE(Occurrences(k.source, absl::StrCat("<8>(a.in", i)), 1) << k.source;
      }
      EXPECT_GE(Occurrences(k.source, "<8>(a.out0"), 1) << k.source;
      const perf::PtxAnalysis mix = perf::AnalyzePtx(k.ptx, perf::Region::kWholeKernel);
      // Loads and stores of the runs: 16 bytes (v4.u32), no 8-byte vectors.
      EXPECT_GE(Count(k.ptx, "ld.global.v4.u32") + Count(k.ptx, "ld.global.nc.v4.u32"), g.inputs);
      EXPECT_GE(Count(k.ptx, "st.global.v4.u32"), 1);
      EXPECT_EQ(mix.whole.global_loads.count(8), 0u) << k.ptx;
      EXPECT_EQ(mix.whole.global_stores.count(8), 0u) << k.ptx;
      EXPECT_FALSE(mix.whole.software_bf16_rounding);
      EXPECT_GE(Count(k.ptx, "cvt.rn.bf16"), 1);
      EXPECT_FALSE(mix.whole.int64_division);
      EXPECT_EQ(Wide(k.ptx), 0);
    }
  }
}

// A run of 8 over a bf16 and an f32 input (a candidate the planner does not
// offer: the f32 run would be 32 bytes): the bf16 run is one 16-byte load,
// the f32 elements are loaded one by one (LanesMixedWidths runs it lane by
// lane against the interpreter).
TEST(MemoryBoundPtx, MixedWidthRunsOfEightCompile) {
  const Compiled k = Compile(R"mlir(
tir.graph @g(%x: tensor<64x256xbf16>, %y: tensor<64x256xf32>) -> tensor<64x256xbf16> {
  %xf = convert %x : tensor<64x256xbf16> -> tensor<64x256xf32>
  %s = add %xf, %y : tensor<64x256xf32>
  %b = convert %s : tensor<64x256xf32> -> tensor<64x256xbf16>
  results %b : tensor<64x256xbf16>
})mlir",
                             {{"threads", 128}, {"elements_per_thread", 8}, {"vector_width", 8}});
  ASSERT_FALSE(k.ptx.empty());
  EXPECT_EQ(Occurrences(k.source, "<8>(a.in0"), 1) << k.source;
  EXPECT_EQ(Occurrences(k.source, "<8>(a.in1"), 0) << k.source;
  EXPECT_GE(Count(k.ptx, "ld.global.v4.u32"), 1);
  EXPECT_GE(Count(k.ptx, "ld.global.f32"), 8);
  EXPECT_GE(Count(k.ptx, "st.global.v4.u32"), 1);
}

}  // namespace
}  // namespace tir::codegen
