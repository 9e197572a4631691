// Every kernel of a corpus of graphs, for several candidates each, is
// emitted, built by the system compiler, run on the CPU with poisoned outputs
// and compared with the reference interpreter.

#include <cstdlib>

#include "absl/strings/substitute.h"
#include "compiler/codegen/Emitter.h"
#include "compiler/codegen/HostBuild.h"
#include "compiler/codegen/LaunchContract.h"
#include "compiler/codegen/testing/CodegenCorpus.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/planning/Plan.h"
#include "compiler/reference/Interpreter.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tir::codegen {
namespace {

using testing_corpus::Case;
using testing_corpus::Corpus;

double Tolerance(reference::DType d) { return reference::RelativeL2Bound(d); }
// The bound for `kernel`'s outputs: the dtype's and the accumulation over
// the kernel's reduced extents.
double Tolerance(reference::DType d, GraphOp kernel) {
  auto domain = kernel->getAttrOfType<mlir::DenseI64ArrayAttr>("tir.iteration_domain").asArrayRef();
  return reference::RelativeL2Bound(d, ReductionLength(kernel, std::vector<int64_t>(domain.begin(), domain.end())));
}

class HostCodegenTest : public ::testing::TestWithParam<Case> {
 protected:
  std::unique_ptr<mlir::MLIRContext> ctx_ = makeTirContext();
  std::string work_ = std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") + "/kernels";
};

TEST_P(HostCodegenTest, EveryKernelAndSeveralCandidatesMatchTheInterpreter) {
  auto loaded = LoadGraphText(GetParam().text, ctx_.get());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const target::ArchInfo arch = *target::LookupArch("sm_90a");
  planning::AnalyticCostModel model;
  auto planned = planning::PlanGraph(loaded->graph, arch, model, 3);
  ASSERT_TRUE(planned.ok()) << planned.status();
  mlir::OwningOpRef<mlir::ModuleOp> module = planning::BuildPartitionedModule(loaded->graph, planned->partition);
  int checked = 0;
  for (size_t k = 0; k < planned->partition.kernels.size(); ++k) {
    GraphOp kernel;
    for (GraphOp g : module->getOps<GraphOp>()) {
      if (g.getSymName() == absl::StrCat(loaded->graph.getSymName().str(), "_k", k)) kernel = g;
    }
    ASSERT_TRUE(kernel);
    // The default, the best ranked, and a few more spread over the space.
    const auto &space = planned->spaces[k].kept;
    std::vector<size_t> picks = {0};
    for (size_t i = 0; i < space.size(); ++i) {
      if (space[i].is_default) picks.push_back(i);
    }
    picks.push_back(space.size() / 2);
    picks.push_back(space.size() - 1);
    // Every dynamic extent of the corpus is 5 at run time (index arguments
    // that size a reshape keep its element count).
    std::vector<reference::Tensor> inputs = reference::SampleInputs(kernel, 5, 11);
    for (reference::Tensor &x : inputs) {
      // Keep divisors away from zero so integer division is exercised, not 0/0.
      if (x.UsesInts() && x.dtype != tir::v1::DTYPE_INDEX) {
        for (int64_t &v : x.i) if (v == 0) v = 3;
      }
    }
    auto want = reference::Evaluate(kernel, inputs);
    ASSERT_TRUE(want.ok()) << want.status();
    *want = AsStoredOutputs(kernel, *std::move(want));
    for (size_t pick : picks) {
      SCOPED_TRACE(absl::StrCat(GetParam().name, " kernel ", k, " candidate #", pick));
      auto emitted = EmitKernel(kernel, space[pick].params);
      ASSERT_TRUE(emitted.ok()) << emitted.status();
      auto built = BuildHostKernel(*emitted, work_);
      ASSERT_TRUE(built.ok()) << built.status();
      auto got = RunOnHost(kernel, *emitted, **built, inputs);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(got->size(), want->size());
      for (size_t o = 0; o < want->size(); ++o) {
        const double err = reference::RelativeL2Error((*got)[o], (*want)[o]);
        auto head = [](const reference::Tensor &t) {
          std::string s = t.ShapeString() + ":";
          for (int64_t i = 0; i < std::min<int64_t>(6, t.NumElements()); ++i) s += " " + std::to_string(t.GetF(i));
          return s;
        };
        EXPECT_LE(err, Tolerance((*want)[o].dtype, kernel))
            << "output " << o << " got " << head((*got)[o]) << " want " << head((*want)[o]);
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 3);
}

INSTANTIATE_TEST_SUITE_P(Corpus, HostCodegenTest, ::testing::ValuesIn(Corpus()),
                         [](const ::testing::TestParamInfo<Case> &info) { return info.param.name; });

TEST(Emitter, OutputIsStableAndNeverContainsUserNames) {
  auto ctx = makeTirContext();
  const std::string text = R"mlir(
tir.graph @"user_graph_name\n#error injected"(%secret_input_name: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %user_value = exp %secret_input_name : tensor<8x16xf32>
  results %user_value : tensor<8x16xf32>
})mlir";
  auto loaded = LoadGraphText(text, ctx.get());
  ASSERT_TRUE(loaded.ok());
  planning::AnalyticCostModel model;
  auto planned = planning::PlanGraph(loaded->graph, *target::LookupArch("sm_90a"), model);
  ASSERT_TRUE(planned.ok());
  auto m1 = planning::BuildPartitionedModule(loaded->graph, planned->partition);
  auto m2 = planning::BuildPartitionedModule(loaded->graph, planned->partition);
  auto kernel = [](mlir::ModuleOp m) {
    for (GraphOp g : m.getOps<GraphOp>()) {
      if (g->hasAttr("tir.kernel_kind")) return g;
    }
    return GraphOp();
  };
  const auto &params = planned->spaces[0].kept[0].params;
  auto a = EmitKernel(kernel(*m1), params), b = EmitKernel(kernel(*m2), params);
  ASSERT_TRUE(a.ok() && b.ok());
  const std::string &body = a->source;
  EXPECT_EQ(a->source, b->source);
  EXPECT_EQ(body.find("secret_input_name"), std::string::npos);
  EXPECT_EQ(body.find("user_value"), std::string::npos);
  EXPECT_EQ(body.find("user_graph_name"), std::string::npos);
  EXPECT_EQ(body.find("injected"), std::string::npos);
}

// The cp.async pipeline of bf16 matmuls, run on the host: K ends in a
// partial tile (zero-filled), M is not a multiple of the tile, every stage
// count is checked, and grouped tile orders (group_m 2 and 3 over 4 tile
// rows, so the last group is short) cover every tile. With N not a multiple
// of 8 the same kernel must take the element-wise staging.
TEST(Emitter, MatmulPipelineMatchesTheInterpreterOnTheHost) {
  auto ctx = makeTirContext();
  const std::string work = std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") + "/pipeline";
  for (int n : {48, 44}) {
    const std::string text = absl::Substitute(R"mlir(
tir.graph @g(%a: tensor<100x72xbf16>, %b: tensor<72x$0xbf16>) -> tensor<100x$0xf32> {
  %c = matmul(%a, %b) : (tensor<100x72xbf16>, tensor<72x$0xbf16>) -> tensor<100x$0xf32>
  %r = relu_fwd %c : tensor<100x$0xf32>
  results %r : tensor<100x$0xf32>
})mlir",
                                              n);
    auto loaded = LoadGraphText(text, ctx.get());
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    planning::AnalyticCostModel model;
    auto planned = planning::PlanGraph(loaded->graph, *target::LookupArch("sm_90a"), model);
    ASSERT_TRUE(planned.ok()) << planned.status();
    auto module = planning::BuildPartitionedModule(loaded->graph, planned->partition);
    GraphOp kernel;
    for (GraphOp g : module->getOps<GraphOp>()) {
      if (g->hasAttr("tir.kernel_kind")) kernel = g;
    }
    ASSERT_TRUE(kernel);
    std::vector<reference::Tensor> inputs = reference::SampleInputs(kernel, 1, 5);
    auto want = reference::Evaluate(kernel, inputs);
    ASSERT_TRUE(want.ok()) << want.status();
    *want = AsStoredOutputs(kernel, *std::move(want));
    for (int64_t stages : {2, 3, 4}) {
      SCOPED_TRACE(absl::StrCat("N ", n, " stages ", stages, " group_m ", stages - 1));
      const std::map<std::string, int64_t> params = {{"block_m", 32}, {"block_n", 16}, {"block_k", 32},
                                                     {"warps", 2},     {"stages", stages}, {"split_k", 1},
                                                     {"group_m", stages - 1}};
      auto emitted = EmitKernel(kernel, params);
      ASSERT_TRUE(emitted.ok()) << emitted.status();
      EXPECT_NE(emitted->source.find("tir_cp_async16"), std::string::npos);
      auto built = BuildHostKernel(*emitted, work);
      ASSERT_TRUE(built.ok()) << built.status();
      auto got = RunOnHost(kernel, *emitted, **built, inputs);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_LE(reference::RelativeL2Error((*got)[0], (*want)[0]), Tolerance((*want)[0].dtype));
    }
  }
}

}  // namespace
}  // namespace tir::codegen

namespace tir::codegen {
namespace {

// Split reductions keep ticket counters in the launch's workspace. A worker
// measures the candidates of a kernel one after another on the same
// buffers: whatever one candidate left there (another split's partials, a
// counter a faulting kernel did not reset) must not change the next one's
// result.
TEST(SplitWorkspace, CandidatesMeasuredInTurnOnOneWorkspaceStayCorrect) {
  auto ctx = makeTirContext();
  auto loaded = LoadGraphText(R"mlir(
tir.graph @s(%x: tensor<3x6000xf32>) -> tensor<3x1xf32> {
  %s = reduce(%x)<dimensions = [1], reduction_mode = <add>> : tensor<3x6000xf32> -> tensor<3x1xf32>
  results %s : tensor<3x1xf32>
})mlir",
                              ctx.get());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  planning::AnalyticCostModel model;
  auto planned = planning::PlanGraph(loaded->graph, *target::LookupArch("host"), model);
  ASSERT_TRUE(planned.ok()) << planned.status();
  auto module = planning::BuildPartitionedModule(loaded->graph, planned->partition);
  GraphOp kernel;
  for (GraphOp g : module->getOps<GraphOp>()) {
    if (g->hasAttr("tir.kernel_kind")) kernel = g;
  }
  ASSERT_TRUE(kernel);
  const std::vector<reference::Tensor> inputs = reference::SampleInputs(kernel, 1, 9);
  auto want = reference::Evaluate(kernel, inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  const std::string work = std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") + "/split";
  std::unique_ptr<HostLaunch> launch;
  for (int64_t split : {64, 4, 16, 4}) {
    SCOPED_TRACE(absl::StrCat("split ", split));
    const std::map<std::string, int64_t> params = {{"strategy", 2}, {"threads_per_row", 1}, {"rows_per_block", 1},
                                                   {"vector_width", 4}, {"split", split}};
    auto emitted = EmitKernel(kernel, params);
    ASSERT_TRUE(emitted.ok()) << emitted.status();
    auto built = BuildHostKernel(*emitted, work);
    ASSERT_TRUE(built.ok()) << built.status();
    if (!launch) {
      auto made = HostLaunch::Prepare(kernel, emitted->field_names, emitted->launch, inputs);
      ASSERT_TRUE(made.ok()) << made.status();
      launch = std::move(*made);
    }
    ASSERT_TRUE(launch->SetLaunch(emitted->launch).ok());
    // What a faulting run could leave behind: every counter non-zero.
    const int w = launch->workspace_buffer();
    ASSERT_GE(w, 0);
    launch->Poison(0);
    ASSERT_TRUE(launch->Run(**built, 0).ok());
    EXPECT_LE(reference::RelativeL2Error(launch->Outputs(0)[0], (*want)[0]), 1e-5);
    EXPECT_EQ(launch->grid()[0], 3 * split);
    std::fill(launch->buffer(0, w).begin(), launch->buffer(0, w).end(), 0x5a);
  }
}

}  // namespace
}  // namespace tir::codegen
