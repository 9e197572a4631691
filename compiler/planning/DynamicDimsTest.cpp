#include "compiler/planning/DynamicDims.h"

#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/planning/Partition.h"
#include "compiler/reference/Interpreter.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mlir/IR/Verifier.h"

namespace tir::planning {
namespace {

using ::testing::ElementsAre;

std::string Print(mlir::Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  op->print(os);
  return s;
}

// Whether some op of `graph` has a dynamic result extent its own operands
// do not give (what a kernel graph must never have).
bool LeavesAnExtentOpen(GraphOp graph) {
  bool open = false;
  graph.walk([&](mlir::Operation *op) {
    if (op->getNumResults() != 1) return;
    auto type = op->getResult(0).getType().dyn_cast<mlir::RankedTensorType>();
    if (!type || type.hasStaticShape()) return;
    if (auto b = llvm::dyn_cast<BroadcastOp>(op); b && b.getDynamicDims().empty()) {
      auto in = b.getInput().getType().cast<mlir::RankedTensorType>();
      for (int64_t d = 0; d < type.getRank(); ++d) open |= type.isDynamicDim(d) && !in.isDynamicDim(d);
    }
    if (auto s = llvm::dyn_cast<SplatOp>(op)) open |= s.getDynamicDims().empty();
    if (auto i = llvm::dyn_cast<IotaOp>(op)) open |= i.getDynamicDims().empty();
    if (auto r = llvm::dyn_cast<ReshapeOp>(op)) open |= r.getDynamicDims().empty() && type.getNumDynamicDims() > 1;
  });
  return open;
}

class DynamicDimsTest : public ::testing::Test {
 protected:
  GraphOp Load(const std::string &text) {
    auto loaded = LoadGraphText(text, ctx_.get());
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    if (!loaded.ok()) return GraphOp();
    modules_.push_back(std::move(loaded->module));
    return loaded->graph;
  }
  std::unique_ptr<mlir::MLIRContext> ctx_ = makeTirContext();
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> modules_;
};

TEST_F(DynamicDimsTest, ABroadcastToAnInferredExtentReadsItFromTheInput) {
  GraphOp g = Load(R"mlir(
tir.graph @g(%x: tensor<?x?xf32>, %n: index, %v: f32) -> (tensor<?x?xf32>, tensor<?x4xf32>, tensor<?x?xsi32>) {
  %m = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<?x?xf32> -> tensor<?x1xf32>
  %mb = broadcast %m : tensor<?x1xf32> -> tensor<?x?xf32>
  %s = sub %x, %mb : tensor<?x?xf32>
  %o = splat %v dynamic_dims(%n) : tensor<?x4xf32>
  %f = splat %v : tensor<?x4xf32>
  %k = add %f, %o : tensor<?x4xf32>
  %i = iota dimension = 1 : tensor<?x?xsi32>
  %c = convert %x : tensor<?x?xf32> -> tensor<?x?xsi32>
  %t = add %i, %c : tensor<?x?xsi32>
  results %s, %k, %t : tensor<?x?xf32>, tensor<?x4xf32>, tensor<?x?xsi32>
}
)mlir");
  ASSERT_TRUE(g);
  EXPECT_TRUE(LeavesAnExtentOpen(g));
  EXPECT_EQ(MaterializeDynamicDims(g), 3);
  EXPECT_TRUE(mlir::succeeded(mlir::verify(g)));
  EXPECT_FALSE(LeavesAnExtentOpen(g));
  const std::string text = Print(g);
  // One `dim` per argument dim, shared; the index argument as it is.
  EXPECT_THAT(text, ::testing::HasSubstr("%0 = dim %arg0 dimension = 0"));
  EXPECT_THAT(text, ::testing::HasSubstr("%1 = dim %arg0 dimension = 1"));
  EXPECT_THAT(text, ::testing::HasSubstr("broadcast %2 dynamic_dims(%0, %1) : tensor<?x1xf32> -> tensor<?x?xf32>"));
  EXPECT_THAT(text, ::testing::HasSubstr("splat %arg2 dynamic_dims(%arg1) : tensor<?x4xf32>"));
  EXPECT_THAT(text, ::testing::HasSubstr("iota dimension = 1 dynamic_dims(%0, %1) : tensor<?x?xsi32>"));
  // Done once: nothing is left to do.
  EXPECT_EQ(MaterializeDynamicDims(g), 0);
}

TEST_F(DynamicDimsTest, AnExtentNoArgumentGivesIsLeftAlone) {
  GraphOp g = Load(R"mlir(
tir.graph @g(%x: tensor<?x1xf32>) -> tensor<?x?xf32> {
  %b = broadcast %x : tensor<?x1xf32> -> tensor<?x?xf32>
  results %b : tensor<?x?xf32>
}
)mlir");
  ASSERT_TRUE(g);
  EXPECT_EQ(MaterializeDynamicDims(g), 0);
  EXPECT_TRUE(LeavesAnExtentOpen(g));
}

TEST_F(DynamicDimsTest, EveryKernelOfATensorIrDynamicSoftmaxCarriesItsSizes) {
  // TensorIR's softmax over rows and columns of run-time extent: the
  // normalize kernel's broadcasts took their `?` from the `sub` and `div`
  // of the whole graph; each kernel must carry it alone.
  GraphOp g = Load(R"mlir(
nv_tensor_ir.graph @softmax(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %m = reduce(%x)<dimensions = [1], reduction_mode = <max> > : tensor<?x?xf32> -> tensor<?x1xf32>
  %mb = broadcast %m : tensor<?x1xf32> -> tensor<?x?xf32>
  %s = sub %x, %mb : tensor<?x?xf32>
  %e = exp %s : tensor<?x?xf32>
  %z = reduce(%e)<dimensions = [1], reduction_mode = <add> > : tensor<?x?xf32> -> tensor<?x1xf32>
  %zb = broadcast %z : tensor<?x1xf32> -> tensor<?x?xf32>
  %y = div %e, %zb : tensor<?x?xf32>
  results %y : tensor<?x?xf32>
}
)mlir");
  ASSERT_TRUE(g);
  auto p = PartitionGraph(g, *target::LookupArch("sm_90a"));
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_GE(p->kernels.size(), 2u);
  mlir::OwningOpRef<mlir::ModuleOp> module = BuildPartitionedModule(g, *p);
  ASSERT_TRUE(mlir::succeeded(mlir::verify(*module)));
  GraphOp stitched;
  for (GraphOp k : module->getOps<GraphOp>()) {
    if (k->hasAttr("tir.kernel_kind")) {
      EXPECT_FALSE(LeavesAnExtentOpen(k)) << Print(k);
    }
    if (k.getSymName() == "softmax") stitched = k;
  }
  // At 16 x 1000 each kernel graph runs on its own inputs alone, and the
  // launches compute what the graph does.
  std::vector<reference::Tensor> in = {reference::RandomTensor(tir::v1::DTYPE_F32, {16, 1000}, 5)};
  auto want = reference::Evaluate(g, in);
  ASSERT_TRUE(want.ok()) << want.status();
  auto got = reference::Evaluate(stitched, in);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT((*got)[0].shape, ElementsAre(16, 1000));
  EXPECT_EQ(reference::RelativeL2Error((*got)[0], (*want)[0]), 0.0);
}

}  // namespace
}  // namespace tir::planning
