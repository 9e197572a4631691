#include "server/frontend/request_keyer.h"

#include "absl/strings/str_cat.h"
#include "compiler/planning/Plan.h"
#include "compiler/support/status.h"
#include "compiler/target/ArchTable.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"

namespace tir::frontend {
namespace {

std::string Graph(int rows, const std::string &op = "exp") {
  return absl::StrCat("tir.graph @g(%x: tensor<", rows, "x64xf32>) -> tensor<", rows, "x64xf32> {\n  %y = ", op,
                      " %x : tensor<", rows, "x64xf32>\n  results %y : tensor<", rows, "x64xf32>\n}\n");
}

class RequestKeyerTest : public ::testing::Test {
 protected:
  RequestKeyerTest() : limits_(registry_), keyer_(common::Limits{.max_ops_per_graph = 3}, tuning::TunerConfig(), reference::BucketPolicy(), limits_) {}
  static tir::v1::GraphSource Source(const std::string &text) {
    tir::v1::GraphSource s;
    s.set_mlir_text(text);
    return s;
  }
  prometheus::Registry registry_;
  common::LimitCounter limits_;
  RequestKeyer keyer_;
};

TEST_F(RequestKeyerTest, ARequestIsKnownByItsBytesOnceParsedAndKeyedByItsGraph) {
  tir::v1::CompileOptions options;
  EXPECT_EQ(keyer_.Known(Source(Graph(8)), options, "host"), nullptr);
  absl::StatusOr<Parsed> p = keyer_.Parse(Source(Graph(8)), options, "host");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->key.size(), 64u);
  EXPECT_FALSE(p->dynamic);
  ASSERT_NE(p->graph, nullptr) << "the parsed graph stays with the request for planning";
  std::shared_ptr<const Parsed> known = keyer_.Known(Source(Graph(8)), options, "host");
  ASSERT_NE(known, nullptr);
  EXPECT_EQ(known->key, p->key);
  EXPECT_EQ(known->graph, nullptr) << "the hot path keeps keys, not graphs";

  // Other sizes, arch, precision or width: other keys; the same text
  // spelled with different whitespace: the same graph, the same key.
  EXPECT_NE(keyer_.Parse(Source(Graph(16)), options, "host")->key, p->key);
  EXPECT_NE(keyer_.Parse(Source(Graph(8)), options, "sm_90a")->key, p->key);
  tir::v1::CompileOptions tf32;
  tf32.set_precision("tf32");
  EXPECT_NE(keyer_.Parse(Source(Graph(8)), tf32, "host")->key, p->key);
  tir::v1::CompileOptions ieee;
  ieee.set_precision("ieee");
  EXPECT_EQ(keyer_.Parse(Source(Graph(8)), ieee, "host")->key, p->key) << "ieee is the default spelled out";
  tir::v1::CompileOptions narrow;
  narrow.mutable_budget()->set_max_candidates_per_kernel(2);
  EXPECT_NE(keyer_.Parse(Source(Graph(8)), narrow, "host")->key, p->key);
  EXPECT_EQ(keyer_.Parse(Source("  " + Graph(8)), options, "host")->key, p->key);
}

TEST_F(RequestKeyerTest, RefusalsHaveTheirReasons) {
  tir::v1::CompileOptions options;
  std::string big = "tir.graph @g(%x: tensor<8xf32>) -> tensor<8xf32> {\n";
  std::string last = "%x";
  for (int i = 0; i < 4; ++i) {
    absl::StrAppend(&big, "  %y", i, " = exp ", last, " : tensor<8xf32>\n");
    last = absl::StrCat("%y", i);
  }
  absl::StrAppend(&big, "  results ", last, " : tensor<8xf32>\n}\n");
  EXPECT_EQ(ReasonOf(keyer_.Parse(Source(big), options, "host").status()), "LIMIT_EXCEEDED");
  tir::v1::CompileOptions bad;
  bad.set_precision("fp8");
  EXPECT_FALSE(keyer_.Parse(Source(Graph(8)), bad, "host").ok());
  EXPECT_EQ(keyer_.Known(Source(Graph(8)), bad, "host"), nullptr);
  EXPECT_FALSE(keyer_.Parse(Source("not a graph"), options, "host").ok());
}

TEST_F(RequestKeyerTest, PlanningUsesTheParsedGraphAndFillsTheSignature) {
  tir::v1::CompileOptions options;
  options.add_shape_hints()->set_input(0);
  absl::StatusOr<Parsed> p = keyer_.Parse(Source(Graph(8)), options, "host");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(p->notes, ::testing::ElementsAre("shape hints ignored: the graph has no dynamic dims"));
  planning::AnalyticCostModel model;
  auto plan = keyer_.Plan(*p, "host", "", model);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->size(), 1u);
  EXPECT_EQ(p->signature.inputs_size(), 1);
  Parsed unparsed = *keyer_.Known(Source(Graph(8)), options, "host");
  EXPECT_FALSE(keyer_.Plan(unparsed, "host", "", model).ok());
}

// Planning is bounded per request: by the candidates its kernels keep and
// by time, each refused with LIMIT_EXCEEDED naming the limit and counted.
TEST_F(RequestKeyerTest, PlanningPastItsBudgetIsRefusedNamingTheLimit) {
  // Two kernels (a matmul whose result is another matmul's operand).
  const std::string two =
      "tir.graph @g(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> {\n"
      "  %c = matmul(%a, %b) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>\n"
      "  %d = matmul(%c, %b) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>\n"
      "  results %d : tensor<64x64xf32>\n}\n";
  planning::AnalyticCostModel model;
  tir::v1::CompileOptions options;
  {
    RequestKeyer keyer(common::Limits{.max_planned_candidates = 1000000}, tuning::TunerConfig(),
                       reference::BucketPolicy(), limits_);
    absl::StatusOr<Parsed> p = keyer.Parse(Source(two), options, "sm_90a");
    ASSERT_TRUE(p.ok()) << p.status();
    ASSERT_TRUE(keyer.Plan(*p, "sm_90a", "", model).ok()) << "within the budget";
  }
  RequestKeyer keyer(common::Limits{.max_planned_candidates = 3}, tuning::TunerConfig(), reference::BucketPolicy(),
                     limits_);
  absl::StatusOr<Parsed> p = keyer.Parse(Source(two), options, "sm_90a");
  ASSERT_TRUE(p.ok()) << p.status();
  auto plan = keyer.Plan(*p, "sm_90a", "", model);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(ReasonOf(plan.status()), "LIMIT_EXCEEDED");
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(plan.status().message()), ::testing::HasSubstr("maxPlannedCandidates=3"));
  // A plan past its time: stopped, with the time limit's name.
  planning::PlanOptions late;
  late.deadline = absl::InfinitePast();
  auto timed = planning::PlanGraph(p->graph->loaded.graph, *target::LookupArch("sm_90a"), model, 1, late);
  ASSERT_FALSE(timed.ok());
  EXPECT_EQ(ReasonOf(timed.status()), "LIMIT_EXCEEDED");
  EXPECT_THAT(std::string(timed.status().message()), ::testing::HasSubstr("planningBudgetMs"));
  const std::string metrics = [&] {
    std::string out;
    for (const auto &family : registry_.Collect()) {
      for (const auto &m : family.metric) {
        for (const auto &l : m.label) {
          if (l.value == "maxPlannedCandidates") out += absl::StrCat(l.value, "=", m.counter.value, ";");
        }
      }
    }
    return out;
  }();
  EXPECT_EQ(metrics, "maxPlannedCandidates=1;");
}

}  // namespace
}  // namespace tir::frontend
