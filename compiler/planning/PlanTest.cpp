#include "compiler/planning/Plan.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "compiler/codegen/Emitter.h"

#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/reference/ShapeSolver.h"
#include "compiler/support/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tir::planning {
namespace {

using ::testing::Gt;
using ::testing::HasSubstr;
using ::testing::Not;

class PlanTest : public ::testing::Test {
 protected:
  PlannedGraph Plan(const std::string &text, const std::string &arch = "sm_90a") {
    auto loaded = LoadGraphText(text, ctx_.get());
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    auto p = PlanGraph(loaded->graph, *target::LookupArch(arch), model_, 5);
    last_ = loaded->graph;
    EXPECT_TRUE(p.ok()) << p.status();
    modules_.push_back(std::move(loaded->module));
    return *std::move(p);
  }
  // Kernel graph `k` of the last planned graph.
  GraphOp KernelOf(const PlannedGraph &p, size_t k) {
    modules_.push_back(BuildPartitionedModule(last_, p.partition));
    for (GraphOp g : modules_.back()->getOps<GraphOp>()) {
      if (g.getSymName() == last_.getSymName().str() + "_k" + std::to_string(k)) return g;
    }
    return GraphOp();
  }
  std::unique_ptr<mlir::MLIRContext> ctx_ = makeTirContext();
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> modules_;
  GraphOp last_;
  AnalyticCostModel model_;
};

const char kMatmul4096[] = R"mlir(
tir.graph @mm(%a: tensor<4096x4096xbf16>, %b: tensor<4096x4096xbf16>) -> tensor<4096x4096xf32> {
  %c = matmul(%a, %b) : (tensor<4096x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<4096x4096xf32>
  results %c : tensor<4096x4096xf32>
}
)mlir";

// Graphs covering every kernel kind, aligned and unaligned extents.
const std::vector<std::string> &Corpus() {
  static const auto *graphs = new std::vector<std::string>{
      kMatmul4096,
      R"mlir(
tir.graph @mmodd(%a: tensor<3x100x72xf32>, %b: tensor<3x72x33xf32>) -> tensor<3x100x33xf32> {
  %c = matmul(%a, %b) : (tensor<3x100x72xf32>, tensor<3x72x33xf32>) -> tensor<3x100x33xf32>
  results %c : tensor<3x100x33xf32>
})mlir",
      R"mlir(
tir.graph @pw(%x: tensor<1000x37xf16>, %y: tensor<1000x37xf16>) -> tensor<1000x37xf16> {
  %s = add %x, %y : tensor<1000x37xf16>
  %e = exp %s : tensor<1000x37xf16>
  results %e : tensor<1000x37xf16>
})mlir",
      R"mlir(
tir.graph @pwv(%x: tensor<256x1024xbf16>) -> tensor<256x1024xbf16> {
  %e = tanh_fwd %x : tensor<256x1024xbf16>
  results %e : tensor<256x1024xbf16>
})mlir",
      R"mlir(
tir.graph @rows(%x: tensor<64x8192xf32>) -> tensor<64x8192xf32> {
  %m = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<64x8192xf32> -> tensor<64x1xf32>
  %mb = broadcast %m : tensor<64x1xf32> -> tensor<64x8192xf32>
  %y = sub %x, %mb : tensor<64x8192xf32>
  results %y : tensor<64x8192xf32>
})mlir",
      R"mlir(
tir.graph @cols(%x: tensor<100000x12xf32>) -> tensor<1x12xf32> {
  %s = reduce(%x)<dimensions = [0], reduction_mode = <add>> : tensor<100000x12xf32> -> tensor<1x12xf32>
  results %s : tensor<1x12xf32>
})mlir",
  };
  return *graphs;
}

TEST_F(PlanTest, EveryCandidateForSm90aFitsItsLimits) {
  const target::ArchInfo arch = *target::LookupArch("sm_90a");
  int walked = 0;
  for (const std::string &text : Corpus()) {
    PlannedGraph planned = Plan(text);
    for (size_t k = 0; k < planned.spaces.size(); ++k) {
      const Kernel &kernel = planned.partition.kernels[k];
      const KernelFacts facts = ComputeFacts(kernel);
      int defaults = 0;
      for (const TileCandidate &c : planned.spaces[k].kept) {
        ++walked;
        defaults += c.is_default;
        std::string why;
        EXPECT_TRUE(WithinLimits(c, arch, &why)) << why;
        EXPECT_LE(c.threads, 1024);
        EXPECT_LE(c.shared_bytes, 232448);
        EXPECT_LE(c.registers_per_thread, 255);
        EXPECT_LE(int64_t{c.registers_per_thread} * c.threads, 65536);
        if (c.params.count("vector_width")) {
          const int64_t vec = c.params.at("vector_width");
          EXPECT_LE(vec * facts.io_bytes, 16);
          if (kernel.space.kind == KernelKind::kPointwise) {
            EXPECT_EQ(facts.innermost % vec, 0);
          }
        }
        if (kernel.space.kind == KernelKind::kMatmul && c.params.count("wgmma")) {
          // The Hopper form: 64-row wgmma tiles per consumer, 64-column TMA
          // boxes, stages of A and B tiles (128-byte rows) aligned to 1 KiB.
          EXPECT_EQ(c.params.at("block_m") % (64 * c.params.at("consumers")), 0);
          EXPECT_EQ(c.params.at("block_n") % 64, 0);
          EXPECT_EQ(c.params.at("block_k"), 64);
          EXPECT_EQ(c.threads, 128 * (c.params.at("consumers") + 1));
          // With tma_store each consumer's two 8 KiB output slots come
          // after the mbarriers' KiB.
          const int64_t stagesBytes =
              1024 + c.params.at("stages") * (c.params.at("block_m") + c.params.at("block_n")) * 128;
          if (c.params.count("tma_store")) {
            EXPECT_GT(facts.tma_store_bytes, 0);
            EXPECT_EQ(c.params.at("split_k"), 1);
            EXPECT_EQ(c.shared_bytes, stagesBytes + 1024 + c.params.at("consumers") * 2 * 8192);
          } else {
            EXPECT_EQ(c.shared_bytes, stagesBytes + c.params.at("stages") * 16);
          }
        } else if (kernel.space.kind == KernelKind::kMatmul) {
          EXPECT_EQ(c.params.at("block_m") % 16, 0);
          EXPECT_EQ(c.params.at("block_n") % 8, 0);
          EXPECT_EQ(c.params.at("block_k") % (facts.tf32 ? 8 : 16), 0);
          EXPECT_EQ(c.shared_bytes, c.params.at("stages") *
                                        (c.params.at("block_m") * c.params.at("block_k") +
                                         c.params.at("block_k") * c.params.at("block_n")) *
                                        facts.operand_bytes);
        }
      }
      EXPECT_EQ(defaults, 1) << kernel.space.ToString();
    }
  }
  EXPECT_GT(walked, 500);
}

TEST_F(PlanTest, Bf16Matmul4096HasAtLeastFiftyCandidatesAfterPruning) {
  PlannedGraph p = Plan(kMatmul4096);
  ASSERT_EQ(p.plan.kernels_size(), 1);
  EXPECT_GE(p.plan.kernels(0).candidates_after_pruning(), 50u);
  EXPECT_LT(p.plan.kernels(0).candidates_after_pruning(), p.plan.kernels(0).candidates_before_pruning());
}

TEST_F(PlanTest, CandidatesAreRankedAndCarryTheModelInputs) {
  PlannedGraph p = Plan(kMatmul4096);
  const tir::v1::KernelPlan &k = p.plan.kernels(0);
  ASSERT_EQ(k.top_size(), 5);
  for (int i = 1; i < k.top_size(); ++i) EXPECT_LE(k.top(i - 1).predicted_seconds(), k.top(i).predicted_seconds());
  EXPECT_LE(k.top(0).predicted_seconds(), k.default_candidate().predicted_seconds());
  for (const char *input : {"bytes", "flops", "blocks", "waves", "edge_waste", "memory_seconds", "compute_seconds"}) {
    EXPECT_TRUE(k.top(0).model_inputs().count(input)) << input;
  }
  // 2 * 4096^3 flops, and at least the operands and result in bytes.
  EXPECT_DOUBLE_EQ(k.top(0).model_inputs().at("flops"), 2.0 * 4096 * 4096 * 4096);
  EXPECT_GE(k.top(0).model_inputs().at("bytes"), 2.0 * 4096 * 4096 * 2 + 4096.0 * 4096 * 4);
  // Within a factor of the bf16 wgmma roofline (2*4096^3 / 989e12 = 139 us, the datasheet's dense rate).
  EXPECT_GT(k.top(0).predicted_seconds(), 2.0 * 4096 * 4096 * 4096 / 989e12);
  EXPECT_LT(k.top(0).predicted_seconds(), 3 * 2.0 * 4096 * 4096 * 4096 / 989e12);
}

TEST_F(PlanTest, MemoryBoundPointwiseIsPredictedNearBandwidth) {
  PlannedGraph p = Plan(Corpus()[3]);
  const double bytes = 2.0 * 256 * 1024 * 2;  // read + write bf16
  const double floor = bytes / 3350e9;
  EXPECT_GT(p.plan.kernels(0).top(0).predicted_seconds(), floor);
}

TEST_F(PlanTest, FewLongRowsPreferSplittingRowsAcrossBlocks) {
  PlannedGraph p = Plan(R"mlir(
tir.graph @few(%x: tensor<2x4194304xf32>) -> tensor<2x1xf32> {
  %s = reduce(%x)<dimensions = [1], reduction_mode = <add>> : tensor<2x4194304xf32> -> tensor<2x1xf32>
  results %s : tensor<2x1xf32>
})mlir");
  EXPECT_EQ(p.plan.kernels(0).top(0).params().at("strategy"), 2) << "split across blocks";
  // What runs is split: split blocks a row, a workspace for the partials.
  GraphOp kernel = KernelOf(p, 0);
  const auto &top = p.plan.kernels(0).top(0).params();
  auto e = codegen::EmitKernel(kernel, std::map<std::string, int64_t>(top.begin(), top.end()));
  ASSERT_TRUE(e.ok()) << e.status();
  const int64_t blocks = e->launch.grid(0).constant() * 2 / std::max<int64_t>(1, e->launch.grid(0).divisor());
  EXPECT_EQ(blocks, 2 * top.at("split"));
  EXPECT_GT(blocks, 2);
  EXPECT_TRUE(e->launch.has_workspace_bytes());
  EXPECT_THAT(e->source, HasSubstr("tir_ticket"));
}

// bf16 tensors computed in f32 move bf16: runs of 8 (16 bytes) by default
// and at the top of the ranking, while registers are counted for the f32
// values. A kernel that moves f32 keeps f32's 16-byte runs of 4.
TEST_F(PlanTest, Bf16TensorsComputedInF32MoveSixteenByteRuns) {
  const std::vector<std::pair<std::string, std::string>> graphs = {
      {"pointwise", R"mlir(
tir.graph @pw(%x: tensor<16384x8192xbf16>, %b: tensor<1x8192xbf16>) -> tensor<16384x8192xbf16> {
  %xf = convert %x : tensor<16384x8192xbf16> -> tensor<16384x8192xf32>
  %bf = convert %b : tensor<1x8192xbf16> -> tensor<1x8192xf32>
  %a = add %xf, %bf : (tensor<16384x8192xf32>, tensor<1x8192xf32>) -> tensor<16384x8192xf32>
  %g = gelu_approx_tanh_fwd %a : tensor<16384x8192xf32>
  %y = mul %g, %xf : tensor<16384x8192xf32>
  %yb = convert %y : tensor<16384x8192xf32> -> tensor<16384x8192xbf16>
  results %yb : tensor<16384x8192xbf16>
})mlir"},
      {"rms norm", R"mlir(
tir.graph @rms(%x: tensor<32768x4096xbf16>, %g: tensor<1x4096xbf16>) -> tensor<32768x4096xbf16> {
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
})mlir"},
      {"softmax", R"mlir(
tir.graph @sm(%x: tensor<64x4096xbf16>) -> tensor<64x4096xbf16> {
  %xf = convert %x : tensor<64x4096xbf16> -> tensor<64x4096xf32>
  %m = reduce(%xf)<dimensions = [1], reduction_mode = <max>> : tensor<64x4096xf32> -> tensor<64x1xf32>
  %s = sub %xf, %m : (tensor<64x4096xf32>, tensor<64x1xf32>) -> tensor<64x4096xf32>
  %e = exp %s : tensor<64x4096xf32>
  %z = reduce(%e)<dimensions = [1], reduction_mode = <add>> : tensor<64x4096xf32> -> tensor<64x1xf32>
  %p = div %e, %z : (tensor<64x4096xf32>, tensor<64x1xf32>) -> tensor<64x4096xf32>
  %y = convert %p : tensor<64x4096xf32> -> tensor<64x4096xbf16>
  results %y : tensor<64x4096xbf16>
})mlir"},
  };
  for (const auto &[name, text] : graphs) {
    SCOPED_TRACE(name);
    PlannedGraph p = Plan(text);
    ASSERT_EQ(p.plan.kernels_size(), 1);
    const KernelFacts facts = ComputeFacts(p.partition.kernels[0]);
    EXPECT_EQ(facts.element_bytes, 4);
    EXPECT_EQ(facts.io_bytes, 2);
    EXPECT_EQ(p.plan.kernels(0).default_candidate().params().at("vector_width"), 8);
    EXPECT_EQ(p.plan.kernels(0).top(0).params().at("vector_width"), 8);
    if (name == "pointwise") continue;
    // Row-resident, rows read once: the default caches the row at 8 lanes.
    EXPECT_EQ(p.plan.kernels(0).default_candidate().params().at("strategy"), 0);
    EXPECT_EQ(p.plan.kernels(0).top(0).params().at("strategy"), 0);
    // Registers at the compute width: 8 cached f32 values a row input and
    // a thread, and a run of 8 as bf16 and as f32 (12 registers) an input.
    const int inputs = name == "rms norm" ? 2 : 1;
    int matched = 0;
    for (const TileCandidate &c : p.spaces[0].kept) {
      if (c.params.at("strategy") != 0 || c.params.at("vector_width") != 8 || c.params.at("threads_per_row") != 512 ||
          c.params.at("rows_per_block") != 1) {
        continue;
      }
      EXPECT_EQ(c.registers_per_thread, 24 + 8 * inputs + 12 * inputs);
      ++matched;
    }
    EXPECT_GT(matched, 0) << "no row-resident candidate of 512 threads a row and runs of 8";
  }
  // bf16 in, f32 out: the f32 output moves, 16 bytes of it are 4 lanes.
  PlannedGraph wide = Plan(R"mlir(
tir.graph @wide(%x: tensor<1024x1024xbf16>) -> tensor<1024x1024xf32> {
  %xf = convert %x : tensor<1024x1024xbf16> -> tensor<1024x1024xf32>
  %e = exp %xf : tensor<1024x1024xf32>
  results %e : tensor<1024x1024xf32>
})mlir");
  EXPECT_EQ(ComputeFacts(wide.partition.kernels[0]).io_bytes, 4);
  EXPECT_EQ(wide.plan.kernels(0).default_candidate().params().at("vector_width"), 4);
  for (const TileCandidate &c : wide.spaces[0].kept) EXPECT_LE(c.params.at("vector_width"), 4);
  // The host keeps its 8 lanes: bytes moving as i8 would allow 16.
  PlannedGraph host = Plan(R"mlir(
tir.graph @bytes(%x: tensor<64x1024xsi8>) -> tensor<64x1024xsi8> {
  %y = add %x, %x : tensor<64x1024xsi8>
  results %y : tensor<64x1024xsi8>
})mlir",
                           "host");
  EXPECT_EQ(host.plan.kernels(0).default_candidate().params().at("vector_width"), 8);
  for (const TileCandidate &c : host.spaces[0].kept) EXPECT_LE(c.params.at("vector_width"), 8);
}

TEST_F(PlanTest, ConvertedBf16OperandsTakeTensorCores) {
  // How frameworks often write it: bf16 weights converted to f32 first.
  const std::string text = R"mlir(
tir.graph @mlp(%x: tensor<512x512xbf16>, %w: tensor<512x512xbf16>) -> tensor<512x512xf32> {
  %xf = convert %x : tensor<512x512xbf16> -> tensor<512x512xf32>
  %wf = convert %w : tensor<512x512xbf16> -> tensor<512x512xf32>
  %y = matmul(%xf, %wf) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  results %y : tensor<512x512xf32>
})mlir";
  // sm_80: mma.sync on cp.async-pipelined 16-bit tiles.
  PlannedGraph p = Plan(text, "sm_80");
  ASSERT_EQ(p.plan.kernels_size(), 1);
  GraphOp kernel = KernelOf(p, 0);
  for (int i = 0; i < p.plan.kernels(0).top_size(); ++i) {
    const auto &params = p.plan.kernels(0).top(i).params();
    auto e = codegen::EmitKernel(kernel, std::map<std::string, int64_t>(params.begin(), params.end()));
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_THAT(e->source, HasSubstr("tir_mma_m16n8k16_bf16"));
    EXPECT_THAT(e->source, HasSubstr("tir_cp_async16")) << "the 16-bit inputs are copied as they are";
    EXPECT_GE(params.at("stages"), 2);
  }
  // sm_90a: wgmma on the bf16 inputs loaded by TMA as they are.
  PlannedGraph h = Plan(text, "sm_90a");
  ASSERT_EQ(h.plan.kernels_size(), 1);
  GraphOp hk = KernelOf(h, 0);
  for (int i = 0; i < h.plan.kernels(0).top_size(); ++i) {
    const auto &params = h.plan.kernels(0).top(i).params();
    EXPECT_EQ(params.at("wgmma"), 1);
    auto e = codegen::EmitKernel(hk, std::map<std::string, int64_t>(params.begin(), params.end()));
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_THAT(e->source, HasSubstr("tir_wgmma_m64k16_bf16<"));
    EXPECT_THAT(e->source, HasSubstr("tir_tma_load_2d(As"));
    // A in one box of 64 K x block_m rows.
    EXPECT_THAT(e->source, HasSubstr(absl::StrCat("tir_tensor_map tmap0_64x", params.at("block_m"), ";")));
  }
}

TEST_F(PlanTest, HopperMatmulSpaceIsPrunedByTheSm90aLimits) {
  PlannedGraph p = Plan(R"mlir(
tir.graph @mm(%a: tensor<4096x4096xbf16>, %b: tensor<4096x4096xbf16>) -> tensor<4096x4096xf32> {
  %c = matmul(%a, %b) : (tensor<4096x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<4096x4096xf32>
  results %c : tensor<4096x4096xf32>
})mlir");
  const auto &space = p.spaces[0];
  std::set<std::vector<int64_t>> shapes;
  bool twoConsumers = false, persistentAndNot[2] = {false, false};
  for (const auto &c : space.kept) {
    const auto &q = c.params;
    ASSERT_EQ(q.at("wgmma"), 1);
    // 228 KiB a block at most, 128 accumulators a consumer thread.
    EXPECT_LE(c.shared_bytes, 232448);
    EXPECT_LE(q.at("block_m") / q.at("consumers") / 64 * q.at("block_n") / 2, 128);
    shapes.insert({q.at("block_m"), q.at("block_n")});
    twoConsumers |= q.at("consumers") == 2;
    persistentAndNot[q.at("persistent")] = true;
  }
  for (std::vector<int64_t> want : {std::vector<int64_t>{128, 128}, {128, 256}, {256, 128}, {64, 256}}) {
    EXPECT_TRUE(shapes.count(want)) << want[0] << "x" << want[1];
  }
  EXPECT_TRUE(twoConsumers && persistentAndNot[0] && persistentAndNot[1]);
  EXPECT_GT(space.pruned.count("shared memory above the per-block limit"), 0u);
  EXPECT_GT(space.pruned.count("more than 128 accumulators a consumer thread"), 0u);
  // The cost model prefers big warpgroup tiles, two consumers and deep pipelines at 4096^3.
  const auto &top = p.plan.kernels(0).top(0).params();
  EXPECT_GE(top.at("block_m") * top.at("block_n"), 128 * 128);
  EXPECT_EQ(top.at("consumers"), 2);
  EXPECT_GE(top.at("stages"), 4);
}

// Prefill-sized GEMMs whose fastest-predicted tile leaves SMs idle (M=200,
// N=5120: 108 tiles of 64 x 192 on 132 SMs; M=384, N=3072: 96 of 64 x 192):
// the default and the top-ranked candidate both give the machine 120 work
// units or more, and the underfilled candidates stay in the space, ranked
// after every one that fills it.
TEST_F(PlanTest, GpuMatmulsRankCandidatesThatFillTheMachineFirst) {
  struct Shape {
    int64_t m, n, k;
  };
  for (Shape s : {Shape{200, 5120, 5120}, Shape{384, 3072, 768}, Shape{256, 14336, 4096}}) {
    SCOPED_TRACE(absl::StrCat("M=", s.m, " N=", s.n, " K=", s.k));
    const std::string a = absl::StrCat(s.m, "x", s.k), b = absl::StrCat(s.k, "x", s.n), c = absl::StrCat(s.m, "x", s.n);
    PlannedGraph p = Plan(absl::StrCat("tir.graph @mm(%a: tensor<", a, "xbf16>, %b: tensor<", b, "xbf16>) -> tensor<", c,
                                       "xf32> {\n  %c = matmul(%a, %b) : (tensor<", a, "xbf16>, tensor<", b,
                                       "xbf16>) -> tensor<", c, "xf32>\n  results %c : tensor<", c, "xf32>\n}"));
    const target::ArchInfo arch = *target::LookupArch("sm_90a");
    ASSERT_EQ(FillUnits(arch), 120);
    const std::vector<TileCandidate> &kept = p.spaces[0].kept;
    ASSERT_FALSE(kept.empty());
    EXPECT_GE(kept[0].Units(), 120);
    int underfilled = 0;
    bool seenUnder = false;
    for (const TileCandidate &t : kept) {
      if (t.is_default) EXPECT_GE(t.Units(), 120);
      if (t.Units() < 120) {
        ++underfilled;
        seenUnder = true;
      } else {
        EXPECT_FALSE(seenUnder) << "a candidate that fills the machine ranked after one that does not";
      }
    }
    EXPECT_GT(underfilled, 0);
  }
}

TEST_F(PlanTest, F32MatmulIsARegisterTiledKernelThatHonoursItsTile) {
  PlannedGraph p = Plan(R"mlir(
tir.graph @mm(%a: tensor<512x512xf32>, %b: tensor<512x512xf32>) -> tensor<512x512xf32> {
  %c = matmul(%a, %b) : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  results %c : tensor<512x512xf32>
})mlir");
  GraphOp kernel = KernelOf(p, 0);
  std::map<std::string, int64_t> params = {{"block_m", 64}, {"block_n", 64}, {"block_k", 16}, {"warps", 4},
                                           {"stages", 2},   {"split_k", 1},  {"group_m", 8}};
  auto base = codegen::EmitKernel(kernel, params);
  ASSERT_TRUE(base.ok()) << base.status();
  EXPECT_THAT(base->source, HasSubstr("acc[4][8]")) << "a 4 x 8 register tile a thread";
  EXPECT_THAT(base->source, Not(HasSubstr("tir_mma"))) << "f32 stays f32 without a precision option";
  for (const char *field : {"block_k", "stages", "warps"}) {
    std::map<std::string, int64_t> other = params;
    other[field] = field == std::string("stages") ? 1 : field == std::string("warps") ? 2 : 32;
    auto e = codegen::EmitKernel(kernel, other);
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_NE(e->source, base->source) << field << " changes the kernel";
  }
  for (const TileCandidate &c : p.spaces[0].kept) EXPECT_LE(c.params.at("stages"), 2);
}

TEST_F(PlanTest, Tf32OnlyWhenAskedFor) {
  const char *text = R"mlir(
tir.graph @mm(%a: tensor<256x256xf32>, %b: tensor<256x256xf32>) -> tensor<256x256xf32> {
  %c = matmul(%a, %b) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  results %c : tensor<256x256xf32>
})mlir";
  PlannedGraph ieee = Plan(text);
  for (const TileCandidate &c : ieee.spaces[0].kept) EXPECT_EQ(c.params.count("tf32"), 0u);
  auto loaded = LoadGraphText(text, ctx_.get());
  ASSERT_TRUE(loaded.ok());
  last_ = loaded->graph;
  auto tf32 = PlanGraph(loaded->graph, *target::LookupArch("sm_80"), model_, 5, PlanOptions{"tf32"});
  ASSERT_TRUE(tf32.ok()) << tf32.status();
  EXPECT_EQ(tf32->plan.precision(), "tf32");
  GraphOp kernel = KernelOf(*tf32, 0);
  ASSERT_FALSE(tf32->spaces[0].kept.empty());
  for (const TileCandidate &c : tf32->spaces[0].kept) {
    EXPECT_EQ(c.params.at("tf32"), 1);
    EXPECT_EQ(c.params.at("block_k") % 8, 0);
  }
  auto e = codegen::EmitKernel(kernel, tf32->spaces[0].kept[0].params);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_THAT(e->source, HasSubstr("tir_mma_m16n8k8_tf32"));
  EXPECT_THAT(e->source, HasSubstr("tir_to_tf32"));
  // The host has no tensor cores: f32 stays f32 there.
  auto host = PlanGraph(loaded->graph, *target::LookupArch("host"), model_, 5, PlanOptions{"tf32"});
  ASSERT_TRUE(host.ok());
  for (const TileCandidate &c : host->spaces[0].kept) EXPECT_EQ(c.params.count("tf32"), 0u);
  EXPECT_FALSE(PlanGraph(loaded->graph, *target::LookupArch("sm_80"), model_, 5, PlanOptions{"fp8"}).ok());
  modules_.push_back(std::move(loaded->module));
}

TEST_F(PlanTest, RowResidentSoftmaxReadsEachRowOnce) {
  PlannedGraph p = Plan(R"mlir(
tir.graph @softmax(%x: tensor<32x4096xf32>) -> tensor<32x4096xf32> {
  %m = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<32x4096xf32> -> tensor<32x1xf32>
  %mb = broadcast %m : tensor<32x1xf32> -> tensor<32x4096xf32>
  %s = sub %x, %mb : tensor<32x4096xf32>
  %e = exp %s : tensor<32x4096xf32>
  %z = reduce(%e)<dimensions = [1], reduction_mode = <add>> : tensor<32x4096xf32> -> tensor<32x1xf32>
  %zb = broadcast %z : tensor<32x1xf32> -> tensor<32x4096xf32>
  %y = div %e, %zb : tensor<32x4096xf32>
  results %y : tensor<32x4096xf32>
})mlir");
  ASSERT_EQ(p.plan.kernels_size(), 1);
  GraphOp kernel = KernelOf(p, 0);
  const auto &def = p.plan.kernels(0).default_candidate().params();
  EXPECT_EQ(def.at("strategy"), 0);
  auto e = codegen::EmitKernel(kernel, std::map<std::string, int64_t>(def.begin(), def.end()));
  ASSERT_TRUE(e.ok()) << e.status();
  // One read of x (into the register cache), however many passes use it.
  const std::string body = e->source.substr(0, e->source.find("#if TIR_EMULATE"));
  size_t reads = 0;
  for (size_t at = body.find("a.in0"); at != std::string::npos; at = body.find("a.in0", at + 1)) {
    if (body.compare(at, 6, "a.in0_") != 0) ++reads;
  }
  EXPECT_EQ(reads, 1u) << body;
  // The streaming form of the same kernel reads x in each of its 3 passes.
  std::map<std::string, int64_t> streaming(def.begin(), def.end());
  streaming["strategy"] = 1;
  auto s = codegen::EmitKernel(kernel, streaming);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(s->source, Not(HasSubstr("rc_n")));
}

TEST_F(PlanTest, ColumnReductionsPutThreadsAlongTheKeptDim) {
  PlannedGraph p = Plan(R"mlir(
tir.graph @col(%x: tensor<4096x1024xf32>) -> tensor<1x1024xf32> {
  %s = reduce(%x)<dimensions = [0], reduction_mode = <add>> : tensor<4096x1024xf32> -> tensor<1x1024xf32>
  results %s : tensor<1x1024xf32>
})mlir");
  GraphOp kernel = KernelOf(p, 0);
  for (const TileCandidate &c : p.spaces[0].kept) {
    EXPECT_EQ(c.params.at("vector_width"), 1);
    EXPECT_GE(c.params.at("rows_per_block"), 32) << "a warp takes consecutive kept elements";
  }
  const auto &top = p.plan.kernels(0).top(0).params();
  auto e = codegen::EmitKernel(kernel, std::map<std::string, int64_t>(top.begin(), top.end()));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_THAT(e->source, HasSubstr("threadIdx.x % rpb"));
}

TEST_F(PlanTest, EveryArchPlansEveryKind) {
  for (const target::ArchInfo &arch : target::AllArchs()) {
    for (const std::string &text : Corpus()) {
      PlannedGraph p = Plan(text, arch.name);
      for (const auto &k : p.plan.kernels()) {
        EXPECT_THAT(k.candidates_after_pruning(), Gt(0u)) << arch.name << " " << k.iteration_space();
        EXPECT_TRUE(k.has_default_candidate());
      }
    }
  }
}

// A domain no tile can grid (2^48 points: more blocks than a grid holds at
// any tile) is refused when planned, naming the kernel and why: not left
// for a later stage to find nothing to compile (which answered INTERNAL).
TEST_F(PlanTest, AKernelNoTileCanRunIsRefusedWithWhy) {
  auto loaded = LoadGraphText(R"mlir(
tir.graph @b(%x: tensor<1x1xf32>) -> tensor<16777216x16777216xf32> {
  %y = broadcast %x : tensor<1x1xf32> -> tensor<16777216x16777216xf32>
  results %y : tensor<16777216x16777216xf32>
})mlir",
                              ctx_.get());
  ASSERT_TRUE(loaded.ok()) << loaded.status() << " (2^48 elements is within the type's limit)";
  for (const target::ArchInfo &arch : target::AllArchs()) {
    auto p = PlanGraph(loaded->graph, arch, model_, 5);
    ASSERT_FALSE(p.ok()) << arch.name;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << arch.name;
    EXPECT_EQ(ReasonOf(p.status()), "LIMIT_EXCEEDED") << arch.name;
    EXPECT_THAT(p.status().message(), HasSubstr("kernel 0 (pointwise [16777216, 16777216]) has no tile"));
    EXPECT_THAT(p.status().message(), HasSubstr("more blocks than a grid holds"));
  }
}

TEST_F(PlanTest, TinyReductionsKeepCandidatesOnEveryArch) {
  for (const target::ArchInfo &arch : target::AllArchs()) {
    for (const char *text : {R"mlir(
tir.graph @r(%x: tensor<64x4xf32>) -> tensor<64x1xf32> {
  %s = reduce(%x)<dimensions = [1], reduction_mode = <add>> : tensor<64x4xf32> -> tensor<64x1xf32>
  results %s : tensor<64x1xf32>
})mlir",
                             R"mlir(
tir.graph @c(%x: tensor<3x5xf32>) -> tensor<1x5xf32> {
  %s = reduce(%x)<dimensions = [0], reduction_mode = <max>> : tensor<3x5xf32> -> tensor<1x5xf32>
  results %s : tensor<1x5xf32>
})mlir"}) {
      PlannedGraph p = Plan(text, arch.name);
      EXPECT_GT(p.plan.kernels(0).candidates_after_pruning(), 0u) << arch.name << " " << text;
      EXPECT_TRUE(p.plan.kernels(0).has_default_candidate());
    }
  }
}

TEST_F(PlanTest, TheGraphsTileBecomesTheDefaultCandidate) {
  // A pointwise tile of 512 points: blocks of threads x elements_per_thread.
  PlannedGraph pw = Plan(R"mlir(
nv_tensor_ir.graph @pw(%x: tensor<64x64xf32>) -> tensor<64x64xf32> attributes {tile_size = array<i32: 8, 64>} {
  %y = exp %x : tensor<64x64xf32>
  results %y : tensor<64x64xf32>
}
)mlir");
  const TileCandidate *def = nullptr;
  for (const TileCandidate &c : pw.spaces[0].kept) {
    if (c.is_default) def = &c;
  }
  ASSERT_NE(def, nullptr);
  EXPECT_EQ(def->params.at("threads") * def->params.at("elements_per_thread"), 512);
  EXPECT_THAT(pw.plan.kernels(0).user_tile(), ::testing::HasSubstr("tile_size [8, 64] became the default candidate"));
  EXPECT_EQ(pw.plan.kernels(0).default_candidate().params().at("threads") *
                pw.plan.kernels(0).default_candidate().params().at("elements_per_thread"),
            512);
  // A reduction's tile is rows a block; reduction_tile_size the chunk of a row.
  PlannedGraph red = Plan(R"mlir(
nv_tensor_ir.graph @red(%x: tensor<64x1024xf32>) -> tensor<64x1xf32>
    attributes {tile_size = array<i32: 4>, reduction_tile_size = 256 : i64} {
  %s = reduce(%x) <dimensions = [1], reduction_mode = <add>> : tensor<64x1024xf32> -> tensor<64x1xf32>
  results %s : tensor<64x1xf32>
}
)mlir");
  const auto &rd = red.plan.kernels(0).default_candidate().params();
  EXPECT_EQ(rd.at("rows_per_block"), 4);
  EXPECT_EQ(rd.at("threads_per_row") * rd.at("vector_width"), 256);
  // A matmul's is [batch..., M, N]; tile_candidates[0] counts when there is
  // no tile_size.
  PlannedGraph mm = Plan(R"mlir(
nv_tensor_ir.graph @mm(%a: tensor<256x128xbf16>, %b: tensor<128x256xbf16>) -> tensor<256x256xf32>
    attributes {tile_candidates = [array<i32: 64, 128>, array<i32: 32, 32>]} {
  %c = matmul(%a, %b) : (tensor<256x128xbf16>, tensor<128x256xbf16>) -> tensor<256x256xf32>
  results %c : tensor<256x256xf32>
}
)mlir");
  const auto &md = mm.plan.kernels(0).default_candidate().params();
  EXPECT_EQ(md.at("block_m"), 64);
  EXPECT_EQ(md.at("block_n"), 128);
  EXPECT_THAT(mm.plan.kernels(0).user_tile(), ::testing::HasSubstr("tile_candidates[0] [64, 128]"));
  EXPECT_THAT(PlanToText(mm.plan), ::testing::HasSubstr("user tile: tile_candidates[0] [64, 128] became"));
}

TEST_F(PlanTest, ATileThatCannotRunIsNotHonouredAndSaysWhy) {
  // A 7-row M tile is not a multiple of mma.sync's 16-row shape on sm_80;
  // on sm_90a it becomes the smallest wgmma tile holding it.
  PlannedGraph hopper = Plan(R"mlir(
nv_tensor_ir.graph @mm(%a: tensor<64x64xbf16>, %b: tensor<64x64xbf16>) -> tensor<64x64xf32>
    attributes {tile_size = array<i32: 7, 64>} {
  %c = matmul(%a, %b) : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xf32>
  results %c : tensor<64x64xf32>
}
)mlir");
  EXPECT_THAT(hopper.plan.kernels(0).user_tile(),
              ::testing::HasSubstr("tile_size [7, 64] became the default candidate block_k=64 block_m=64 block_n=64"));
  EXPECT_THAT(hopper.plan.kernels(0).user_tile(), ::testing::HasSubstr("rounded up to 64x64"));
  PlannedGraph mm = Plan(R"mlir(
nv_tensor_ir.graph @mm(%a: tensor<64x64xbf16>, %b: tensor<64x64xbf16>) -> tensor<64x64xf32>
    attributes {tile_size = array<i32: 7, 64>} {
  %c = matmul(%a, %b) : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xf32>
  results %c : tensor<64x64xf32>
}
)mlir", "sm_80");
  EXPECT_THAT(mm.plan.kernels(0).user_tile(),
              ::testing::HasSubstr("tile_size [7, 64] is not honoured: tile not a multiple of the mma.sync shape"));
  EXPECT_NE(mm.plan.kernels(0).default_candidate().params().at("block_m"), 7);
  // The graph without the tile has the same default.
  PlannedGraph plain = Plan(R"mlir(
tir.graph @mm(%a: tensor<64x64xbf16>, %b: tensor<64x64xbf16>) -> tensor<64x64xf32> {
  %c = matmul(%a, %b) : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xf32>
  results %c : tensor<64x64xf32>
}
)mlir", "sm_80");
  const auto &a = mm.plan.kernels(0).default_candidate().params(), &b = plain.plan.kernels(0).default_candidate().params();
  using Params = std::map<std::string, int64_t>;
  EXPECT_EQ(Params(a.begin(), a.end()), Params(b.begin(), b.end()));
  EXPECT_TRUE(plain.plan.kernels(0).user_tile().empty());
}

TEST_F(PlanTest, ADynamicGraphIsRankedAtTheSizesItIsTunedAt) {
  const std::string text = R"mlir(
tir.graph @lin(%x: tensor<?x1024xbf16>, %w: tensor<1024x1024xbf16>) -> tensor<?x1024xf32> {
  %m = matmul(%x, %w) : (tensor<?x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<?x1024xf32>
  results %m : tensor<?x1024xf32>
})mlir";
  auto loaded = LoadGraphText(text, ctx_.get());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const target::ArchInfo arch = *target::LookupArch("sm_90a");
  const std::vector<std::vector<int64_t>> decode = {{4, 1024}, {1024, 1024}};
  PlanOptions o;
  o.shapes = &decode;
  auto sized = PlanGraph(loaded->graph, arch, model_, 5, o);
  auto assumed = PlanGraph(loaded->graph, arch, model_, 5);
  ASSERT_TRUE(sized.ok() && assumed.ok());
  const ValueShapeMap shapes = reference::ValueShapes(loaded->graph, decode);
  const KernelFacts facts = ComputeFacts(sized->partition.kernels[0], &shapes);
  EXPECT_EQ(facts.space.m, 4) << "M from the sizes given";
  EXPECT_EQ(ComputeFacts(assumed->partition.kernels[0]).space.m, kAssumedDynamicExtent);
  EXPECT_DOUBLE_EQ(facts.bytes_out, 4.0 * 1024 * 4);
  // Four rows are predicted as four rows, not as the assumed 1024: the
  // same tile gets another time. (The assumed plan's best may be a 2x1
  // cluster or grouped rows, which four rows do not have: the best-ranked
  // tile both spaces hold is compared.)
  bool compared = false;
  for (size_t t = 0; t < assumed->spaces[0].kept.size() && !compared; ++t) {
    const TileCandidate &top = assumed->spaces[0].kept[t];
    for (size_t i = 0; i < sized->spaces[0].kept.size(); ++i) {
      if (sized->spaces[0].kept[i].params != top.params) continue;
      EXPECT_NE(sized->predictions[0][i].seconds, assumed->predictions[0][t].seconds);
      EXPECT_LT(sized->spaces[0].kept[i].blocks, top.blocks) << "fewer blocks over 4 rows";
      compared = true;
    }
  }
  EXPECT_TRUE(compared) << "a tile of the assumed plan is in the sized space";
  modules_.push_back(std::move(loaded->module));
}


TEST_F(PlanTest, AnEmbeddingIsPricedByTheRowsItGathers) {
  // 37 ids into a 1000 x 64 f32 table: the kernel moves 37 rows of it
  // (and the ids), not the table.
  PlannedGraph p = Plan(R"mlir(
tir.graph @embedding(%w: tensor<1000x64xf32>, %ids: tensor<37xsi64>) -> tensor<37x64xf32> {
  %e = gather %w, %ids axis = 0 : (tensor<1000x64xf32>, tensor<37xsi64>) -> tensor<37x64xf32>
  results %e : tensor<37x64xf32>
})mlir");
  ASSERT_EQ(p.partition.kernels.size(), 1u);
  const KernelFacts facts = ComputeFacts(p.partition.kernels[0]);
  EXPECT_EQ(facts.space.kind, KernelKind::kPointwise);
  EXPECT_EQ(facts.bytes_in, 37 * 64 * 4 + 37 * 8);
  EXPECT_EQ(facts.bytes_out, 37 * 64 * 4);
  // More ids than the table has rows: at most the table.
  PlannedGraph many = Plan(R"mlir(
tir.graph @many(%w: tensor<10x64xf32>, %ids: tensor<4096xsi32>) -> tensor<4096x64xf32> {
  %e = gather %w, %ids axis = 0 : (tensor<10x64xf32>, tensor<4096xsi32>) -> tensor<4096x64xf32>
  results %e : tensor<4096x64xf32>
})mlir");
  EXPECT_EQ(ComputeFacts(many.partition.kernels[0]).bytes_in, 10 * 64 * 4 + 4096 * 4);
  // The table read elsewhere too: all of it.
  PlannedGraph both = Plan(R"mlir(
tir.graph @both(%w: tensor<1000x64xf32>, %ids: tensor<37xsi64>, %b: tensor<1x64xf32>) -> (tensor<37x64xf32>, tensor<1x64xf32>) {
  %e = gather %w, %ids axis = 0 : (tensor<1000x64xf32>, tensor<37xsi64>) -> tensor<37x64xf32>
  %s = reduce(%w)<dimensions = [0], reduction_mode = <add>> : tensor<1000x64xf32> -> tensor<1x64xf32>
  %t = add %s, %b : tensor<1x64xf32>
  results %e, %t : tensor<37x64xf32>, tensor<1x64xf32>
})mlir");
  for (const Kernel &k : both.partition.kernels) {
    if (k.space.kind != KernelKind::kPointwise) continue;
    EXPECT_EQ(ComputeFacts(k).bytes_in, 37 * 64 * 4 + 37 * 8) << "the gather's kernel reads its rows only";
  }
}

TEST_F(PlanTest, AGatherNeverComputesItsDataInItsOwnKernel) {
  // exp(table) then a gather of its rows: the table is written out by a
  // kernel of its own, with the reason; the ids' conversion and the
  // consumer fuse with the gather.
  PlannedGraph p = Plan(R"mlir(
tir.graph @g(%t: tensor<90x16xf32>, %ids: tensor<12xsi32>) -> tensor<12x16xf32> {
  %et = exp %t : tensor<90x16xf32>
  %wide = convert %ids : tensor<12xsi32> -> tensor<12xsi64>
  %r = gather %et, %wide axis = 0 : (tensor<90x16xf32>, tensor<12xsi64>) -> tensor<12x16xf32>
  %n = neg %r : tensor<12x16xf32>
  results %n : tensor<12x16xf32>
})mlir");
  ASSERT_EQ(p.partition.kernels.size(), 2u);
  EXPECT_THAT(p.partition.kernels[0].reason, ::testing::HasSubstr("the data a gather reads at run-time indices"));
  EXPECT_EQ(p.partition.kernels[1].ops.size(), 3u) << "convert, gather and neg";
}

}  // namespace
}  // namespace tir::planning
