// Every kernel of the codegen corpus, for its default and best candidates,
// compiles with NVRTC to a cubin for sm_90a and sm_80 (no GPU needed).

#include "compiler/codegen/Emitter.h"
#include "compiler/codegen/testing/CodegenCorpus.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/nvrtc/nvrtc_compiler.h"
#include "compiler/planning/Plan.h"
#include "gtest/gtest.h"

namespace tir::codegen {
namespace {

using testing_corpus::Case;
using testing_corpus::Corpus;

class NvrtcCodegenTest : public ::testing::TestWithParam<Case> {};

TEST_P(NvrtcCodegenTest, KernelsCompileToCubins) {
  auto ctx = makeTirContext();
  auto loaded = LoadGraphText(GetParam().text, ctx.get());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  for (const char *arch : {"sm_90a", "sm_80"}) {
    planning::AnalyticCostModel model;
    auto planned = planning::PlanGraph(loaded->graph, *target::LookupArch(arch), model, 1);
    ASSERT_TRUE(planned.ok());
    auto module = planning::BuildPartitionedModule(loaded->graph, planned->partition);
    for (size_t k = 0; k < planned->partition.kernels.size(); ++k) {
      GraphOp kernel;
      for (GraphOp g : module->getOps<GraphOp>()) {
        if (g.getSymName() == loaded->graph.getSymName().str() + "_k" + std::to_string(k)) kernel = g;
      }
      const auto &space = planned->spaces[k].kept;
      for (size_t pick : {size_t{0}, space.size() - 1}) {
        SCOPED_TRACE(std::string(arch) + " kernel " + std::to_string(k) + " candidate #" + std::to_string(pick));
        auto emitted = EmitKernel(kernel, space[pick].params);
        ASSERT_TRUE(emitted.ok()) << emitted.status();
        nvrtc::CompileOptions options;
        options.arch = arch;
        options.headers = RuntimeHeaders();
        auto cubin = nvrtc::CompileToCubin(emitted->source, options);
        ASSERT_TRUE(cubin.ok()) << cubin.status() << "\n" << emitted->source;
        EXPECT_EQ(cubin->cubin.substr(1, 3), "ELF");
        EXPECT_NE(cubin->cubin.find("tir_kernel"), std::string::npos);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, NvrtcCodegenTest, ::testing::ValuesIn(Corpus()),
                         [](const ::testing::TestParamInfo<Case> &info) { return info.param.name; });

}  // namespace
}  // namespace tir::codegen
