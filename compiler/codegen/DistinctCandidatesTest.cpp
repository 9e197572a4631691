// Every candidate the planner keeps is a different kernel: for every corpus
// graph on sm_90a, sm_80 and the host (and sm_90a with precision tf32), each kept candidate of each kernel
// emits (no candidate the code generator refuses), and no two of a kernel's
// candidates give the same source and launch rule. A field the emitter
// ignores would make two candidates that differ only in it collide here.

#include <map>

#include "absl/strings/str_cat.h"
#include "compiler/codegen/Emitter.h"
#include "compiler/codegen/testing/CodegenCorpus.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/planning/Plan.h"
#include "gtest/gtest.h"

namespace tir::codegen {
namespace {

using testing_corpus::Case;

std::string Params(const std::map<std::string, int64_t> &params) {
  std::string s;
  for (const auto &[p, v] : params) absl::StrAppend(&s, s.empty() ? "" : " ", p, "=", v);
  return s;
}

class DistinctCandidatesTest : public ::testing::TestWithParam<Case> {
 protected:
  std::unique_ptr<mlir::MLIRContext> ctx_ = makeTirContext();
};

TEST_P(DistinctCandidatesTest, EveryKeptCandidateEmitsItsOwnKernel) {
  auto loaded = LoadGraphText(GetParam().text, ctx_.get());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  int emitted = 0;
  const std::pair<const char *, const char *> configs[] = {{"sm_90a", ""}, {"sm_80", ""}, {"host", ""}, {"sm_90a", "tf32"}};
  for (const auto &[archName, precision] : configs) {
    const target::ArchInfo arch = *target::LookupArch(archName);
    planning::AnalyticCostModel model;
    auto planned = planning::PlanGraph(loaded->graph, arch, model, 1, planning::PlanOptions{precision});
    ASSERT_TRUE(planned.ok()) << planned.status();
    mlir::OwningOpRef<mlir::ModuleOp> module = planning::BuildPartitionedModule(loaded->graph, planned->partition);
    for (size_t k = 0; k < planned->partition.kernels.size(); ++k) {
      GraphOp kernel;
      for (GraphOp g : module->getOps<GraphOp>()) {
        if (g.getSymName() == absl::StrCat(loaded->graph.getSymName().str(), "_k", k)) kernel = g;
      }
      ASSERT_TRUE(kernel);
      std::map<std::string, std::string> seen;  // source + launch -> the candidate that gave it
      for (const planning::TileCandidate &c : planned->spaces[k].kept) {
        SCOPED_TRACE(absl::StrCat(GetParam().name, " ", archName, " ", precision, " kernel ", k, " ", Params(c.params)));
        auto e = EmitKernel(kernel, c.params);
        ASSERT_TRUE(e.ok()) << e.status();
        ++emitted;
        const std::string key = e->source + '\0' + e->launch.SerializeAsString();
        auto [it, fresh] = seen.emplace(key, Params(c.params));
        EXPECT_TRUE(fresh) << "the same kernel as candidate " << it->second;
      }
    }
  }
  EXPECT_GT(emitted, 0);
}

INSTANTIATE_TEST_SUITE_P(Corpus, DistinctCandidatesTest, ::testing::ValuesIn(testing_corpus::Corpus()),
                         [](const ::testing::TestParamInfo<Case> &i) { return i.param.name; });

}  // namespace
}  // namespace tir::codegen
