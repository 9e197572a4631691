// Every kept sm_90a candidate of the memory-bound kernels (pointwise and
// reduction) of the corpus graphs below runs lane by lane (tir_lanes.h) and
// matches the reference interpreter with no emulator error: the GPU form of
// every vector width, index width, row strategy, reciprocal, kept row value,
// run store and block reduction the planner can pick. (LanesCodegenTest runs
// a few candidates of every corpus graph; this runs them all for these.)
// TIR_EVERY_CANDIDATE_ALL=1 takes every graph of the corpus instead.

#include <algorithm>
#include <cstdlib>
#include <set>

#include "absl/strings/str_cat.h"
#include "compiler/codegen/Emitter.h"
#include "compiler/codegen/HostBuild.h"
#include "compiler/codegen/LaunchContract.h"
#include "compiler/codegen/testing/CodegenCorpus.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/planning/Plan.h"
#include "compiler/reference/Interpreter.h"
#include "compiler/support/status.h"
#include "gtest/gtest.h"

namespace tir::codegen {
namespace {

using testing_corpus::Case;
using testing_corpus::Corpus;

constexpr int kChunks = 4;

// The pointwise and reduction forms that matter most for memory-bound
// kernels: bf16/f16 conversions, static and dynamic extents, row-resident
// and streaming rows (kept values, reciprocals, run stores), every
// reduction mode, column reductions, unaligned runs, the online max and sum,
// bf16 rows computed in f32 (16-byte runs of 8 elements), gathers (an
// embedding lookup; an index_select in a reduction's rows).
const std::set<std::string> &Chosen() {
  static const auto *names = new std::set<std::string>{
      "bf16_and_f16",      "softmax_bf16",      "rms_norm_bf16",        "dynamic_rows_softmax",
      "dynamic_pointwise", "reduce_every_mode", "column_reduce_int",    "padded_rows_unaligned_runs",
      "online_softmax_long_rows", "rms_norm_bf16_f32_math", "embedding_gather", "gather_dynamic_rows_reduced"};
  return *names;
}

struct Chunk {
  Case c;
  int chunk = 0;
};

std::vector<Chunk> Chunks() {
  const bool all = std::getenv("TIR_EVERY_CANDIDATE_ALL") && *std::getenv("TIR_EVERY_CANDIDATE_ALL") == '1';
  std::vector<Chunk> out;
  for (const Case &c : Corpus()) {
    if (!all && !Chosen().count(c.name)) continue;
    for (int k = 0; k < kChunks; ++k) out.push_back({c, k});
  }
  return out;
}

std::string WorkDir() { return std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") + "/every"; }

class EveryCandidate : public ::testing::TestWithParam<Chunk> {
 protected:
  std::unique_ptr<mlir::MLIRContext> ctx_ = makeTirContext();
};

TEST_P(EveryCandidate, OfThePointwiseAndReductionKernelsPassesLaneByLane) {
  const Chunk &p = GetParam();
  auto loaded = LoadGraphText(p.c.text, ctx_.get());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  planning::AnalyticCostModel model;
  auto planned = planning::PlanGraph(loaded->graph, *target::LookupArch("sm_90a"), model, 1);
  ASSERT_TRUE(planned.ok()) << planned.status();
  mlir::OwningOpRef<mlir::ModuleOp> module = planning::BuildPartitionedModule(loaded->graph, planned->partition);
  HostBuildOptions lanes;
  lanes.form = HostForm::kLanes;
  int ran = 0;
  for (size_t k = 0; k < planned->partition.kernels.size(); ++k) {
    GraphOp kernel;
    for (GraphOp g : module->getOps<GraphOp>()) {
      if (g.getSymName() == absl::StrCat(loaded->graph.getSymName().str(), "_k", k)) kernel = g;
    }
    ASSERT_TRUE(kernel);
    const std::string kind = kernel->getAttrOfType<mlir::StringAttr>("tir.kernel_kind").getValue().str();
    if (kind != "pointwise" && kind != "reduction") continue;
    std::vector<reference::Tensor> inputs = reference::SampleInputs(kernel, 5, 11);
    for (reference::Tensor &x : inputs) {
      if (x.UsesInts() && x.dtype != tir::v1::DTYPE_INDEX) {
        for (int64_t &v : x.i) if (v == 0) v = 3;
      }
    }
    auto want = reference::Evaluate(kernel, inputs);
    ASSERT_TRUE(want.ok()) << want.status();
    *want = AsStoredOutputs(kernel, *std::move(want));
    auto domainAttr = kernel->getAttrOfType<mlir::DenseI64ArrayAttr>("tir.iteration_domain").asArrayRef();
    const int64_t length = ReductionLength(kernel, std::vector<int64_t>(domainAttr.begin(), domainAttr.end()));
    const auto &space = planned->spaces[k].kept;
    for (size_t i = p.chunk; i < space.size(); i += kChunks) {
      std::string params;
      for (const auto &[name, v] : space[i].params) absl::StrAppend(&params, " ", name, "=", v);
      SCOPED_TRACE(absl::StrCat(p.c.name, " kernel ", k, " (", kind, ") candidate #", i, params));
      auto emitted = EmitKernel(kernel, space[i].params);
      ASSERT_TRUE(emitted.ok()) << emitted.status();
      auto built = BuildHostKernel(*emitted, WorkDir(), lanes);
      ASSERT_TRUE(built.ok()) << built.status();
      auto got = RunOnHost(kernel, *emitted, **built, inputs);
      ASSERT_TRUE(got.ok()) << got.status();
      for (size_t o = 0; o < want->size(); ++o) {
        const double err = reference::RelativeL2Error((*got)[o], (*want)[o]);
        EXPECT_LE(err, reference::RelativeL2Bound((*want)[o].dtype, length)) << "output " << o;
      }
      ++ran;
    }
  }
  // Every chosen graph has a pointwise or reduction kernel with more
  // candidates than chunks.
  if (Chosen().count(p.c.name)) {
    EXPECT_GT(ran, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, EveryCandidate, ::testing::ValuesIn(Chunks()),
                         [](const ::testing::TestParamInfo<Chunk> &info) {
                           return absl::StrCat(info.param.c.name, "_", info.param.chunk);
                         });

}  // namespace
}  // namespace tir::codegen
