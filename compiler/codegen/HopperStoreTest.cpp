// The sm_90a matmul's TMA-store epilogue (tma_store) proven on the CPU: the
// consumers apply the fused epilogue in registers and stage the output box
// by box (64 rows x 128 bytes) in two 128-byte swizzled slots of shared
// memory; after each box they fence it for the async proxy, one thread
// waits for the previous box's store to finish reading, they meet at a
// named barrier and that thread stores the box with cp.async.bulk.tensor
// while the next box fills the other slot. Every
// tile shape of the planned space with tma_store runs lane by lane and
// matches the reference for bf16 and f32 outputs (partial tiles, K not a
// multiple of 64, bias + GELU, a transposed B, operands the producer
// stages); outputs whose layout allows no tensor map (column-major, a row
// stride not a multiple of 16 bytes) take the direct-store path of the same
// kernel; the PTX holds the bulk tensor store; faults planted in the
// generated epilogue are caught by the emulator.

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "compiler/codegen/Emitter.h"
#include "compiler/codegen/HostBuild.h"
#include "compiler/codegen/testing/PlannedKernel.h"
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

struct Graph {
  const char *name;
  const char *text;
  bool tma_out;  // the output's layout allows a tensor map
};

// M = 200, N = 192, K = 136: partial tiles along M for every tile shape, a
// last K step of 8; bias and GELU fused; a bf16 output.
constexpr const char *kBiasGeluBf16 = R"G(
tir.graph @mm(%x: tensor<200x136xbf16>, %w: tensor<136x192xbf16>, %bias: tensor<1x192xf32>) -> tensor<200x192xbf16> {
  %m = matmul(%x, %w) : (tensor<200x136xbf16>, tensor<136x192xbf16>) -> tensor<200x192xf32>
  %y = add %m, %bias : (tensor<200x192xf32>, tensor<1x192xf32>) -> tensor<200x192xf32>
  %g = gelu_approx_tanh_fwd %y : tensor<200x192xf32>
  %o = convert %g : tensor<200x192xf32> -> tensor<200x192xbf16>
  results %o : tensor<200x192xbf16>
}
)G";

const std::vector<Graph> &Graphs() {
  static const auto *graphs = new std::vector<Graph>{
      {"bias_gelu_bf16", kBiasGeluBf16, true},
      // The same with an f32 output (32-column boxes of 128 bytes).
      {"bias_gelu_f32", R"G(
tir.graph @mf(%x: tensor<200x136xbf16>, %w: tensor<136x192xbf16>, %bias: tensor<1x192xf32>) -> tensor<200x192xf32> {
  %m = matmul(%x, %w) : (tensor<200x136xbf16>, tensor<136x192xbf16>) -> tensor<200x192xf32>
  %y = add %m, %bias : (tensor<200x192xf32>, tensor<1x192xf32>) -> tensor<200x192xf32>
  %g = gelu_approx_tanh_fwd %y : tensor<200x192xf32>
  results %g : tensor<200x192xf32>
})G", true},
      // x @ w^T with w (N, K): B K-major by TMA; N = 136 leaves a partial
      // 64-column box.
      {"transposed_b", R"G(
tir.graph @wt(%x: tensor<96x200xbf16>, %w: tensor<136x200xbf16>) -> tensor<96x136xbf16> {
  %t = transpose %w permutation = [1, 0] : tensor<136x200xbf16> -> tensor<200x136xbf16>
  %m = matmul(%x, %t) : (tensor<96x200xbf16>, tensor<200x136xbf16>) -> tensor<96x136xf32>
  %o = convert %m : tensor<96x136xf32> -> tensor<96x136xbf16>
  results %o : tensor<96x136xbf16>
})G", true},
      // Padded rows for A, a row stride of B that is not 16-byte aligned:
      // the producer threads stage them; the output is stored by TMA.
      {"strided_operands", R"G(
tir.graph @st(%x: tensor<70x64xf16> {tir.stride = "(72,1)"}, %w: tensor<64x100xf16> {tir.stride = "(101,1)"}) -> tensor<70x100xf32> {
  %m = matmul(%x, %w) : (tensor<70x64xf16>, tensor<64x100xf16>) -> tensor<70x100xf32>
  results %m : tensor<70x100xf32>
})G", true},
      // A column-major output: no tensor map; the direct stores run.
      {"column_major_output", R"G(
tir.graph @co(%x: tensor<96x72xbf16>, %w: tensor<72x128xbf16>) -> (tensor<96x128xf32> {tir.stride = "(1,96)"}) {
  %m = matmul(%x, %w) : (tensor<96x72xbf16>, tensor<72x128xbf16>) -> tensor<96x128xf32>
  results %m : tensor<96x128xf32>
})G", false},
      // Rows of 130 f32 (520 bytes, not a multiple of 16): no tensor map.
      {"unaligned_output_rows", R"G(
tir.graph @ua(%x: tensor<96x72xbf16>, %w: tensor<72x130xbf16>) -> tensor<96x130xf32> {
  %m = matmul(%x, %w) : (tensor<96x72xbf16>, tensor<72x130xbf16>) -> tensor<96x130xf32>
  results %m : tensor<96x130xf32>
})G", false},
  };
  return *graphs;
}

std::string WorkDir() { return lanetest::TestWorkDir("hopper_store"); }

using Planned = lanetest::PlannedKernel;
std::unique_ptr<Planned> Plan(const char *text) { return lanetest::PlanOneKernel(text); }

// Emits `params`, optionally edits the source and caps the persistent grid
// at `blocks` (so each block walks several tiles and reuses its staging
// region), runs it lane by lane (under `schedules` when given): the worst
// relative L2 error, or the emulator's (or the build's) error.
absl::StatusOr<double> RunLanes(const Planned &p, const std::map<std::string, int64_t> &params,
                                const std::function<std::string(std::string)> &edit = nullptr, int blocks = 0,
                                const LaneSchedules *schedules = nullptr) {
  lanetest::LaneRun run{edit, blocks, std::nullopt};
  if (schedules) run.schedules = *schedules;
  return lanetest::RunLanes(p, params, WorkDir(), run);
}

std::string Params(const std::map<std::string, int64_t> &params) { return lanetest::ParamsText(params); }

double Tolerance(const Planned &p) { return p.want[0].dtype == tir::v1::DTYPE_BF16 ? 1e-2 : 1e-5; }

// The launcher's view of the output's tensor map for `params`.
void ExpectOutputMap(const Planned &p, const std::map<std::string, int64_t> &params, bool encodable) {
  auto emitted = EmitKernel(p.kernel, params);
  ASSERT_TRUE(emitted.ok()) << emitted.status();
  auto launch = HostLaunch::Prepare(p.kernel, emitted->field_names, emitted->launch, p.inputs);
  ASSERT_TRUE(launch.ok()) << launch.status();
  const int eb = p.want[0].dtype == tir::v1::DTYPE_F32 ? 4 : 2;
  const std::string name = OutputTensorMapFieldName(0, 128 / eb, 64);
  const std::vector<HostLaunch::FieldView> fields = (*launch)->Fields(0);
  ASSERT_EQ(fields.size(), emitted->field_names.size());
  int found = 0;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (emitted->field_names[i] != name) continue;
    ++found;
    ASSERT_NE(fields[i].map, nullptr);
    EXPECT_EQ(fields[i].map->buffer, static_cast<int>((*launch)->output_buffers()[0]));
    EXPECT_EQ(fields[i].map->elem_bytes, eb);
    EXPECT_EQ(fields[i].map->f32, eb == 4);
    EXPECT_EQ(fields[i].map->box[0], static_cast<uint32_t>(128 / eb));
    EXPECT_EQ(fields[i].map->box[1], 64u);
    EXPECT_EQ(fields[i].map->dims[0], static_cast<uint64_t>(p.want[0].shape[1]));
    EXPECT_EQ(fields[i].map->dims[1], static_cast<uint64_t>(p.want[0].shape[0]));
    EXPECT_EQ(fields[i].map->encodable, encodable);
    const auto *words = static_cast<const uint64_t *>(fields[i].value);
    EXPECT_EQ(words[0] != 0, encodable) << "the emulator's encoding, or zeros";
  }
  EXPECT_EQ(found, 1) << "one tensor-map field for the output, named " << name;
}

class TmaStoreCandidates : public ::testing::TestWithParam<Graph> {};

// Every tile shape and consumer count of the space with tma_store once,
// stages rotating over them; an output without a tensor map runs the
// direct stores (a TMA store through its zero map would be an
// INVALID_TENSOR_MAP fault).
TEST_P(TmaStoreCandidates, PassLaneByLane) {
  auto p = Plan(GetParam().text);
  ASSERT_TRUE(p);
  std::set<std::tuple<int64_t, int64_t, int64_t>> shapes;
  int checked = 0, stored = 0;
  for (const planning::TileCandidate &c : p->space) {
    auto it = c.params.find("tma_store");
    if (it == c.params.end() || it->second != 1) continue;
    ++stored;
    EXPECT_EQ(c.params.at("persistent"), 1);
    EXPECT_EQ(c.params.at("split_k"), 1);
    EXPECT_LE(c.shared_bytes, 227 * 1024);
    const auto shape = std::make_tuple(c.params.at("block_m"), c.params.at("block_n"), c.params.at("consumers"));
    if (!shapes.insert(shape).second) continue;
    SCOPED_TRACE(Params(c.params));
    if (checked == 0) ExpectOutputMap(*p, c.params, GetParam().tma_out);
    auto err = RunLanes(*p, c.params);
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LE(*err, Tolerance(*p));
    ++checked;
  }
  EXPECT_GE(checked, 3) << stored << " tma_store candidates in the space";
  // Two blocks walk every tile: each reuses its two slots, tile after tile.
  std::map<std::string, int64_t> params = {{"block_m", 64},    {"block_n", 64},  {"block_k", 64}, {"stages", 2},
                                           {"consumers", 1},   {"persistent", 1}, {"group_m", 1},  {"split_k", 1},
                                           {"tma_store", 1},   {"wgmma", 1}};
  SCOPED_TRACE("two persistent blocks");
  auto err = RunLanes(*p, params, nullptr, 2);
  ASSERT_TRUE(err.ok()) << err.status();
  EXPECT_LE(*err, Tolerance(*p));
}

INSTANTIATE_TEST_SUITE_P(Graphs, TmaStoreCandidates, ::testing::ValuesIn(Graphs()),
                         [](const ::testing::TestParamInfo<Graph> &info) { return info.param.name; });

TEST(HopperStore, CandidateSpaceOffersItWhereTheOutputAllows) {
  // A batched matmul (a rank-3 output) and two outputs: none.
  for (const char *text : {R"G(
tir.graph @bt(%x: tensor<3x70x64xbf16>, %w: tensor<3x64x72xbf16>) -> tensor<3x70x72xf32> {
  %m = matmul(%x, %w) : (tensor<3x70x64xbf16>, tensor<3x64x72xbf16>) -> tensor<3x70x72xf32>
  results %m : tensor<3x70x72xf32>
})G",
                           R"G(
tir.graph @two(%x: tensor<128x64xbf16>, %w: tensor<64x128xbf16>) -> (tensor<128x128xf32>, tensor<128x128xf32>) {
  %m = matmul(%x, %w) : (tensor<128x64xbf16>, tensor<64x128xbf16>) -> tensor<128x128xf32>
  %g = gelu_approx_tanh_fwd %m : tensor<128x128xf32>
  results %m, %g : tensor<128x128xf32>, tensor<128x128xf32>
})G"}) {
    auto p = Plan(text);
    ASSERT_TRUE(p);
    ASSERT_FALSE(p->space.empty());
    for (const auto &c : p->space) EXPECT_EQ(c.params.count("tma_store"), 0u) << Params(c.params);
  }
  // An output declaring a stride of 0 on its rows holds one row: only row 0
  // is stored, which no whole-box copy does. (Its rows are equal: A is one
  // row repeated, a stride of 0 too.) The space has no tma_store, and its
  // default (the 2x1 cluster a large GEMM gets) emits and matches the
  // reference with the direct stores.
  {
    auto p = Plan(R"G(
tir.graph @row(%x: tensor<256x64xbf16> {tir.stride = "(0,1)"}, %w: tensor<64x128xbf16>) -> (tensor<256x128xf32> {tir.stride = "(0,1)"}) {
  %m = matmul(%x, %w) : (tensor<256x64xbf16>, tensor<64x128xbf16>) -> tensor<256x128xf32>
  results %m : tensor<256x128xf32>
})G");
    ASSERT_TRUE(p);
    ASSERT_FALSE(p->space.empty());
    const planning::TileCandidate *def = nullptr;
    for (const auto &c : p->space) {
      EXPECT_EQ(c.params.count("tma_store"), 0u) << Params(c.params);
      if (c.is_default) def = &c;
    }
    ASSERT_NE(def, nullptr);
    SCOPED_TRACE(Params(def->params));
    EXPECT_TRUE(def->params.count("wgmma")) << "the Hopper form";
    EXPECT_EQ(def->params.count("cluster_m") ? def->params.at("cluster_m") : 1, 2) << "a 2x1 cluster";
    auto err = RunLanes(*p, def->params);
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LE(*err, Tolerance(*p));
  }
  // The bf16 graph: some, within the shared-memory limit (the 4 stages of
  // a 128 x 256 tile with their 32 KiB of slots among them), and stages
  // that leave no room for the slots are refused by the emitter.
  auto p = Plan(kBiasGeluBf16);
  ASSERT_TRUE(p);
  int offered = 0;
  for (const auto &c : p->space) offered += c.params.count("tma_store");
  EXPECT_GT(offered, 0);
  std::map<std::string, int64_t> big = {{"block_m", 128}, {"block_n", 256}, {"block_k", 64}, {"stages", 4},
                                        {"consumers", 2},  {"persistent", 1}, {"group_m", 8}, {"split_k", 1},
                                        {"tma_store", 1},  {"wgmma", 1}};
  bool offeredBig = false;
  for (const auto &c : p->space) offeredBig = offeredBig || c.params == big;
  EXPECT_TRUE(offeredBig);
  auto fits = EmitKernel(p->kernel, big);
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_EQ(fits->launch.dynamic_shared_memory_bytes(), 1024 + 4 * 384 * 128 + 1024 + 2 * 16384);
  big["stages"] = 5;
  EXPECT_THAT(EmitKernel(p->kernel, big).status(),
              ::testing::Property(&absl::Status::message, HasSubstr("do not fit the 227 KiB")));
}

TEST(HopperStore, CompilesWithNvrtcToABulkTensorStore) {
  for (const Graph &g : {Graphs()[0], Graphs()[1]}) {
    SCOPED_TRACE(g.name);
    auto p = Plan(g.text);
    ASSERT_TRUE(p);
    const std::map<std::string, int64_t> params = {{"block_m", 128},  {"block_n", 128},  {"block_k", 64},
                                                   {"stages", 4},     {"consumers", 2},  {"persistent", 1},
                                                   {"group_m", 8},    {"split_k", 1},    {"tma_store", 1},
                                                   {"wgmma", 1}};
    auto emitted = EmitKernel(p->kernel, params);
    ASSERT_TRUE(emitted.ok()) << emitted.status();
    nvrtc::CompileOptions options;
    options.arch = "sm_90a";
    options.headers = RuntimeHeaders();
    auto cubin = nvrtc::CompileToCubin(emitted->source, options);
    ASSERT_TRUE(cubin.ok()) << cubin.status();
    EXPECT_THAT(cubin->ptx, HasSubstr("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"));
    EXPECT_THAT(cubin->ptx, HasSubstr("cp.async.bulk.commit_group"));
    EXPECT_THAT(cubin->ptx, HasSubstr("cp.async.bulk.wait_group.read 0"));
    EXPECT_THAT(cubin->ptx, HasSubstr("fence.proxy.async.shared::cta"));
    EXPECT_THAT(cubin->ptx, HasSubstr("bar.sync"));
    EXPECT_THAT(cubin->ptx, HasSubstr("wgmma.mma_async.sync.aligned.m64n128k16"));
    EXPECT_EQ(cubin->spill_bytes, 0) << cubin->log;
    EXPECT_THAT(cubin->log, ::testing::Not(HasSubstr("wgmma"))) << cubin->log;
    std::cout << g.name << ": " << cubin->registers << " registers, dynamic shared memory "
              << emitted->launch.dynamic_shared_memory_bytes() << " bytes\n" << cubin->log << "\n";
  }
}

struct Mutant {
  const char *name;
  const char *from, *to;
  std::vector<const char *> reasons;  // any of them
};

TEST(HopperStore, PlantedFaultsAreCaught) {
  const std::vector<Mutant> mutants = {
      {"no fence.proxy.async before the store", "      tir_fence_proxy_async();\n      if (t == 0) tir_bulk_wait_read<0>();\n",
       "      if (t == 0) tir_bulk_wait_read<0>();\n", {"MISSING_PROXY_FENCE"}},
      {"the fence.proxy.async after the barrier (the store may issue before it)",
       "      tir_fence_proxy_async();\n      if (t == 0) tir_bulk_wait_read<0>();\n      tir_named_barrier(1 + cw, 128);\n",
       "      if (t == 0) tir_bulk_wait_read<0>();\n      tir_named_barrier(1 + cw, 128);\n      tir_fence_proxy_async();\n",
       {"MISSING_PROXY_FENCE"}},
      {"no wait_group.read before a slot is reused",
       "      if (t == 0) tir_bulk_wait_read<0>();\n      tir_named_barrier(1 + cw, 128);\n",
       "      tir_named_barrier(1 + cw, 128);\n", {"BULK_STORE_NOT_READ"}},
      {"a wait_group.read that leaves the previous box's store reading", "tir_bulk_wait_read<0>();\n      tir_named_barrier",
       "tir_bulk_wait_read<1>();\n      tir_named_barrier", {"BULK_STORE_NOT_READ"}},
      {"the wait_group.read after the barrier (nothing orders it before the next box's stores)",
       "      if (t == 0) tir_bulk_wait_read<0>();\n      tir_named_barrier(1 + cw, 128);\n      if (t == 0) {\n",
       "      tir_named_barrier(1 + cw, 128);\n      if (t == 0) {\n        tir_bulk_wait_read<0>();\n",
       {"BULK_STORE_NOT_READ"}},
      {"one slot for every box", " & 1u) * ", " & 0u) * ", {"BULK_STORE_NOT_READ"}},
      {"no barrier between the staging stores and the TMA store",
       "      if (t == 0) tir_bulk_wait_read<0>();\n      tir_named_barrier(1 + cw, 128);\n",
       "      if (t == 0) tir_bulk_wait_read<0>();\n",
       {"SHARED_MEMORY_RACE", "SCHEDULE_DEPENDENT_RESULT", "BULK_STORE_NOT_READ"}},
      {"no wait_group.read before the block exits", "    if (tma_out && t == 0) tir_bulk_wait_read<0>();\n", "",
       {"BULK_STORE_NOT_READ"}},
      {"a named barrier for too few threads", "tir_named_barrier(1 + cw, 128);", "tir_named_barrier(1 + cw, 64);",
       {"BARRIER_DIVERGENCE", "SHARED_MEMORY_RACE", "BULK_STORE_NOT_READ"}},
  };
  auto p = Plan(kBiasGeluBf16);
  ASSERT_TRUE(p);
  // 64 x 64 tiles, one consumer, 2 stages; two blocks take the 12 tiles.
  const std::map<std::string, int64_t> params = {{"block_m", 64},    {"block_n", 64},   {"block_k", 64}, {"stages", 2},
                                                 {"consumers", 1},   {"persistent", 1}, {"group_m", 1},  {"split_k", 1},
                                                 {"tma_store", 1},   {"wgmma", 1}};
  auto clean = RunLanes(*p, params, nullptr, 2);
  ASSERT_TRUE(clean.ok()) << clean.status();
  EXPECT_LE(*clean, Tolerance(*p));
  for (const Mutant &m : mutants) {
    SCOPED_TRACE(m.name);
    bool applied = false;
    auto err = RunLanes(
        *p, params,
        [&](std::string s) {
          applied = s.find(m.from) != std::string::npos;
          return absl::StrReplaceAll(s, {{m.from, m.to}});
        },
        2);
    ASSERT_TRUE(applied) << "the mutation does not apply to the generated source";
    ASSERT_FALSE(err.ok()) << "not caught (relative L2 error " << *err << ")";
    bool named = false;
    const std::string said = absl::StrCat(ReasonOf(err.status()), ": ", err.status().message());
    for (const char *r : m.reasons) named = named || said.find(r) != std::string::npos;
    EXPECT_TRUE(named) << err.status();
  }
  // A fence after the barrier is caught under the natural order alone too
  // (HopperLanes.BulkTensorStoreFaultsAreCaught has the schedule where every
  // writer fenced before the store issued).
  LaneSchedules natural;
  natural.schedules = 1;
  const Mutant &late = mutants[1];
  auto err = RunLanes(
      *p, params, [&](std::string s) { return absl::StrReplaceAll(s, {{late.from, late.to}}); }, 2, &natural);
  ASSERT_FALSE(err.ok()) << "not caught (relative L2 error " << *err << ")";
  EXPECT_EQ(ReasonOf(err.status()), "MISSING_PROXY_FENCE") << err.status();
}

}  // namespace
}  // namespace tir::codegen
