// The sm_90a matmul form proven on the CPU: every candidate of a matmul with
// partial tiles, K not a multiple of the K step and a fused epilogue runs
// lane by lane (TMA, mbarriers, wgmma emulated) and matches the reference;
// a covering set of candidates does so for transposed, strided and
// column-major operands, prologue ops, f16 and batches; the default of each
// compiles with NVRTC to PTX holding wgmma.mma_async (and
// cp.async.bulk.tensor where TMA applies); and faults planted in the
// generated source (no mbarrier wait, no wgmma.wait_group, another swizzle
// in a descriptor, a flipped parity, a missing proxy fence, a wrong arrival
// count, no barrier after mbarrier.init, a tensor map packed at a wrong
// offset of the parameter struct) are each caught by the emulator.

#include <algorithm>
#include <cstdlib>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "compiler/codegen/Emitter.h"
#include "compiler/codegen/HostBuild.h"
#include "compiler/codegen/testing/PlannedKernel.h"
#include "compiler/codegen/ParamPacking.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/nvrtc/nvrtc_compiler.h"
#include "compiler/planning/Plan.h"
#include "compiler/reference/Interpreter.h"
#include "compiler/support/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tir::codegen {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// M = 200, N = 192, K = 136: partial tiles along M and N for every tile
// shape, a last K step of 8; bias and GELU fused.
constexpr const char *kBiasGelu = R"G(
tir.graph @mm(%x: tensor<200x136xbf16>, %w: tensor<136x192xbf16>, %bias: tensor<1x192xf32>) -> tensor<200x192xf32> {
  %m = matmul(%x, %w) : (tensor<200x136xbf16>, tensor<136x192xbf16>) -> tensor<200x192xf32>
  %y = add %m, %bias : (tensor<200x192xf32>, tensor<1x192xf32>) -> tensor<200x192xf32>
  %g = gelu_approx_tanh_fwd %y : tensor<200x192xf32>
  results %g : tensor<200x192xf32>
}
)G";

struct Graph {
  const char *name;
  const char *text;
  bool tma;  // both operands can be TMA-loaded
};

const std::vector<Graph> &Others() {
  static const auto *graphs = new std::vector<Graph>{
      // x @ w^T with w (N, K): B K-major by TMA.
      {"transposed_b", R"G(
tir.graph @wt(%x: tensor<96x200xbf16>, %w: tensor<130x200xbf16>, %bias: tensor<1x130xf32>) -> tensor<96x130xf32> {
  %t = transpose %w permutation = [1, 0] : tensor<130x200xbf16> -> tensor<200x130xbf16>
  %m = matmul(%x, %t) : (tensor<96x200xbf16>, tensor<200x130xbf16>) -> tensor<96x130xf32>
  %y = add %m, %bias : (tensor<96x130xf32>, tensor<1x130xf32>) -> tensor<96x130xf32>
  results %y : tensor<96x130xf32>
})G", true},
      // Padded rows for A, a row stride of B that is not 16-byte aligned: staged by the producer threads.
      {"strided_f16", R"G(
tir.graph @st(%x: tensor<70x64xf16> {tir.stride = "(72,1)"}, %w: tensor<64x100xf16> {tir.stride = "(101,1)"}) -> tensor<70x100xf32> {
  %m = matmul(%x, %w) : (tensor<70x64xf16>, tensor<64x100xf16>) -> tensor<70x100xf32>
  results %m : tensor<70x100xf32>
})G", false},
      // A column-major (M contiguous): no tensor map; a bf16 output.
      {"column_major_a", R"G(
tir.graph @cm(%x: tensor<80x72xbf16> {tir.stride = "(1,80)"}, %w: tensor<72x64xbf16>) -> tensor<80x64xbf16> {
  %m = matmul(%x, %w) : (tensor<80x72xbf16>, tensor<72x64xbf16>) -> tensor<80x64xbf16>
  results %m : tensor<80x64xbf16>
})G", false},
      // A computed in the kernel (a product) and a residual added after.
      {"prologue", R"G(
tir.graph @pro(%x: tensor<130x64xbf16>, %s: tensor<130x64xbf16>, %w: tensor<64x128xbf16>, %r: tensor<130x128xf32>) -> tensor<130x128xf32> {
  %xs = mul %x, %s : tensor<130x64xbf16>
  %m = matmul(%xs, %w) : (tensor<130x64xbf16>, tensor<64x128xbf16>) -> tensor<130x128xf32>
  %o = add %m, %r : tensor<130x128xf32>
  results %o : tensor<130x128xf32>
})G", false},
      // bf16 converted to f32 before the matmul, batched operands.
      {"batched_converted", R"G(
tir.graph @bt(%x: tensor<3x70x64xbf16>, %w: tensor<3x64x72xbf16>) -> tensor<3x70x72xf32> {
  %xc = convert %x : tensor<3x70x64xbf16> -> tensor<3x70x64xf32>
  %wc = convert %w : tensor<3x64x72xbf16> -> tensor<3x64x72xf32>
  %m = matmul(%xc, %wc) : (tensor<3x70x64xf32>, tensor<3x64x72xf32>) -> tensor<3x70x72xf32>
  results %m : tensor<3x70x72xf32>
})G", false},
  };
  return *graphs;
}

std::string WorkDir() { return lanetest::TestWorkDir("hopper"); }

using Planned = lanetest::PlannedKernel;
std::unique_ptr<Planned> Plan(const char *text) { return lanetest::PlanOneKernel(text); }

// Emits `params`, optionally edits the source, runs it lane by lane: OK
// with the worst relative L2 error, or the emulator's (or the build's) error.
absl::StatusOr<double> RunLanes(const Planned &p, const std::map<std::string, int64_t> &params,
                                const std::function<std::string(std::string)> &edit = nullptr) {
  return lanetest::RunLanes(p, params, WorkDir(), {edit});
}

std::string Params(const planning::TileCandidate &c) { return lanetest::ParamsText(c.params); }

constexpr int kChunks = 8;

class EveryCandidate : public ::testing::TestWithParam<int> {};

// Candidates i with i % kChunks == chunk (the test shards over chunks).
TEST_P(EveryCandidate, OfTheTmaMatmulPassesLaneByLane) {
  auto p = Plan(kBiasGelu);
  ASSERT_TRUE(p);
  ASSERT_GT(p->space.size(), 100u);
  for (size_t i = GetParam(); i < p->space.size(); i += kChunks) {
    SCOPED_TRACE(absl::StrCat("candidate #", i, ": ", Params(p->space[i])));
    ASSERT_EQ(p->space[i].params.at("wgmma"), 1);
    auto err = RunLanes(*p, p->space[i].params);
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LE(*err, 1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(Chunks, EveryCandidate, ::testing::Range(0, kChunks));

// Every raster order covers each tile once: 4 x 3 tiles of 64 x 64 in bands
// of 2 and 3 (a short last band), rows and columns, plain and serpentine,
// under the persistent grid's walk.
TEST(HopperMatmul, EveryRasterOrderCoversEachTileOnce) {
  auto p = Plan(kBiasGelu);
  ASSERT_TRUE(p);
  for (int64_t group : {2, 3}) {
    for (int64_t raster : {0, 1, 2, 3}) {
      const std::map<std::string, int64_t> params = {
          {"block_m", 64}, {"block_n", 64},   {"block_k", 64}, {"stages", 2},       {"consumers", 1},
          {"persistent", 1}, {"group_m", group}, {"split_k", 1},  {"raster", raster}, {"wgmma", 1}};
      SCOPED_TRACE(absl::StrCat("group_m ", group, " raster ", raster));
      auto err = RunLanes(*p, params);
      ASSERT_TRUE(err.ok()) << err.status();
      EXPECT_LE(*err, 1e-5);
    }
  }
}

class CoveringCandidates : public ::testing::TestWithParam<Graph> {};

// Every tile shape and consumer count of the space once, with stages,
// persistence and raster order rotating over them.
TEST_P(CoveringCandidates, PassLaneByLane) {
  auto p = Plan(GetParam().text);
  ASSERT_TRUE(p);
  std::set<std::tuple<int64_t, int64_t, int64_t>> shapes;
  std::set<std::tuple<int64_t, int64_t, int64_t, int64_t>> variants;
  int checked = 0;
  for (size_t i = 0; i < p->space.size(); ++i) {
    const auto &c = p->space[i].params;
    const auto shape = std::make_tuple(c.at("block_m"), c.at("block_n"), c.at("consumers"));
    const auto variant =
        std::make_tuple(c.at("stages"), c.at("persistent"), c.at("group_m"), c.count("raster") ? c.at("raster") : 0);
    // A new shape, or a stages / persistence / raster combination not yet run.
    if (shapes.count(shape) && variants.count(variant)) continue;
    shapes.insert(shape);
    variants.insert(variant);
    SCOPED_TRACE(absl::StrCat("candidate #", i, ": ", Params(p->space[i])));
    auto err = RunLanes(*p, c);
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LE(*err, p->want[0].dtype == tir::v1::DTYPE_BF16 ? 1e-2 : 1e-5);
    ++checked;
  }
  EXPECT_GE(checked, 8);
}

INSTANTIATE_TEST_SUITE_P(Layouts, CoveringCandidates, ::testing::ValuesIn(Others()),
                         [](const ::testing::TestParamInfo<Graph> &info) { return info.param.name; });

TEST(HopperMatmul, DefaultsCompileWithNvrtcToWgmmaAndTma) {
  std::vector<Graph> graphs = Others();
  graphs.insert(graphs.begin(), Graph{"bias_gelu", kBiasGelu, true});
  for (const Graph &g : graphs) {
    SCOPED_TRACE(g.name);
    auto p = Plan(g.text);
    ASSERT_TRUE(p);
    const planning::TileCandidate *def = nullptr;
    for (const auto &c : p->space) {
      if (c.is_default) def = &c;
    }
    ASSERT_NE(def, nullptr);
    auto emitted = EmitKernel(p->kernel, def->params);
    ASSERT_TRUE(emitted.ok()) << emitted.status();
    nvrtc::CompileOptions options;
    options.arch = "sm_90a";
    options.headers = RuntimeHeaders();
    auto cubin = nvrtc::CompileToCubin(emitted->source, options);
    ASSERT_TRUE(cubin.ok()) << cubin.status();
    EXPECT_THAT(cubin->ptx, HasSubstr("wgmma.mma_async.sync.aligned.m64n"));
    // Two consumers take registers from the producer; one has the file's
    // share without it (a small-M default is 64 x 64 with one consumer).
    if (def->params.at("consumers") == 2) {
      EXPECT_THAT(cubin->ptx, HasSubstr("setmaxnreg.inc.sync.aligned.u32 232"));
    } else {
      EXPECT_THAT(cubin->ptx, Not(HasSubstr("setmaxnreg")));
    }
    EXPECT_THAT(cubin->ptx, HasSubstr("mbarrier.try_wait.parity"));
    if (g.tma) {
      EXPECT_THAT(cubin->ptx, HasSubstr("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"));
      EXPECT_THAT(cubin->ptx, HasSubstr("prefetch.tensormap"));
    }
    EXPECT_EQ(cubin->spill_bytes, 0) << cubin->log;
    // ptxas serializes wgmma it cannot keep asynchronous, and says so.
    EXPECT_THAT(cubin->log, ::testing::Not(HasSubstr("wgmma"))) << cubin->log;
  }
}

// What a GPU launcher is given for the tensor maps: the operand's buffer,
// dims and box inner first, the outer stride in bytes, and whether the
// layout allows a map (else the field stays zero and the kernel stages
// without TMA).
TEST(HopperMatmul, TensorMapArgumentsDescribeTheOperands) {
  auto tma = Plan(kBiasGelu);
  auto strided = Plan(Others()[1].text);
  ASSERT_TRUE(tma && strided);
  const std::map<std::string, int64_t> params = {{"block_m", 128}, {"block_n", 128}, {"block_k", 64}, {"stages", 4},
                                                 {"consumers", 2},   {"persistent", 1}, {"group_m", 8},  {"wgmma", 1}};
  struct Want {
    Planned *p;
    bool encodable;
  };
  for (const Want &w : {Want{tma.get(), true}, Want{strided.get(), false}}) {
    auto fields = ArgumentFieldNames(w.p->kernel, params);
    ASSERT_TRUE(fields.ok()) << fields.status();
    auto emitted = EmitKernel(w.p->kernel, params);
    ASSERT_TRUE(emitted.ok()) << emitted.status();
    EXPECT_EQ(*fields, emitted->field_names) << "the launcher's fields are the kernel's";
    auto launch = HostLaunch::Prepare(w.p->kernel, *fields, emitted->launch, w.p->inputs);
    ASSERT_TRUE(launch.ok()) << launch.status();
    int maps = 0;
    for (const HostLaunch::FieldView &f : (*launch)->Fields(0)) {
      if (!f.map) continue;
      ++maps;
      EXPECT_EQ(f.bytes, 128u);
      // A in one box of 64 K x block_m rows; the N-major B in 64 x 64
      // boxes (a 128-byte swizzled row is 64 elements).
      EXPECT_EQ(f.map->box[0], 64u);
      EXPECT_EQ(f.map->box[1], maps == 1 ? 128u : 64u);
      EXPECT_EQ(f.map->elem_bytes, 2);
      // The strided graph's A rows are 144 bytes (a map), B's 202 (none).
      const bool encodable = w.encodable || f.map->stride_bytes % 16 == 0;
      EXPECT_EQ(f.map->encodable, encodable) << f.map->stride_bytes;
      const auto *words = static_cast<const uint64_t *>(f.value);
      if (encodable) {
        EXPECT_NE(words[0], 0u) << "the emulator's encoding";
        EXPECT_EQ(words[2], f.map->dims[0]);
        EXPECT_EQ(words[3], f.map->dims[1]);
        EXPECT_EQ(words[4], f.map->stride_bytes);
        EXPECT_EQ(words[8], 3u) << "the 128-byte swizzle";
      } else {
        for (int i = 0; i < 16; ++i) EXPECT_EQ(words[i], 0u);
      }
    }
    EXPECT_EQ(maps, 2);
  }
  // A (200 x 136) and B (136 x 192) of the TMA graph: dims inner first.
  auto fields = ArgumentFieldNames(tma->kernel, params);
  auto emitted = EmitKernel(tma->kernel, params);
  auto launch = HostLaunch::Prepare(tma->kernel, *fields, emitted->launch, tma->inputs);
  ASSERT_TRUE(launch.ok());
  std::set<std::vector<uint64_t>> seen;
  for (const HostLaunch::FieldView &f : (*launch)->Fields(0)) {
    if (f.map) seen.insert({f.map->dims[0], f.map->dims[1], f.map->stride_bytes});
  }
  EXPECT_EQ(seen, (std::set<std::vector<uint64_t>>{{136, 200, 272}, {192, 136, 384}}));
}

// Planted faults: each edit of the generated source must make the emulator
// report its reason.
struct Mutant {
  const char *name;
  const char *from, *to;
  std::vector<const char *> reasons;  // any of them
  bool tma = true;                    // on the TMA graph (else the producer-staged one)
  // 64 x 64 tiles, one consumer, 2 stages: stages reused within a block.
  bool small = false;
};

TEST(HopperMatmul, PlantedFaultsAreCaught) {
  const std::vector<Mutant> mutants = {
      {"the consumers skip the full-stage wait", "        tir_mbar_wait(full + s, (unsigned)((it / 4) & 1));\n", "",
       {"UNCOMPLETED_ASYNC_COPY", "UNINITIALIZED_SHARED_READ"}},
      {"no wgmma.wait_group before the epilogue reads the accumulators", "      tir_wgmma_wait<0>();\n", "",
       {"WGMMA_NOT_WAITED"}},
      {"descriptors in the 64-byte swizzle", ", 1024, 1)", ", 1024, 2)", {"SWIZZLE_MISMATCH"}},
      {"the consumers' parity flipped", "tir_mbar_wait(full + s, (unsigned)((it / 4) & 1));",
       "tir_mbar_wait(full + s, (unsigned)((it / 4) & 1) ^ 1u);",
       {"UNCOMPLETED_ASYNC_COPY", "UNINITIALIZED_SHARED_READ", "MBARRIER_DEADLOCK"}},
      {"the producer overwrites stages still in use", "        tir_mbar_wait(empty + s, (unsigned)((it / 4) & 1) ^ 1u);\n",
       "", {"UNCOMPLETED_ASYNC_COPY", "MBARRIER_OVERFLOW", "MBARRIER_DEADLOCK"}},
      // Each round of consumer arrivals completes two phases: the producer's
      // parities then name phases that never come.
      {"the empty barrier expects too few arrivals", "tir_mbar_init(empty + s, 8u);", "tir_mbar_init(empty + s, 4u);",
       {"MBARRIER_OVERFLOW", "MBARRIER_DEADLOCK"}},
      {"no wgmma.fence before the wgmmas", "        tir_wgmma_fence();\n", "", {"MISSING_WGMMA_FENCE"}},
      // A stage released while the wgmma reading it may still run: the
      // producer's next copy into it races with the read.
      {"the stage is released before its wgmma retires", "        tir_wgmma_wait<1>();\n", "        tir_wgmma_wait<2>();\n",
       {"SHARED_MEMORY_RACE"}},
      {"the consumers release the stage they just issued on",
       "if (kt > kt0 && t % 32 == 0) tir_mbar_arrive(empty + (int)((it - 1) % 4));",
       "if (kt > kt0 && t % 32 == 0) tir_mbar_arrive(empty + (int)(it % 4));",
       {"SHARED_MEMORY_RACE", "MBARRIER_DEADLOCK", "MBARRIER_OVERFLOW", "UNCOMPLETED_ASYNC_COPY"}},
      {"producer-staged: the stage is released before its wgmma retires", "        tir_wgmma_wait<1>();\n",
       "        tir_wgmma_wait<2>();\n", {"SHARED_MEMORY_RACE"}, false, true},
      {"producer stores without fence.proxy.async", "          tir_fence_proxy_async();\n", "", {"MISSING_PROXY_FENCE"},
       false},
      {"producer-staged consumers skip the wait", "        tir_mbar_wait(full + s, (unsigned)((it / 4) & 1));\n", "",
       {"UNINITIALIZED_SHARED_READ", "SHARED_MEMORY_RACE", "MISSING_PROXY_FENCE"}, false},
      // Other threads may use a barrier thread 0 has not initialized yet.
      {"no barrier after thread 0's mbarrier.init", "    tir_mbar_init_fence();\n  }\n  TIR_SYNC();\n",
       "    tir_mbar_init_fence();\n  }\n", {"that thread (0,0,0) initialized (mbarrier.init) with no barrier between"}},
  };
  // The TMA graph with seven K steps: each block reuses its 4 stages
  // within its tile (a grid of one block a tile never runs ahead into
  // another tile).
  auto tma = Plan(R"G(
tir.graph @mm(%x: tensor<200x408xbf16>, %w: tensor<408x192xbf16>, %bias: tensor<1x192xf32>) -> tensor<200x192xf32> {
  %m = matmul(%x, %w) : (tensor<200x408xbf16>, tensor<408x192xbf16>) -> tensor<200x192xf32>
  %y = add %m, %bias : (tensor<200x192xf32>, tensor<1x192xf32>) -> tensor<200x192xf32>
  %g = gelu_approx_tanh_fwd %y : tensor<200x192xf32>
  results %g : tensor<200x192xf32>
})G");
  auto staged = Plan(Others()[1].text);  // strided_f16
  // Producer-staged with four K steps in one tile: two stages are reused.
  auto longK = Plan(R"G(
tir.graph @lk(%x: tensor<64x256xf16> {tir.stride = "(264,1)"}, %w: tensor<256x64xf16> {tir.stride = "(65,1)"}) -> tensor<64x64xf32> {
  %m = matmul(%x, %w) : (tensor<64x256xf16>, tensor<256x64xf16>) -> tensor<64x64xf32>
  results %m : tensor<64x64xf32>
})G");
  ASSERT_TRUE(tma && staged && longK);
  // 128 x 128 tiles, two consumers, 4 stages, persistent: several tiles a
  // block (the producer runs ahead into the next tile).
  std::map<std::string, int64_t> params = {{"block_m", 64},  {"block_n", 64},    {"block_k", 64},   {"stages", 4},
                                           {"consumers", 1}, {"persistent", 1},  {"group_m", 1},    {"wgmma", 1}};
  params["consumers"] = 2;
  params["block_m"] = 128;
  // The unmutated kernel passes on both graphs.
  for (Planned *p : {tma.get(), staged.get()}) {
    auto clean = RunLanes(*p, params);
    ASSERT_TRUE(clean.ok()) << clean.status();
    EXPECT_LE(*clean, 1e-5);
  }
  // Its 448-byte parameter struct packed with the first tensor map 64
  // bytes past its offset (192): the emulator, given the bytes a GPU
  // would get, finds no map where the kernel's struct has it.
  {
    SCOPED_TRACE("a tensor map packed at a wrong offset");
    auto emitted = EmitKernel(tma->kernel, params);
    ASSERT_TRUE(emitted.ok()) << emitted.status();
    HostBuildOptions lanes;
    lanes.form = HostForm::kLanes;
    auto built = BuildHostKernel(*emitted, WorkDir(), lanes);  // the clean run's object
    ASSERT_TRUE(built.ok()) << built.status();
    auto launch = HostLaunch::Prepare(tma->kernel, emitted->field_names, emitted->launch, tma->inputs);
    ASSERT_TRUE(launch.ok()) << launch.status();
    const std::vector<HostLaunch::FieldView> fields = (*launch)->Fields(0);
    ParamLayout layout = LayOutParams(fields);
    ASSERT_EQ(layout.bytes, 448u);
    size_t map = 0;
    while (map < fields.size() && !fields[map].map) ++map;
    ASSERT_LT(map, fields.size());
    ASSERT_EQ(layout.offsets[map], 192u);
    layout.offsets[map] += 64;
    auto bytes = PackParams(fields, layout, [&](int b) { return reinterpret_cast<uint64_t>((*launch)->buffer(0, b).data()); });
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    const unsigned block[3] = {emitted->launch.block(0), 1, 1};
    const absl::Status wrong = (*built)->CallLanes(bytes->data(), bytes->size(), (*launch)->grid(), block,
                                                   emitted->launch.dynamic_shared_memory_bytes(), (*launch)->Writable(0),
                                                   LaneSchedules{});
    EXPECT_EQ(ReasonOf(wrong), "INVALID_TENSOR_MAP") << wrong;
  }
  for (const Mutant &m : mutants) {
    SCOPED_TRACE(m.name);
    bool applied = false;
    std::map<std::string, int64_t> use = params;
    if (m.small) {
      use["block_m"] = use["block_n"] = 64;
      use["consumers"] = 1;
      use["stages"] = 2;
      auto clean = RunLanes(m.tma ? *tma : *longK, use);
      ASSERT_TRUE(clean.ok()) << clean.status();
    }
    auto err = RunLanes(m.tma ? *tma : m.small ? *longK : *staged, use, [&](std::string s) {
      applied = s.find(m.from) != std::string::npos;
      return absl::StrReplaceAll(s, {{m.from, m.to}});
    });
    ASSERT_TRUE(applied) << "the mutation does not apply to the generated source";
    ASSERT_FALSE(err.ok()) << "not caught (relative L2 error " << *err << ")";
    bool named = false;
    const std::string said = absl::StrCat(ReasonOf(err.status()), ": ", err.status().message());
    for (const char *r : m.reasons) named = named || said.find(r) != std::string::npos;
    EXPECT_TRUE(named) << err.status();
  }
}

}  // namespace
}  // namespace tir::codegen
