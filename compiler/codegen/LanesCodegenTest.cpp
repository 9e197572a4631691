// GPU kernels proven on the CPU: the GPU form of every corpus graph, for
// sm_90a and sm_80 and several candidates each, runs lane by lane
// (tir_lanes.h) and matches the reference interpreter with no emulator
// error; and mutations of the GPU-only code (lane arithmetic, barriers,
// cp.async waits, shuffle offsets) must be caught, each by a wrong result or
// an emulator report, which the test names.

#include <algorithm>
#include <cstdlib>
#include <regex>

#include "absl/strings/str_cat.h"
#include "absl/strings/substitute.h"
#include "compiler/codegen/Emitter.h"
#include "compiler/codegen/HostBuild.h"
#include "compiler/codegen/LaunchContract.h"
#include "compiler/codegen/testing/CodegenCorpus.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/planning/Plan.h"
#include "compiler/reference/Interpreter.h"
#include "compiler/support/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tir::codegen {
namespace {

using testing_corpus::Case;
using testing_corpus::Corpus;

std::string WorkDir(const std::string &leaf) {
  return std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") + "/" + leaf;
}

GraphOp KernelNamed(mlir::ModuleOp module, const std::string &name) {
  for (GraphOp g : module.getOps<GraphOp>()) {
    if (g.getSymName() == name) return g;
  }
  return GraphOp();
}

std::vector<reference::Tensor> Inputs(GraphOp kernel) {
  std::vector<reference::Tensor> inputs = reference::SampleInputs(kernel, 5, 11);
  for (reference::Tensor &x : inputs) {
    if (x.UsesInts() && x.dtype != tir::v1::DTYPE_INDEX) {
      for (int64_t &v : x.i) if (v == 0) v = 3;
    }
  }
  return inputs;
}

// What one lane-by-lane run gave: the emulator's error, else the worst
// relative L2 error over the outputs (and whether it is within bounds).
struct Outcome {
  absl::Status status;
  double worst = 0;
  bool within = true;
  std::string Describe() const {
    if (!status.ok()) return absl::StrCat(ReasonOf(status), ": ", status.message());
    return absl::StrCat(within ? "correct" : "wrong result", " (worst relative L2 error ", worst, ")");
  }
};

Outcome RunLanes(GraphOp kernel, const EmittedKernel &emitted, const std::vector<reference::Tensor> &inputs,
                 const std::vector<reference::Tensor> &want, const HostBuildOptions &options, bool tf32 = false) {
  Outcome out;
  auto built = BuildHostKernel(emitted, WorkDir("lanes"), options);
  if (!built.ok()) {
    out.status = built.status();
    return out;
  }
  auto got = RunOnHost(kernel, emitted, **built, inputs);
  if (!got.ok()) {
    out.status = got.status();
    return out;
  }
  for (size_t o = 0; o < want.size(); ++o) {
    const double err = reference::RelativeL2Error((*got)[o], want[o]);
    out.worst = std::max(out.worst, std::isnan(err) ? 1e30 : err);
    auto domain = kernel->getAttrOfType<mlir::DenseI64ArrayAttr>("tir.iteration_domain").asArrayRef();
    out.within &= err <= reference::RelativeL2Bound(want[o].dtype,
                                                    ReductionLength(kernel, std::vector<int64_t>(domain.begin(), domain.end())),
                                                    tf32);
  }
  return out;
}

class LanesCodegenTest : public ::testing::TestWithParam<Case> {
 protected:
  std::unique_ptr<mlir::MLIRContext> ctx_ = makeTirContext();
};

TEST_P(LanesCodegenTest, GpuFormOfEveryKernelRunsLaneByLaneAndMatchesTheInterpreter) {
  auto loaded = LoadGraphText(GetParam().text, ctx_.get());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  HostBuildOptions lanes;
  lanes.form = HostForm::kLanes;
  int checked = 0;
  for (const char *archName : {"sm_90a", "sm_80"}) {
    const target::ArchInfo arch = *target::LookupArch(archName);
    planning::AnalyticCostModel model;
    auto planned = planning::PlanGraph(loaded->graph, arch, model, 3);
    ASSERT_TRUE(planned.ok()) << planned.status();
    mlir::OwningOpRef<mlir::ModuleOp> module = planning::BuildPartitionedModule(loaded->graph, planned->partition);
    for (size_t k = 0; k < planned->partition.kernels.size(); ++k) {
      GraphOp kernel = KernelNamed(*module, absl::StrCat(loaded->graph.getSymName().str(), "_k", k));
      ASSERT_TRUE(kernel);
      // On sm_90a the default and three more spread over the space (the best
      // ranked among them), on sm_80 the default and one more.
      const auto &space = planned->spaces[k].kept;
      size_t byDefault = 0;
      for (size_t i = 0; i < space.size(); ++i) {
        if (space[i].is_default) byDefault = i;
      }
      const bool hopper = std::string(archName) == "sm_90a";
      std::vector<size_t> order = hopper ? std::vector<size_t>{byDefault, 0, space.size() / 2, space.size() - 1,
                                                               space.size() / 4, 1}
                                         : std::vector<size_t>{byDefault, space.size() / 3, space.size() - 1};
      std::vector<size_t> picks;
      for (size_t i : order) {
        if (i < space.size() && picks.size() < (hopper ? 4u : 2u) &&
            std::find(picks.begin(), picks.end(), i) == picks.end()) {
          picks.push_back(i);
        }
      }
      const std::vector<reference::Tensor> inputs = Inputs(kernel);
      auto want = reference::Evaluate(kernel, inputs);
      ASSERT_TRUE(want.ok()) << want.status();
      *want = AsStoredOutputs(kernel, *std::move(want));
      for (size_t pick : picks) {
        std::string params;
        for (const auto &[p, v] : space[pick].params) absl::StrAppend(&params, " ", p, "=", v);
        SCOPED_TRACE(absl::StrCat(GetParam().name, " ", archName, " kernel ", k, " candidate #", pick, params));
        auto emitted = EmitKernel(kernel, space[pick].params);
        ASSERT_TRUE(emitted.ok()) << emitted.status();
        const Outcome outcome = RunLanes(kernel, *emitted, inputs, *want, lanes);
        EXPECT_TRUE(outcome.status.ok() && outcome.within) << outcome.Describe();
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 6);
}

INSTANTIATE_TEST_SUITE_P(Corpus, LanesCodegenTest, ::testing::ValuesIn(Corpus()),
                         [](const ::testing::TestParamInfo<Case> &info) { return info.param.name; });

// One kernel of `text` planned for sm_90a, emitted with `params`.
struct Subject {
  std::unique_ptr<mlir::MLIRContext> ctx = makeTirContext();
  mlir::OwningOpRef<mlir::ModuleOp> module;
  GraphOp kernel;
  EmittedKernel emitted;
  std::vector<reference::Tensor> inputs, want;
  bool tf32 = false;  // the candidate multiplies tf32-rounded operands
};

void Prepare(Subject &s, const std::string &text, const std::map<std::string, int64_t> &params) {
  auto loaded = LoadGraphText(text, s.ctx.get());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  planning::AnalyticCostModel model;
  auto planned = planning::PlanGraph(loaded->graph, *target::LookupArch("sm_90a"), model);
  ASSERT_TRUE(planned.ok()) << planned.status();
  s.module = planning::BuildPartitionedModule(loaded->graph, planned->partition);
  s.kernel = KernelNamed(*s.module, "g_k0");
  ASSERT_TRUE(s.kernel);
  auto emitted = EmitKernel(s.kernel, params);
  ASSERT_TRUE(emitted.ok()) << emitted.status();
  s.emitted = *emitted;
  s.tf32 = params.count("tf32") > 0;
  s.inputs = Inputs(s.kernel);
  auto want = reference::Evaluate(s.kernel, s.inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  s.want = *want;
}

// A textual change to a kernel's source or to the tile library.
struct Mutation {
  std::string name;
  bool in_header;  // tir_tiles.h instead of the kernel source
  std::string from, to;
  bool regex = false;
};

std::string Apply(const Mutation &m, const std::string &text) {
  if (m.regex) return std::regex_replace(text, std::regex(m.from), m.to, std::regex_constants::format_first_only);
  const size_t at = text.find(m.from);
  if (at == std::string::npos) return text;
  std::string out = text;
  out.replace(at, m.from.size(), m.to);
  return out;
}

// Runs every mutation: the clean kernel must be correct with no report,
// and each mutant must be caught (and the test says how).
void ExpectEveryMutationCaught(Subject &s, const std::vector<Mutation> &mutations) {
  HostBuildOptions clean;
  clean.form = HostForm::kLanes;
  const Outcome control = RunLanes(s.kernel, s.emitted, s.inputs, s.want, clean, s.tf32);
  ASSERT_TRUE(control.status.ok() && control.within) << "the unmutated kernel: " << control.Describe();
  for (const Mutation &m : mutations) {
    SCOPED_TRACE(m.name);
    EmittedKernel mutant = s.emitted;
    HostBuildOptions options = clean;
    options.headers = RuntimeHeaders();
    std::string &text = m.in_header ? options.headers[1].second : mutant.source;
    ASSERT_EQ(options.headers[1].first, "tir_tiles.h");
    const std::string before = text;
    text = Apply(m, before);
    ASSERT_NE(text, before) << "the mutation's pattern is not in the " << (m.in_header ? "tile library" : "kernel");
    const Outcome outcome = RunLanes(s.kernel, mutant, s.inputs, s.want, options, s.tf32);
    EXPECT_FALSE(outcome.status.ok() && outcome.within) << "mutant '" << m.name << "' passed: " << outcome.Describe();
    std::printf("mutant %-40s caught: %s\n", m.name.c_str(), outcome.Describe().substr(0, 220).c_str());
    ::testing::Test::RecordProperty(m.name, outcome.Describe().substr(0, 200));
  }
}

// The bf16 matmul on the mma path with a three-stage cp.async pipeline and
// two warps stacked along M (warps_m 2, warps_n 1), so a swap shows.
TEST(LanesMutation, MmaMatmulMutantsAreCaughtOnTheCpu) {
  Subject s;
  const std::string text = R"mlir(
tir.graph @g(%a: tensor<64x96xbf16>, %b: tensor<96x64xbf16>) -> tensor<64x64xf32> {
  %c = matmul(%a, %b) : (tensor<64x96xbf16>, tensor<96x64xbf16>) -> tensor<64x64xf32>
  results %c : tensor<64x64xf32>
})mlir";
  Prepare(s, text, {{"block_m", 32}, {"block_n", 32}, {"block_k", 32}, {"warps", 2}, {"stages", 3},
                    {"split_k", 1}, {"group_m", 1}});
  if (HasFatalFailure()) return;
  ASSERT_NE(s.emitted.source.find("tir_mma_m16n8k16_bf16"), std::string::npos);
  ASSERT_NE(s.emitted.source.find("tir_cp_async_wait<1>();"), std::string::npos);
  ExpectEveryMutationCaught(
      s, {
             {"ldmatrix A row address lane % 8", false, "i * 16 + lane % 16,", "i * 16 + lane % 8,"},
             {"epilogue accumulator row +8 swapped", false, "(q >= 2 ? 8 : 0)", "(q >= 2 ? 0 : 8)"},
             {"warp_m and warp_n swapped", false, R"(const int warp_m = warp / (\d+), warp_n = warp % \1;)",
              "const int warp_n = warp / $1, warp_m = warp % $1;", true},
             {"pipeline barrier after the wait dropped", false, "tir_cp_async_wait<1>();\n      TIR_SYNC();",
              "tir_cp_async_wait<1>();\n"},
             {"cp.async.wait_group one too high", false, "tir_cp_async_wait<1>();", "tir_cp_async_wait<2>();"},
         });
}

// A row sum with 128 threads per row: four warps shuffle, then meet in
// shared memory between barriers. (A butterfly over any five offsets that
// are independent bits still sums the warp, offset + 1 among them; halving
// the offsets pairs lanes with themselves and never crosses the half-warp.)
TEST(LanesMutation, BlockReductionMutantsAreCaughtOnTheCpu) {
  Subject s;
  const std::string text = R"mlir(
tir.graph @g(%x: tensor<6x300xf32>) -> tensor<6x1xf32> {
  %s = reduce(%x)<dimensions = [1], reduction_mode = <add>> : tensor<6x300xf32> -> tensor<6x1xf32>
  results %s : tensor<6x1xf32>
})mlir";
  Prepare(s, text, {{"threads_per_row", 128}, {"rows_per_block", 2}});
  if (HasFatalFailure()) return;
  ExpectEveryMutationCaught(
      s, {
             {"barrier after the warp partials dropped", true, "if (t % 32 == 0) scratch[t / 32] = v;\n  TIR_SYNC();",
              "if (t % 32 == 0) scratch[t / 32] = v;\n"},
             {"shuffle offset halved", true, "tir_shfl_xor(v, offset, mask)", "tir_shfl_xor(v, offset / 2, mask)"},
             {"barrier before the row's result is read dropped", true,
              "scratch[warps + t / group] = p;\n  }\n  TIR_SYNC();\n", "scratch[warps + t / group] = p;\n  }\n"},
             {"the first warp reads the partials of the wrong row", true, "T p = scratch[(t - t % group) / 32 + t % n];",
              "T p = scratch[t % n];"},
         });
}

// The tf32 tensor-core matmul (precision tf32), double-buffered, two warps
// stacked along M: fragment rows and columns, and the one barrier per K step.
TEST(LanesMutation, Tf32MatmulMutantsAreCaughtOnTheCpu) {
  Subject s;
  const std::string text = R"mlir(
tir.graph @g(%a: tensor<64x40xf32>, %b: tensor<40x48xf32>) -> tensor<64x48xf32> {
  %c = matmul(%a, %b) : (tensor<64x40xf32>, tensor<40x48xf32>) -> tensor<64x48xf32>
  results %c : tensor<64x48xf32>
})mlir";
  Prepare(s, text, {{"block_m", 32}, {"block_n", 16}, {"block_k", 16}, {"warps", 2}, {"stages", 2},
                    {"split_k", 1}, {"group_m", 1}, {"tf32", 1}});
  if (HasFatalFailure()) return;
  ASSERT_NE(s.emitted.source.find("tir_mma_m16n8k8_tf32"), std::string::npos);
  ExpectEveryMutationCaught(
      s, {
             {"tf32 a2 reads k + t, not k + t + 4", false, "a2 = As[st * 640 + (kk + t + 4)", "a2 = As[st * 640 + (kk + t)"},
             {"tf32 B fragment column t, not g", false, "j * 8 + g]", "j * 8 + t]"},
             {"barrier between K steps dropped", false, "    TIR_SYNC();\n  }\n", "  }\n"},
         });
}

// The CUDA-core f32 matmul: the register tile's columns and the barrier
// after staging.
TEST(LanesMutation, FfmaMatmulMutantsAreCaughtOnTheCpu) {
  Subject s;
  const std::string text = R"mlir(
tir.graph @g(%a: tensor<40x24xf32>, %b: tensor<24x36xf32>) -> tensor<40x36xf32> {
  %c = matmul(%a, %b) : (tensor<40x24xf32>, tensor<24x36xf32>) -> tensor<40x36xf32>
  results %c : tensor<40x36xf32>
})mlir";
  Prepare(s, text, {{"block_m", 32}, {"block_n", 32}, {"block_k", 16}, {"warps", 2}, {"stages", 1},
                    {"split_k", 1}, {"group_m", 1}});
  if (HasFatalFailure()) return;
  ASSERT_NE(s.emitted.source.find("acc[2][8]"), std::string::npos) << s.emitted.source;
  ExpectEveryMutationCaught(
      s, {
             {"barrier after staging dropped", false, "stage_k(0, kt);\n    TIR_SYNC();", "stage_k(0, kt);\n"},
             {"epilogue columns contiguous, not strided", false, " + tc + j * 4;", " + tc * 8 + j;"},
         });
}

// A split reduction: 8 blocks a row, the last to take a ticket combines.
TEST(LanesMutation, SplitReductionMutantsAreCaughtOnTheCpu) {
  Subject s;
  const std::string text = R"mlir(
tir.graph @g(%x: tensor<3x2048xf32>) -> tensor<3x1xf32> {
  %s = reduce(%x)<dimensions = [1], reduction_mode = <add>> : tensor<3x2048xf32> -> tensor<3x1xf32>
  results %s : tensor<3x1xf32>
})mlir";
  Prepare(s, text, {{"strategy", 2}, {"threads_per_row", 64}, {"rows_per_block", 1}, {"vector_width", 4}, {"split", 4}});
  if (HasFatalFailure()) return;
  ExpectEveryMutationCaught(
      s, {
             {"a block other than the last combines", false, "tir_ticket(&tickets[row]) == 3;",
              "tir_ticket(&tickets[row]) == 2;"},
             {"chunk 0's partial left out", false, "for (int c = 0; c < 4; ++c)", "for (int c = 1; c < 4; ++c)"},
         });
}

// A column reduction: consecutive threads on consecutive kept elements, 4
// threads along the reduced dim meeting in shared memory.
TEST(LanesMutation, ColumnReductionMutantsAreCaughtOnTheCpu) {
  Subject s;
  const std::string text = R"mlir(
tir.graph @g(%x: tensor<50x70xf32>) -> tensor<1x70xf32> {
  %s = reduce(%x)<dimensions = [0], reduction_mode = <add>> : tensor<50x70xf32> -> tensor<1x70xf32>
  results %s : tensor<1x70xf32>
})mlir";
  Prepare(s, text, {{"strategy", 1}, {"threads_per_row", 4}, {"rows_per_block", 32}, {"vector_width", 1}, {"split", 1}});
  if (HasFatalFailure()) return;
  ASSERT_NE(s.emitted.source.find("tir_strided_reduce"), std::string::npos);
  ExpectEveryMutationCaught(
      s, {
             {"barrier before the lanes' values are read dropped", true, "  scratch[t] = v;\n  TIR_SYNC();",
              "  scratch[t] = v;\n"},
             {"lanes read with the wrong stride", true, "scratch[l * stride + slot]", "scratch[l + slot * group]"},
         });
}

// Runs of 8 over a bf16 and an f32 tensor in one kernel. The planner keeps
// runs within 16 bytes of the widest element that moves (4 here), so these
// candidates are given: the bf16 run is one 16-byte access, the f32 one
// (32 bytes, wider than one access) is read and written element by element
// inside the run; lane by lane, both match the interpreter.
TEST(LanesMixedWidths, Bf16AndF32RunsOfEightMatchTheInterpreter) {
  HostBuildOptions lanes;
  lanes.form = HostForm::kLanes;
  {
    Subject s;
    Prepare(s, R"mlir(
tir.graph @g(%x: tensor<6x64xbf16>, %y: tensor<6x64xf32>) -> (tensor<6x64xbf16>, tensor<6x64xf32>) {
  %xf = convert %x : tensor<6x64xbf16> -> tensor<6x64xf32>
  %s = add %xf, %y : tensor<6x64xf32>
  %g = gelu_approx_tanh_fwd %s : tensor<6x64xf32>
  %b = convert %g : tensor<6x64xf32> -> tensor<6x64xbf16>
  results %b, %s : tensor<6x64xbf16>, tensor<6x64xf32>
})mlir",
            {{"threads", 64}, {"elements_per_thread", 8}, {"vector_width", 8}});
    if (HasFatalFailure()) return;
    EXPECT_NE(s.emitted.source.find("tir_load_run<8>(a.in0"), std::string::npos) << s.emitted.source;
    EXPECT_EQ(s.emitted.source.find("<8>(a.in1"), std::string::npos) << s.emitted.source;
    // One output leaves as a run (the bf16 one), the f32 one element by element.
    const std::string &src = s.emitted.source;
    const size_t store = src.find("tir_store_run<8>(a.out");
    EXPECT_NE(store, std::string::npos) << src;
    EXPECT_EQ(src.find("tir_store_run<8>(a.out", store + 1), std::string::npos) << src;
    const Outcome outcome = RunLanes(s.kernel, s.emitted, s.inputs, s.want, lanes);
    EXPECT_TRUE(outcome.status.ok() && outcome.within) << outcome.Describe();
  }
  // An RMS norm of bf16 rows with an f32 weight, rows kept on chip and
  // streamed: two runs of 8 a thread.
  for (int strategy : {0, 1}) {
    SCOPED_TRACE(absl::StrCat("strategy ", strategy));
    Subject s;
    Prepare(s, R"mlir(
tir.graph @g(%x: tensor<6x128xbf16>, %w: tensor<1x128xf32>) -> tensor<6x128xbf16> {
  %xf = convert %x : tensor<6x128xbf16> -> tensor<6x128xf32>
  %sq = mul %xf, %xf : tensor<6x128xf32>
  %ms = reduce(%sq)<dimensions = [1], reduction_mode = <mean>> : tensor<6x128xf32> -> tensor<6x1xf32>
  %eps = constant dense<1.0e-06> : tensor<6x1xf32>
  %ve = add %ms, %eps : tensor<6x1xf32>
  %r = rsqrt %ve : tensor<6x1xf32>
  %n = mul %xf, %r : (tensor<6x128xf32>, tensor<6x1xf32>) -> tensor<6x128xf32>
  %y = mul %n, %w : (tensor<6x128xf32>, tensor<1x128xf32>) -> tensor<6x128xf32>
  %yb = convert %y : tensor<6x128xf32> -> tensor<6x128xbf16>
  results %yb : tensor<6x128xbf16>
})mlir",
            {{"strategy", strategy}, {"threads_per_row", 8}, {"rows_per_block", 4}, {"vector_width", 8}, {"split", 1}});
    if (HasFatalFailure()) return;
    EXPECT_NE(s.emitted.source.find("tir_load_run<8>(a.in0"), std::string::npos) << s.emitted.source;
    EXPECT_EQ(s.emitted.source.find("<8>(a.in1"), std::string::npos) << s.emitted.source;
    const Outcome outcome = RunLanes(s.kernel, s.emitted, s.inputs, s.want, lanes);
    EXPECT_TRUE(outcome.status.ok() && outcome.within) << outcome.Describe();
  }
}

}  // namespace
}  // namespace tir::codegen
