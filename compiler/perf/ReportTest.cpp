// Pins the performance report's facts for fixed kernels: a decode GEMM's
// CTAs and its split-K workspace, a prefill GEMM's tile count, the bound of
// a decode GEMM (memory), a 4096^3 bf16 GEMM (tensor) and a bf16 pointwise
// kernel (memory), and the PTX mix's classes.

#include "compiler/perf/Report.h"

#include <iostream>

#include "absl/strings/str_replace.h"
#include "compiler/codegen/Emitter.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/nvrtc/nvrtc_compiler.h"
#include "compiler/planning/Plan.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tir::perf {
namespace {

using ::testing::Contains;
using ::testing::Gt;
using ::testing::HasSubstr;
using ::testing::Key;

struct Planned {
  std::unique_ptr<mlir::MLIRContext> context;
  LoadedGraphs loaded;
  planning::PlannedGraph plan;
  target::ArchInfo device;
};

Planned PlanText(const std::string &text, const std::string &arch = "sm_90a", const std::string &device = "") {
  Planned p;
  p.context = makeTirContext();
  auto loaded = LoadGraphsText(text, p.context.get());
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  p.loaded = std::move(*loaded);
  p.device = *target::LookupDevice(arch, device);
  planning::AnalyticCostModel model;
  auto planned = planning::PlanGraph(p.loaded.graphs.front(), p.device, model, 5);
  EXPECT_TRUE(planned.ok()) << planned.status();
  p.plan = std::move(*planned);
  return p;
}

size_t DefaultOf(const planning::CandidateSpace &space) {
  for (size_t i = 0; i < space.kept.size(); ++i) {
    if (space.kept[i].is_default) return i;
  }
  return 0;
}

std::string Gemm(int m, int n, int k) {
  return absl::StrCat("tir.graph @g(%x: tensor<", m, "x", k, "xbf16>, %w: tensor<", k, "x", n,
                      "xbf16>) -> tensor<", m, "x", n, "xf32> {\n  %m = matmul(%x, %w) : (tensor<", m, "x", k,
                      "xbf16>, tensor<", k, "x", n, "xbf16>) -> tensor<", m, "x", n, "xf32>\n  results %m : tensor<", m,
                      "x", n, "xf32>\n}\n");
}

KernelReport ReportOf(const Planned &p, size_t rank, const Artifact *artifact = nullptr) {
  const planning::KernelFacts facts = planning::ComputeFacts(p.plan.partition.kernels[0]);
  return BuildReport(facts, p.plan.spaces[0].kept[rank], p.device, p.plan.predictions[0][rank], artifact);
}

// The emitted kernel of candidate `rank` and its NVRTC compile for sm_90a.
struct Compiled {
  absl::StatusOr<codegen::EmittedKernel> emitted;
  absl::StatusOr<nvrtc::CompiledKernel> cubin = absl::UnknownError("not compiled");
};
Compiled CompileCandidate(const Planned &p, size_t rank) {
  mlir::OwningOpRef<mlir::ModuleOp> module = planning::BuildPartitionedModule(p.loaded.graphs.front(), p.plan.partition);
  GraphOp kernel;
  for (GraphOp g : module->getOps<GraphOp>()) {
    if (g.getSymName() == "g_k0") kernel = g;
  }
  Compiled out{kernel ? codegen::EmitKernel(kernel, p.plan.spaces[0].kept[rank].params)
                      : absl::NotFoundError("no kernel g_k0")};
  if (!out.emitted.ok()) return out;
  nvrtc::CompileOptions copts;
  copts.arch = "sm_90a";
  copts.headers = codegen::RuntimeHeaders();
  out.cubin = nvrtc::CompileToCubin(out.emitted->source, copts);
  return out;
}

// Tests that a decode GEMM (M = 1, N = K = 4096) fills the machine: its
// default and its top-ranked candidate launch at least 120 CTAs (64 tiles of
// 64 x 64, split-K 2), and the report calls it memory-bound.
TEST(ReportTest, DecodeGemmFillsTheMachineAndIsMemoryBound) {
  Planned p = PlanText(Gemm(1, 4096, 4096));
  for (size_t rank : {DefaultOf(p.plan.spaces[0]), size_t{0}}) {
    const KernelReport r = ReportOf(p, rank);
    EXPECT_GE(r.ctas, 120) << r.candidate;
    EXPECT_EQ(r.bound, "memory") << r.candidate;
  }
  const planning::TileCandidate &d = p.plan.spaces[0].kept[DefaultOf(p.plan.spaces[0])];
  EXPECT_EQ(d.params.at("split_k"), 2);
  EXPECT_EQ(d.Units(), 128);
}

// Tests that a prefill GEMM (M = 512, N = K = 4096) is tiled into >= 120
// tiles rather than 64 tiles of 128 x 256.
TEST(ReportTest, PrefillGemmTilesFillTheMachine) {
  Planned p = PlanText(Gemm(512, 4096, 4096));
  for (size_t rank : {DefaultOf(p.plan.spaces[0]), size_t{0}}) {
    const KernelReport r = ReportOf(p, rank);
    EXPECT_GE(r.work_units, 120) << r.candidate;
    EXPECT_GE(r.ctas, 120) << r.candidate;
  }
}

// Tests that a 4096^3 bf16 GEMM is tensor-bound and that an H200 changes
// the memory figures, not the tensor ones.
TEST(ReportTest, LargeGemmIsTensorBoundAndDevicesDiffer) {
  Planned h100 = PlanText(Gemm(4096, 4096, 4096));
  Planned h200 = PlanText(Gemm(4096, 4096, 4096), "sm_90a", "NVIDIA H200");
  const KernelReport a = ReportOf(h100, 0), b = ReportOf(h200, 0);
  EXPECT_EQ(a.bound, "tensor");
  EXPECT_EQ(b.device, "h200");
  EXPECT_LT(b.memory_roofline_seconds, a.memory_roofline_seconds * 0.75);
  EXPECT_DOUBLE_EQ(b.tensor_seconds, a.tensor_seconds);
  EXPECT_GT(b.bytes_in_flight_needed_per_sm, a.bytes_in_flight_needed_per_sm);
}

// Tests that the 4096^3 default is a 2x1 cluster of 128 x 256 CTAs, that its
// L2-to-SM operand feed at the tensor peak is two thirds of the same tile's
// alone (B multicast: 128 + 256/2 rows a K step, not 128 + 256), and that the
// cost model ranks it ahead of that tile.
TEST(ReportTest, LargeGemmDefaultIsAClusterThatHalvesTheSharedOperandsFeed) {
  Planned p = PlanText(Gemm(4096, 4096, 4096));
  const planning::CandidateSpace &space = p.plan.spaces[0];
  const size_t d = DefaultOf(space);
  const planning::TileCandidate &c = space.kept[d];
  ASSERT_EQ(c.params.at("block_m"), 128);
  ASSERT_EQ(c.params.at("block_n"), 256);
  ASSERT_EQ(c.params.count("cluster_m"), 1u);
  EXPECT_EQ(c.params.at("cluster_m"), 2);
  EXPECT_EQ(c.params.at("stages"), 4);
  ASSERT_EQ(c.params.count("tma_store"), 1u);
  std::map<std::string, int64_t> alone = c.params;
  alone.erase("cluster_m");
  alone.erase("cluster_n");
  size_t solo = space.kept.size();
  for (size_t i = 0; i < space.kept.size(); ++i) {
    if (space.kept[i].params == alone) solo = i;
  }
  ASSERT_LT(solo, space.kept.size()) << "the default's tile without a cluster is in the space";
  const KernelReport clustered = ReportOf(p, d), single = ReportOf(p, solo);
  // 128 x 256 x 64 x 2 flops a K step at 989 TFLOP/s: (128 + 256) x 64 x 2
  // bytes is 11.6 TB/s, (128 + 128) x 64 x 2 bytes 7.7 TB/s.
  EXPECT_NEAR(single.l2_feed_bytes_per_second / 1e12, 11.59, 0.01);
  EXPECT_NEAR(clustered.l2_feed_bytes_per_second / single.l2_feed_bytes_per_second, 2.0 / 3.0, 1e-9);
  EXPECT_GT(clustered.l2_feed_limit, 0);
  EXPECT_LT(p.plan.predictions[0][d].seconds, p.plan.predictions[0][solo].seconds);
  EXPECT_THAT(ReportText(clustered), HasSubstr("operands from L2 at that rate 7.7 TB/s"));
}

// Tests the compiled 4096^3 default: its PTX multicasts B across the
// cluster and stores C with bulk tensor stores, and the report's epilogue is
// the TMA-store path that runs: the direct stores of its fallback (marked in
// the PTX) are left out, so the region stores nothing to global memory and
// counts fewer instructions than the epilogue with the fallback.
TEST(ReportTest, LargeGemmDefaultStoresByTmaAndTheReportCountsThatPath) {
  Planned p = PlanText(Gemm(4096, 4096, 4096));
  const size_t rank = DefaultOf(p.plan.spaces[0]);
  Compiled k = CompileCandidate(p, rank);
  ASSERT_TRUE(k.emitted.ok()) << k.emitted.status();
  ASSERT_TRUE(k.cubin.ok()) << k.cubin.status();
  const nvrtc::CompiledKernel *cubin = &*k.cubin;
  EXPECT_EQ(cubin->spill_bytes, 0);
  EXPECT_THAT(cubin->ptx, HasSubstr("multicast::cluster"));
  EXPECT_THAT(cubin->ptx, HasSubstr("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"));
  EXPECT_THAT(cubin->ptx, HasSubstr("// tir: fallback begin"));
  const Artifact artifact{cubin->registers, cubin->spill_bytes, cubin->shared_bytes, cubin->ptx};
  const KernelReport r = ReportOf(p, rank, &artifact);
  ASSERT_TRUE(r.mix.has_value());
  EXPECT_TRUE(r.mix->fallback_left_out);
  EXPECT_EQ(r.mix->region_name, "epilogue (its fallback left out)");
  EXPECT_EQ(r.mix->region.global_store_bytes, 0);
  EXPECT_GT(r.mix->region.shared_accesses, 0);
  std::string unmarked = cubin->ptx;
  for (const char *note : {"// tir: fallback begin", "// tir: fallback end"}) {
    unmarked = absl::StrReplaceAll(unmarked, {{note, "// fallback"}});
  }
  const PtxAnalysis both = AnalyzePtx(unmarked, Region::kMatmulEpilogue);
  EXPECT_FALSE(both.fallback_left_out);
  EXPECT_GT(both.region.global_store_bytes, 0);
  EXPECT_GT(both.region.Total(), r.mix->region.Total());
  std::cout << ReportText(r);
}

// Tests that the fallback notes are trusted only when they pair up and code
// outside enters a fallback at its start: else nothing is left out and the
// region's name says why.
TEST(ReportTest, FallbackNotesAreCheckedBeforeTheyLeaveCodeOut) {
  const auto ptx = [](const std::string &body) {
    return ".visible .entry k()\n{\n.reg .b32 %r<9>;\n.reg .pred %p<3>;\n"
           "$L_main:\nld.shared.u32 %r1, [%r2];\n@%p1 bra $L_main;\n"
           "st.global.u32 [%r3], %r1;\n" +
           body + "ret;\n}\n";
  };
  const std::string fallback =
      "@%p2 bra $L_after;\n$L_fb:\n// tir: fallback begin\n$L_entry:\nst.global.u32 [%r4], %r1;\n"
      "$L_in:\nst.global.u32 [%r5], %r1;\n// tir: fallback end\n$L_after:\n";
  PtxAnalysis good = AnalyzePtx(ptx(fallback + "@%p2 bra $L_entry;\n"), Region::kMatmulEpilogue);
  EXPECT_TRUE(good.fallback_left_out);
  EXPECT_EQ(good.fallback_problem, "");
  EXPECT_EQ(good.region.global_store_bytes, 4) << "the one store outside the fallback";
  EXPECT_EQ(good.region_name, "epilogue (its fallback left out)");

  const struct {
    std::string body, why;
  } bad[] = {
      {absl::StrReplaceAll(fallback, {{"// tir: fallback end\n", ""}}), "a fallback begins and does not end"},
      {absl::StrReplaceAll(fallback, {{"// tir: fallback begin\n", ""}}), "a fallback ends that did not begin"},
      {"// tir: fallback begin\n" + fallback, "a fallback begins inside another"},
      {fallback + "@%p2 bra $L_in;\n", "a branch from outside a fallback into it ($L_in)"},
  };
  for (const auto &b : bad) {
    SCOPED_TRACE(b.why);
    PtxAnalysis a = AnalyzePtx(ptx(b.body), Region::kMatmulEpilogue);
    EXPECT_FALSE(a.fallback_left_out);
    EXPECT_EQ(a.fallback_problem, b.why);
    EXPECT_EQ(a.region.global_store_bytes, 12) << "every store counted";
    EXPECT_EQ(a.region_name, "epilogue (its fallback counted: " + b.why + ")");
  }
}

// Tests that an unknown device key is refused with its reason and a driver
// name the table does not know falls back to the arch's part.
TEST(ReportTest, DeviceLookup) {
  auto bad = target::LookupDevice("sm_80", "h200");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("not a device of sm_80"));
  auto unknown = target::LookupDevice("sm_90a", "Some Future GPU");
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->device, "h100-sxm");
  EXPECT_EQ(target::LookupDevice("sm_90a", "NVIDIA H100 PCIe")->sm_count, 114);
}

// Tests the PTX mix on a hand-written kernel: classes, vector widths, the
// loop region, 64-bit division and software bf16 rounding.
TEST(ReportTest, PtxMixClassesAndRegions) {
  const std::string ptx = R"(
.visible .entry k(
	.param .u64 k_param_0
)
{
	.reg .b32 	%r<9>;
	ld.param.u64 	%rd1, [k_param_0];
	div.s64 	%rd2, %rd1, %rd3;
$L__BB0_1:
	ld.global.v4.u32 	{%r1, %r2, %r3, %r4}, [%rd1];
	fma.rn.f32 	%f1, %f2, %f3, %f4;
	ex2.approx.ftz.f32 	%f5, %f1;
	setp.gt.u32 	%p2, %r7, 32767;
	add.s32 	%r5, %r6, 32767;
	@%p1 bra 	$L__BB0_1;
	st.global.v2.f32 	[%rd1], {%f1, %f5};
	ret;
}
)";
  const PtxAnalysis whole = AnalyzePtx(ptx, Region::kWholeKernel);
  EXPECT_EQ(whole.loops, 1);
  EXPECT_TRUE(whole.region.int64_division);
  EXPECT_TRUE(whole.region.software_bf16_rounding);
  EXPECT_THAT(whole.region.global_loads, Contains(Key(16)));
  EXPECT_THAT(whole.region.global_stores, Contains(Key(8)));
  const PtxAnalysis compareOnly = AnalyzePtx(absl::StrReplaceAll(ptx, {{"add.s32 \t%r5, %r6, 32767;", ""}}),
                                            Region::kWholeKernel);
  EXPECT_FALSE(compareOnly.region.software_bf16_rounding) << "a compare against 32767 is not rounding";
  const PtxAnalysis loop = AnalyzePtx(ptx, Region::kRowLoops);
  EXPECT_EQ(loop.region_name, "row loop");
  EXPECT_FALSE(loop.region.int64_division);  // the division is outside the loop
  EXPECT_EQ(loop.region.classes.at("mufu"), 1);
  EXPECT_EQ(loop.region.classes.at("fma"), 1);
  EXPECT_EQ(ClassOf("cvt.rn.bf16x2.f32"), "cvt");
  EXPECT_EQ(ClassOf("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16"), "tensor");
  EXPECT_EQ(ClassOf("rem.u64"), "int_div");
}

// Tests the report of the compiled decode GEMM: registers from ptxas, the
// epilogue region found, C stored with vector stores, and the split-K
// workspace in the launch rule.
TEST(ReportTest, CompiledDecodeGemmReport) {
  Planned p = PlanText(Gemm(1, 4096, 4096));
  const size_t rank = DefaultOf(p.plan.spaces[0]);
  Compiled k = CompileCandidate(p, rank);
  ASSERT_TRUE(k.emitted.ok()) << k.emitted.status();
  ASSERT_TRUE(k.emitted->launch.has_workspace_bytes());
  // 64 tiles x (128 tickets x 4 bytes + 2 partial tiles x 64 x 64 x 4 bytes).
  EXPECT_EQ(k.emitted->launch.workspace_bytes().constant(), 128 * 4 + 2 * 64 * 64 * 4);
  ASSERT_TRUE(k.cubin.ok()) << k.cubin.status();
  const nvrtc::CompiledKernel *cubin = &*k.cubin;
  const Artifact artifact{cubin->registers, cubin->spill_bytes, cubin->shared_bytes, cubin->ptx};
  const KernelReport r = ReportOf(p, rank, &artifact);
  EXPECT_EQ(r.registers, cubin->registers);
  ASSERT_TRUE(r.mix.has_value());
  EXPECT_EQ(r.mix->region_name, "epilogue");
  EXPECT_GT(r.mix->region.global_store_bytes, 0);
  // C leaves in 8-byte pairs (two adjacent f32 columns of the fragment).
  EXPECT_THAT(r.mix->region.global_stores, Contains(Key(8)));
  EXPECT_THAT(r.per_element, Contains(Key("st_global")));
  EXPECT_GT(r.issue_seconds, 0);
  EXPECT_THAT(ReportText(r), HasSubstr("bound: memory"));
}

}  // namespace
}  // namespace tir::perf
