// The sm_90a matmul in thread-block clusters proven on the CPU: candidates
// of 2x1 clusters (two M tiles sharing their B tile) and 1x2 clusters (two
// N tiles sharing their A tile), whose CTAs each load half of the shared
// operand's boxes and multicast it to both, run lane by lane with the
// cluster's CTAs together and match the reference: partial tiles, an odd
// count of tiles along the cluster's dimension (a CTA whose tile lies past
// the problem still loads and releases its share), K not a multiple of 64,
// a transposed B, and operands no tensor map can describe (each CTA then
// stages its own tiles). The launch contract carries the cluster; a
// cluster candidate compiles with NVRTC to PTX with the multicast TMA, the
// remote arrivals and barrier.cluster; and faults planted in the generated
// source (a multicast mask leaving the peer out, no barrier.cluster after
// mbarrier.init, none before exit) are each caught by the emulator.

#include <cstdlib>
#include <set>

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

// M = 150 (three 64-row tiles: odd for a 2x1 cluster), N = 136 (three
// 64-column tiles: odd for a 1x2 cluster), K = 136 (a last K step of 8);
// both operands' rows 16-byte aligned: TMA.
constexpr const char *kOdd = R"G(
tir.graph @mm(%x: tensor<150x136xbf16>, %w: tensor<136x136xbf16>, %bias: tensor<1x136xf32>) -> tensor<150x136xf32> {
  %m = matmul(%x, %w) : (tensor<150x136xbf16>, tensor<136x136xbf16>) -> tensor<150x136xf32>
  %y = add %m, %bias : (tensor<150x136xf32>, tensor<1x136xf32>) -> tensor<150x136xf32>
  results %y : tensor<150x136xf32>
}
)G";

// x @ w^T with w (N, K): B K-major; N = 130, K = 200.
constexpr const char *kTransposedB = R"G(
tir.graph @wt(%x: tensor<200x200xbf16>, %w: tensor<130x200xbf16>) -> tensor<200x130xf32> {
  %t = transpose %w permutation = [1, 0] : tensor<130x200xbf16> -> tensor<200x130xbf16>
  %m = matmul(%x, %t) : (tensor<200x200xbf16>, tensor<200x130xbf16>) -> tensor<200x130xf32>
  results %m : tensor<200x130xf32>
}
)G";

// A row stride of B that is not 16-byte aligned: no tensor map, staged.
constexpr const char *kStrided = R"G(
tir.graph @st(%x: tensor<140x64xf16> {tir.stride = "(72,1)"}, %w: tensor<64x140xf16> {tir.stride = "(141,1)"}) -> tensor<140x140xf32> {
  %m = matmul(%x, %w) : (tensor<140x64xf16>, tensor<64x140xf16>) -> tensor<140x140xf32>
  results %m : tensor<140x140xf32>
}
)G";

std::string WorkDir() { return lanetest::TestWorkDir("cluster"); }

using Planned = lanetest::PlannedKernel;
std::unique_ptr<Planned> Plan(const char *text) { return lanetest::PlanOneKernel(text); }

// Emits `params`, optionally edits the source, runs it lane by lane: the
// worst relative L2 error, or the emulator's (or the build's) error.
absl::StatusOr<double> RunLanes(const Planned &p, const std::map<std::string, int64_t> &params,
                                const std::function<std::string(std::string)> &edit = nullptr) {
  return lanetest::RunLanes(p, params, WorkDir(), {edit});
}

std::string Params(const std::map<std::string, int64_t> &params) { return lanetest::ParamsText(params); }

int64_t ClusterOf(const std::map<std::string, int64_t> &c) {
  auto m = c.find("cluster_m"), n = c.find("cluster_n");
  return (m == c.end() ? 1 : m->second) * 10 + (n == c.end() ? 1 : n->second);
}

struct Graph {
  const char *name;
  const char *text;
};

class ClusterCandidates : public ::testing::TestWithParam<Graph> {};

// Every tile shape, consumer count and cluster shape of the space's
// cluster candidates once.
TEST_P(ClusterCandidates, PassLaneByLane) {
  auto p = Plan(GetParam().text);
  ASSERT_TRUE(p);
  std::set<std::tuple<int64_t, int64_t, int64_t, int64_t>> seen;
  std::set<int64_t> clusters;
  for (const planning::TileCandidate &cand : p->space) {
    const auto &c = cand.params;
    if (ClusterOf(c) == 11) continue;
    EXPECT_FALSE(cand.is_default);
    const auto key = std::make_tuple(c.at("block_m"), c.at("block_n"), c.at("consumers"), ClusterOf(c));
    if (!seen.insert(key).second) continue;
    clusters.insert(ClusterOf(c));
    SCOPED_TRACE(Params(c));
    auto err = RunLanes(*p, c);
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LE(*err, 1e-5);
  }
  // Both cluster shapes ran.
  EXPECT_EQ(clusters, (std::set<int64_t>{21, 12}));
  EXPECT_GE(seen.size(), 4u);
}

INSTANTIATE_TEST_SUITE_P(Graphs, ClusterCandidates,
                         ::testing::Values(Graph{"odd_tiles", kOdd}, Graph{"transposed_b", kTransposedB},
                                           Graph{"strided", kStrided}),
                         [](const ::testing::TestParamInfo<Graph> &info) { return info.param.name; });

std::map<std::string, int64_t> ClusterParams(int64_t cm, int64_t cn) {
  return {{"block_m", 64},    {"block_n", 64},  {"block_k", 64},   {"stages", 2},      {"consumers", 1},
          {"persistent", 1},  {"group_m", 1},   {"split_k", 1},    {"wgmma", 1},       {"cluster_m", cm},
          {"cluster_n", cn}};
}

TEST(ClusterMatmul, TheLaunchContractCarriesTheCluster) {
  auto p = Plan(kOdd);
  ASSERT_TRUE(p);
  for (auto [cm, cn] : {std::pair<int64_t, int64_t>{2, 1}, std::pair<int64_t, int64_t>{1, 2}}) {
    auto emitted = EmitKernel(p->kernel, ClusterParams(cm, cn));
    ASSERT_TRUE(emitted.ok()) << emitted.status();
    ASSERT_EQ(emitted->launch.cluster_size(), 3);
    EXPECT_EQ(emitted->launch.cluster(0), 2u);
    EXPECT_EQ(emitted->launch.cluster(1), 1u);
    EXPECT_EQ(emitted->launch.cluster(2), 1u);
    auto launch = HostLaunch::Prepare(p->kernel, emitted->field_names, emitted->launch, p->inputs);
    ASSERT_TRUE(launch.ok()) << launch.status();
    // Three 64 x 64 tiles along the cluster's dimension padded to two
    // clusters of two, times three along the other: 12 blocks.
    EXPECT_EQ((*launch)->grid()[0], 12u);
    EXPECT_EQ((*launch)->grid()[0] % 2, 0u);
  }
  // Without a cluster the contract names none.
  auto plain = ClusterParams(1, 1);
  plain.erase("cluster_m");
  plain.erase("cluster_n");
  auto emitted = EmitKernel(p->kernel, plain);
  ASSERT_TRUE(emitted.ok()) << emitted.status();
  EXPECT_EQ(emitted->launch.cluster_size(), 0);
  EXPECT_THAT(emitted->source, ::testing::Not(HasSubstr("tir_cluster_sync")));
}

TEST(ClusterMatmul, AClusterCandidateCompilesWithNvrtcToMulticast) {
  auto p = Plan(kOdd);
  ASSERT_TRUE(p);
  for (auto [cm, cn, bn] : {std::tuple<int64_t, int64_t, int64_t>{2, 1, 128}, std::tuple<int64_t, int64_t, int64_t>{1, 2, 128},
                            std::tuple<int64_t, int64_t, int64_t>{2, 1, 256}}) {
    auto params = ClusterParams(cm, cn);
    SCOPED_TRACE(Params(params) + " block_n=" + std::to_string(bn));
    params["block_m"] = 128;
    params["block_n"] = bn;
    params["consumers"] = 2;
    params["stages"] = 4;
    auto emitted = EmitKernel(p->kernel, params);
    ASSERT_TRUE(emitted.ok()) << emitted.status();
    nvrtc::CompileOptions options;
    options.arch = "sm_90a";
    options.headers = RuntimeHeaders();
    auto cubin = nvrtc::CompileToCubin(emitted->source, options);
    ASSERT_TRUE(cubin.ok()) << cubin.status();
    EXPECT_THAT(cubin->ptx, HasSubstr("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                                      ".multicast::cluster"));
    EXPECT_THAT(cubin->ptx, HasSubstr("mapa.shared::cluster.u32"));
    EXPECT_THAT(cubin->ptx, HasSubstr("mbarrier.arrive.release.cluster.shared::cluster.b64"));
    EXPECT_THAT(cubin->ptx, HasSubstr("barrier.cluster.arrive.release"));
    EXPECT_THAT(cubin->ptx, HasSubstr("barrier.cluster.wait.acquire"));
    EXPECT_THAT(cubin->ptx, ::testing::Not(HasSubstr(".reqnctapercluster")));  // no __cluster_dims__
    EXPECT_THAT(cubin->ptx, HasSubstr("setmaxnreg.dec.sync.aligned.u32 96"));
    EXPECT_EQ(cubin->spill_bytes, 0) << cubin->log;
    EXPECT_THAT(cubin->log, ::testing::Not(HasSubstr("wgmma"))) << cubin->log;
    params.erase("cluster_m");
    params.erase("cluster_n");
    auto plainEmitted = EmitKernel(p->kernel, params);
    auto plain = nvrtc::CompileToCubin(plainEmitted->source, options);
    ASSERT_TRUE(plain.ok());
    EXPECT_EQ(plain->spill_bytes, 0) << plain->log;
  }
}

std::string ReasonAndMessage(const absl::Status &s) { return absl::StrCat(ReasonOf(s), ": ", s.message()); }

TEST(ClusterMatmul, PlantedFaultsAreCaught) {
  auto p = Plan(kOdd);
  ASSERT_TRUE(p);
  struct Mutant {
    const char *name;
    const char *from, *to;
    const char *reason;
  };
  const std::vector<Mutant> mutants = {
      {"the multicast mask leaves the peer out", ", full + s, 3u);", ", full + s, 1u << crank);", "MBARRIER_DEADLOCK"},
      {"no barrier.cluster after mbarrier.init", "    tir_mbar_init_fence();\n  }\n  tir_cluster_sync();\n",
       "    tir_mbar_init_fence();\n  }\n  TIR_SYNC();\n", "barrier.cluster after mbarrier.init"},
      {"a CTA leaves while its peer may still use it", "  tir_cluster_sync();\n#else\n", "#else\n",
       "CLUSTER_PEER_EXITED"},
  };
  for (auto [cm, cn] : {std::pair<int64_t, int64_t>{2, 1}, std::pair<int64_t, int64_t>{1, 2}}) {
    const auto params = ClusterParams(cm, cn);
    SCOPED_TRACE(Params(params));
    // The kernel loads by TMA (what the mutations change).
    auto emitted = EmitKernel(p->kernel, params);
    ASSERT_TRUE(emitted.ok()) << emitted.status();
    ASSERT_THAT(emitted->source, HasSubstr("tir_tma_load_2d_multicast("));
    auto clean = RunLanes(*p, params);
    ASSERT_TRUE(clean.ok()) << clean.status();
    EXPECT_LE(*clean, 1e-5);
    for (const Mutant &m : mutants) {
      SCOPED_TRACE(m.name);
      bool applied = false;
      auto err = RunLanes(*p, params, [&](std::string s) {
        applied = s.find(m.from) != std::string::npos;
        return absl::StrReplaceAll(s, {{m.from, m.to}});
      });
      ASSERT_TRUE(applied) << "the mutation does not apply to the generated source";
      ASSERT_FALSE(err.ok()) << "not caught (relative L2 error " << *err << ")";
      EXPECT_THAT(ReasonAndMessage(err.status()), HasSubstr(m.reason));
    }
  }
}

}  // namespace
}  // namespace tir::codegen
