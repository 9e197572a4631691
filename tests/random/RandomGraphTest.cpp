// Differential tests on random graphs: partitioning must not change what a
// graph computes (checked exactly with the interpreter, for an arch where
// rows fit on chip and one where they do not), and generated kernels must
// match the interpreter on the host. Graphs are drawn deterministically from
// seeds, mixing pointwise chains with broadcasts, transposes, row and column
// reductions whose results are broadcast back, and matmuls.

#include <cstdlib>
#include <random>

#include "absl/strings/str_cat.h"
#include "compiler/codegen/Emitter.h"
#include "compiler/codegen/HostBuild.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/planning/Plan.h"
#include "compiler/reference/Interpreter.h"
#include "gtest/gtest.h"

namespace tir {
namespace {

// A random graph over values of shapes [R,C], [R,1], [1,C] and [C,R].
std::string RandomGraph(uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int R = 3 + rng() % 6, C = 3 + rng() % 6;
  auto T = [&](int r, int c) { return absl::StrCat("tensor<", r, "x", c, "xf32>"); };
  struct V { std::string name; int r, c; };
  std::vector<V> vals = {{"%x", R, C}, {"%y", R, C}, {"%w", C, C}, {"%b", 1, C}};
  std::string body;
  int n = 0;
  auto pick = [&](int r, int c) -> const V * {
    std::vector<const V *> ok;
    for (const V &v : vals) if (v.r == r && v.c == c) ok.push_back(&v);
    return ok.empty() ? nullptr : ok[rng() % ok.size()];
  };
  const int ops = 4 + rng() % 10;
  static const char *kUnary[] = {"exp", "tanh_fwd", "neg", "abs", "sigmoid_fwd", "gelu_fwd"};
  static const char *kBinary[] = {"add", "mul", "sub", "max", "min"};
  static const char *kModes[] = {"add", "max", "mean", "min"};
  for (int i = 0; i < ops; ++i) {
    const std::string v = absl::StrCat("%v", n++);
    const V *a = pick(R, C);
    switch (rng() % 7) {
      case 0:
      case 1:
        body += absl::StrCat("  ", v, " = ", kUnary[rng() % 6], " ", a->name, " : ", T(R, C), "\n");
        vals.push_back({v, R, C});
        break;
      case 2: {  // binary with a broadcast operand
        const V *b = rng() % 2 ? pick(R, 1) : pick(1, C);
        if (!b) b = pick(R, C);
        body += absl::StrCat("  ", v, " = ", kBinary[rng() % 5], " ", a->name, ", ", b->name, " : (", T(R, C), ", ",
                             T(b->r, b->c), ") -> ", T(R, C), "\n");
        vals.push_back({v, R, C});
        break;
      }
      case 3: {  // row or column reduction
        const bool row = rng() % 2;
        body += absl::StrCat("  ", v, " = reduce(", a->name, ")<dimensions = [", row ? 1 : 0, "], reduction_mode = <",
                             kModes[rng() % 4], ">> : ", T(R, C), " -> ", T(row ? R : 1, row ? 1 : C), "\n");
        vals.push_back({v, row ? R : 1, row ? 1 : C});
        break;
      }
      case 4: {  // transpose there and back
        body += absl::StrCat("  ", v, "t = transpose ", a->name, " permutation = [1, 0] : ", T(R, C), " -> ", T(C, R), "\n");
        body += absl::StrCat("  ", v, "e = exp ", v, "t : ", T(C, R), "\n");
        body += absl::StrCat("  ", v, " = transpose ", v, "e permutation = [1, 0] : ", T(C, R), " -> ", T(R, C), "\n");
        vals.push_back({v, R, C});
        break;
      }
      case 5:  // matmul with the weight
        body += absl::StrCat("  ", v, " = matmul(", a->name, ", %w) : (", T(R, C), ", ", T(C, C), ") -> ", T(R, C), "\n");
        vals.push_back({v, R, C});
        break;
      default:
        body += absl::StrCat("  ", v, " = mul ", a->name, ", ", pick(R, C)->name, " : ", T(R, C), "\n");
        vals.push_back({v, R, C});
    }
  }
  // Outputs: the last [R,C] value and the last value of another shape, if any.
  const V *last = nullptr, *other = nullptr;
  for (const V &v : vals) {
    if (v.name[1] != 'v') continue;
    if (v.r == R && v.c == C) last = &v; else other = &v;
  }
  if (!last) last = &vals[0];
  std::string sig = T(last->r, last->c), res = last->name, types = T(last->r, last->c);
  if (other) {
    sig += ", " + T(other->r, other->c);
    res += ", " + other->name;
    types += ", " + T(other->r, other->c);
  }
  return absl::StrCat("tir.graph @random(%x: ", T(R, C), ", %y: ", T(R, C), ", %w: ", T(C, C), ", %b: ", T(1, C),
                      ") -> (", sig, ") {\n", body, "  results ", res, " : ", types, "\n}\n");
}

// Seeds per test: $TIR_RANDOM_GRAPHS scales them for longer local sweeps.
uint64_t Count(uint64_t fallback) {
  const char *n = std::getenv("TIR_RANDOM_GRAPHS");
  return n ? std::strtoull(n, nullptr, 10) : fallback;
}

std::vector<reference::Tensor> Inputs(mlir::ArrayRef<mlir::Type> types, uint64_t seed) {
  std::vector<reference::Tensor> in;
  for (mlir::Type t : types) {
    auto r = t.cast<mlir::RankedTensorType>();
    in.push_back(reference::RandomTensor(reference::DTypeOf(r.getElementType()), {r.getShape().begin(), r.getShape().end()}, seed++));
  }
  return in;
}

TEST(RandomGraphs, PartitioningPreservesWhatEveryGraphComputes) {
  auto ctx = makeTirContext();
  target::ArchInfo tiny = *target::LookupArch("sm_90a");
  tiny.row_budget_bytes = 16;  // nothing fits: every broadcast-back splits
  int kernels = 0;
  for (uint64_t seed = 1; seed <= Count(300); ++seed) {
    const std::string text = RandomGraph(seed);
    SCOPED_TRACE(text);
    auto loaded = LoadGraphText(text, ctx.get());
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    const auto inputs = Inputs(loaded->graph.getArgumentTypes(), seed);
    auto want = reference::Evaluate(loaded->graph, inputs);
    ASSERT_TRUE(want.ok()) << want.status();
    for (const target::ArchInfo &arch : {*target::LookupArch("sm_90a"), tiny}) {
      auto p = planning::PartitionGraph(loaded->graph, arch);
      ASSERT_TRUE(p.ok()) << p.status();
      kernels += p->kernels.size();
      auto module = planning::BuildPartitionedModule(loaded->graph, *p);
      GraphOp stitched;
      for (GraphOp g : module->getOps<GraphOp>()) {
        if (!g->hasAttr("tir.kernel_kind")) stitched = g;
      }
      auto got = reference::Evaluate(stitched, inputs);
      ASSERT_TRUE(got.ok()) << got.status();
      for (size_t o = 0; o < want->size(); ++o) {
        EXPECT_EQ(reference::RelativeL2Error((*got)[o], (*want)[o]), 0.0) << arch.row_budget_bytes;
      }
    }
  }
  EXPECT_GT(kernels, 300);
}

TEST(RandomGraphs, GeneratedKernelsMatchTheInterpreterOnTheHost) {
  auto ctx = makeTirContext();
  const std::string work = std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") + "/random";
  planning::AnalyticCostModel model;
  int checked = 0;
  for (uint64_t seed = 1000; seed < 1000 + Count(300) / 15; ++seed) {
    const std::string text = RandomGraph(seed);
    SCOPED_TRACE(text);
    auto loaded = LoadGraphText(text, ctx.get());
    ASSERT_TRUE(loaded.ok());
    auto planned = planning::PlanGraph(loaded->graph, *target::LookupArch("sm_90a"), model, 1);
    ASSERT_TRUE(planned.ok());
    auto module = planning::BuildPartitionedModule(loaded->graph, planned->partition);
    for (size_t k = 0; k < planned->partition.kernels.size(); ++k) {
      GraphOp kernel;
      for (GraphOp g : module->getOps<GraphOp>()) {
        if (g.getSymName() == absl::StrCat("random_k", k)) kernel = g;
      }
      const auto &space = planned->spaces[k].kept;
      const auto &params = space[seed % space.size()].params;
      auto emitted = codegen::EmitKernel(kernel, params);
      ASSERT_TRUE(emitted.ok()) << emitted.status();
      auto built = codegen::BuildHostKernel(*emitted, work);
      ASSERT_TRUE(built.ok()) << built.status();
      const auto inputs = Inputs(kernel.getArgumentTypes(), seed + k);
      auto want = reference::Evaluate(kernel, inputs);
      auto got = codegen::RunOnHost(kernel, *emitted, **built, inputs);
      ASSERT_TRUE(want.ok() && got.ok());
      for (size_t o = 0; o < want->size(); ++o) {
        EXPECT_LE(reference::RelativeL2Error((*got)[o], (*want)[o]), 1e-5) << emitted->source;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 12);
}

}  // namespace
}  // namespace tir
