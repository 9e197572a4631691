// The online max and sum (compiler/ir/OnlineSoftmax.h) on rows a vocabulary
// softmax meets: a plan of two kernels reading the row twice, and the
// statistics the reference computes in two passes for rows with -inf
// entries, a row of -inf only, a NaN, a +inf, values whose exp overflows
// without the max taken off, a rising row that moves the running max at
// every element, and equal values far below a max that comes last. Candidates of every strategy, split and vector width run
// lane by lane (tir_lanes.h) and in the plain host form.

#include <cmath>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "compiler/codegen/Emitter.h"
#include "compiler/codegen/HostBuild.h"
#include "compiler/codegen/LaunchContract.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/planning/Plan.h"
#include "compiler/reference/Interpreter.h"
#include "compiler/reference/Tensor.h"
#include "gtest/gtest.h"

namespace tir::codegen {
namespace {

constexpr int64_t kRows = 7, kLen = 24600;  // a row of f32 over sm_90a's 96 KiB row budget

const char *kGraph = R"mlir(
tir.graph @g(%x: tensor<7x24600xf32>) -> tensor<7x24600xf32> {
  %m = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<7x24600xf32> -> tensor<7x1xf32>
  %s = sub %x, %m : (tensor<7x24600xf32>, tensor<7x1xf32>) -> tensor<7x24600xf32>
  %e = exp %s : tensor<7x24600xf32>
  %z = reduce(%e)<dimensions = [1], reduction_mode = <add>> : tensor<7x24600xf32> -> tensor<7x1xf32>
  %y = div %e, %z : (tensor<7x24600xf32>, tensor<7x1xf32>) -> tensor<7x24600xf32>
  results %y : tensor<7x24600xf32>
})mlir";

reference::Tensor Rows() {
  reference::Tensor x = reference::Tensor::Zeros(tir::v1::DTYPE_F32, {kRows, kLen});
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> wide(-120.0f, 120.0f);
  for (int64_t j = 0; j < kLen; ++j) {
    const float v = wide(gen);
    x.SetF(0 * kLen + j, j % 97 == 5 ? -INFINITY : v);  // -inf entries among values exp overflows on
    x.SetF(1 * kLen + j, -INFINITY);                      // only -inf: max -inf, sum NaN
    x.SetF(2 * kLen + j, j == kLen - 3 ? NAN : v);        // a NaN: NaN max and sum
    x.SetF(3 * kLen + j, j == kLen / 2 ? INFINITY : v);   // +inf: max +inf, sum NaN
    x.SetF(4 * kLen + j, static_cast<float>(j) * 0.004f); // rising: a new max at every element
    x.SetF(5 * kLen + j, j == 0 ? 3.0f : -INFINITY);      // one finite element first
    // Equal values far below a max that comes last: every term is taken
    // against running references that are not the max, the same way.
    x.SetF(6 * kLen + j, j == kLen - 1 ? 3.0f : j % 2 ? -3.3f : -5.7f);
  }
  return x;
}

// Equal NaN positions and infinities; elsewhere within the bound the
// verifier holds a sum of a row's length to (reference::RelativeL2Bound:
// 4 u sqrt(24600), 3.7e-5), element by element. One thread summing a row
// of equal terms in f32 (the plain form) is off by about 2.8e-5 on the
// row that ends in its max.
const double kBound = reference::RelativeL2Bound(tir::v1::DTYPE_F32, kLen);

void ExpectClose(const reference::Tensor &got, const reference::Tensor &want, const std::string &what) {
  ASSERT_EQ(got.NumElements(), want.NumElements()) << what;
  int bad = 0;
  for (int64_t k = 0; k < want.NumElements() && bad < 5; ++k) {
    const double g = got.GetF(k), w = want.GetF(k);
    const bool ok = std::isnan(w) ? std::isnan(g)
                    : std::isinf(w) ? g == w
                                    : std::fabs(g - w) <= kBound * std::max(std::fabs(w), 1e-30) + 1e-37;
    if (!ok) {
      ++bad;
      ADD_FAILURE() << what << " element " << k << ": got " << g << ", want " << w;
    }
  }
}

class OnlineSoftmaxTest : public ::testing::Test {
 protected:
  std::unique_ptr<mlir::MLIRContext> ctx_ = makeTirContext();
};

TEST_F(OnlineSoftmaxTest, LongRowsPlanAsTwoKernelsReadingTheRowTwice) {
  auto loaded = LoadGraphText(kGraph, ctx_.get());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  planning::AnalyticCostModel model;
  auto planned = planning::PlanGraph(loaded->graph, *target::LookupArch("sm_90a"), model, 1);
  ASSERT_TRUE(planned.ok()) << planned.status();
  const planning::Partition &p = planned->partition;
  ASSERT_EQ(p.kernels.size(), 2u);
  EXPECT_EQ(p.kernels[0].space.kind, planning::KernelKind::kReduction);
  EXPECT_TRUE(p.kernels[0].space.online);
  EXPECT_FALSE(p.kernels[0].space.row_resident);
  // The statistics kernel reads x and writes m and z; the normalize reads
  // x, m and z (exp(x - m) recomputed, no row-sized intermediate).
  EXPECT_EQ(p.kernels[0].inputs.size(), 1u);
  EXPECT_EQ(p.kernels[0].outputs.size(), 2u);
  EXPECT_EQ(p.kernels[1].space.kind, planning::KernelKind::kPointwise);
  EXPECT_EQ(p.kernels[1].inputs.size(), 3u);
  for (mlir::Value v : p.kernels[1].inputs) {
    auto t = v.getType().cast<mlir::RankedTensorType>();
    if (!v.isa<mlir::BlockArgument>()) EXPECT_EQ(t.getDimSize(1), 1) << "a row-sized intermediate";
  }
  // Few rows: the default splits them over blocks, as many as still give
  // each block a full pass of its threads' runs.
  const auto &kept = planned->spaces[0].kept;
  bool sawDefault = false;
  for (const auto &c : kept) {
    if (!c.is_default) continue;
    sawDefault = true;
    EXPECT_EQ(c.params.at("strategy"), 2);
    EXPECT_GE(c.params.at("split"), 4);
    EXPECT_GE(kLen / c.params.at("split"), c.params.at("threads_per_row") * c.params.at("vector_width"));
  }
  EXPECT_TRUE(sawDefault);
}

TEST_F(OnlineSoftmaxTest, StatisticsMatchTheTwoPassReferenceOnSpecialRows) {
  auto loaded = LoadGraphText(kGraph, ctx_.get());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  planning::AnalyticCostModel model;
  auto planned = planning::PlanGraph(loaded->graph, *target::LookupArch("sm_90a"), model, 1);
  ASSERT_TRUE(planned.ok()) << planned.status();
  mlir::OwningOpRef<mlir::ModuleOp> module = planning::BuildPartitionedModule(loaded->graph, planned->partition);
  const std::string name = loaded->graph.getSymName().str();
  GraphOp stats, normalize;
  for (GraphOp g : module->getOps<GraphOp>()) {
    if (g.getSymName() == name + "_k0") stats = g;
    if (g.getSymName() == name + "_k1") normalize = g;
  }
  ASSERT_TRUE(stats && normalize);
  const std::vector<reference::Tensor> in = {Rows()};
  auto want = reference::Evaluate(stats, in);
  ASSERT_TRUE(want.ok()) << want.status();
  *want = AsStoredOutputs(stats, *std::move(want));
  // The reference's statistics themselves: -inf row max -inf, sum NaN.
  EXPECT_TRUE(std::isinf((*want)[0].GetF(1)) && (*want)[0].GetF(1) < 0);
  EXPECT_TRUE(std::isnan((*want)[1].GetF(1)));

  // Candidates: every (strategy, split, vector width) with 256 or 1024
  // threads a row, and the default.
  const auto &kept = planned->spaces[0].kept;
  std::set<std::string> seen;
  int ran = 0;
  const std::string dir = std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") + "/online";
  for (const auto &c : kept) {
    const int64_t tpr = c.params.at("threads_per_row");
    const std::string family =
        absl::StrCat(c.params.at("strategy"), "/", c.params.count("split") ? c.params.at("split") : 1, "/",
                     c.params.at("vector_width"), "/", c.params.at("rows_per_block"));
    if (!c.is_default && ((tpr != 256 && tpr != 1024) || !seen.insert(family).second)) continue;
    std::string params;
    for (const auto &[k, v] : c.params) absl::StrAppend(&params, " ", k, "=", v);
    SCOPED_TRACE(params);
    auto emitted = EmitKernel(stats, c.params);
    ASSERT_TRUE(emitted.ok()) << emitted.status();
    EXPECT_NE(emitted->source.find("tir_online_combine"), std::string::npos);
    for (HostForm form : {HostForm::kLanes, HostForm::kPlain}) {
      if (form == HostForm::kPlain && !c.is_default) continue;
      HostBuildOptions opts;
      opts.form = form;
      auto built = BuildHostKernel(*emitted, dir, opts);
      ASSERT_TRUE(built.ok()) << built.status();
      auto got = RunOnHost(stats, *emitted, **built, in);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(got->size(), want->size());
      for (size_t o = 0; o < want->size(); ++o) {
        ExpectClose((*got)[o], (*want)[o], absl::StrCat(form == HostForm::kLanes ? "lanes" : "plain", " output ", o));
      }
    }
    ++ran;
  }
  EXPECT_GE(ran, 6);
}

}  // namespace
}  // namespace tir::codegen
