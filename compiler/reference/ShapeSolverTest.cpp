#include "compiler/reference/ShapeSolver.h"

#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/reference/Interpreter.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tir::reference {
namespace {

using ::testing::ElementsAre;

class ShapeSolverTest : public ::testing::Test {
 protected:
  // Solves `text`'s dynamic extents at `preferred`, and checks that the
  // interpreter runs on inputs of those shapes.
  SolvedShapes Solve(const std::string &text, int64_t preferred = 8) {
    auto loaded = LoadGraphText(text, ctx_.get());
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    SolvedShapes s = SolveDynamicExtents(loaded->graph, preferred);
    EXPECT_TRUE(s.consistent);
    auto out = Evaluate(loaded->graph, SampleInputs(loaded->graph, preferred, 1));
    EXPECT_TRUE(out.ok()) << out.status();
    modules_.push_back(std::move(loaded->module));
    return s;
  }
  std::unique_ptr<mlir::MLIRContext> ctx_ = makeTirContext();
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> modules_;
};

TEST_F(ShapeSolverTest, AStaticOperandRefinesADynamicOne) {
  SolvedShapes s = Solve(R"mlir(
nv_tensor_ir.graph @c(%a: tensor<?x2xf32>, %b: tensor<4x3xf32>) -> tensor<4x5xf32> {
  %r = concatenate %a, %b dimension = 1 : (tensor<?x2xf32>, tensor<4x3xf32>) -> tensor<4x5xf32>
  results %r : tensor<4x5xf32>
})mlir");
  EXPECT_THAT(s.arguments[0], ElementsAre(4, 2));
}

TEST_F(ShapeSolverTest, ConcatenationsMatmulsAndBroadcastsAgree) {
  SolvedShapes s = Solve(R"mlir(
tir.graph @g(%a: tensor<?x4xf32>, %b: tensor<6x?xf32>, %w: tensor<?x6xf32>, %one: tensor<1x6xf32>) -> tensor<?x6xf32> {
  %c = concatenate %a, %b dimension = 0 : (tensor<?x4xf32>, tensor<6x?xf32>) -> tensor<?x4xf32>
  %m = matmul(%c, %w) : (tensor<?x4xf32>, tensor<?x6xf32>) -> tensor<?x6xf32>
  %r = add %m, %one : (tensor<?x6xf32>, tensor<1x6xf32>) -> tensor<?x6xf32>
  results %r : tensor<?x6xf32>
})mlir");
  EXPECT_EQ(s.arguments[1][1], 4);                  // the concatenation's other dim
  EXPECT_THAT(s.arguments[2], ElementsAre(4, 6));  // K of the matmul
}

TEST_F(ShapeSolverTest, SlicesNeedTheirLimitAndReshapesKeepTheElementCount) {
  SolvedShapes s = Solve(R"mlir(
nv_tensor_ir.graph @g(%x: tensor<?xf32>, %y: tensor<?x3xf32>, %cols: index, %n: index) -> (tensor<8xf32>, tensor<?xf32>) {
  %s = slice %x starts = [2] limits = [18] strides = [2] : tensor<?xf32> -> tensor<8xf32>
  %r = reshape %y dynamic_dims(%cols) : tensor<?x3xf32> -> tensor<3x?xf32>
  %f = reshape %r dynamic_dims(%n) : tensor<3x?xf32> -> tensor<?xf32>
  results %s, %f : tensor<8xf32>, tensor<?xf32>
})mlir");
  EXPECT_GE(s.arguments[0][0], 18);
  EXPECT_EQ(s.arguments[1][0], s.arguments[2][0]);  // ? x 3 == 3 x cols
  EXPECT_EQ(s.arguments[3][0], 3 * s.arguments[1][0]);
}

TEST_F(ShapeSolverTest, ValueShapesFollowConcreteInputsThroughViews) {
  auto loaded = LoadGraphText(R"mlir(
tir.graph @g(%x: tensor<8x?xf32>) -> tensor<?x8xf32> {
  %t = transpose %x permutation = [1, 0] : tensor<8x?xf32> -> tensor<?x8xf32>
  %r = reshape %t : tensor<?x8xf32> -> tensor<?x2x4xf32>
  %u = reshape %r : tensor<?x2x4xf32> -> tensor<?x8xf32>
  results %u : tensor<?x8xf32>
})mlir",
                              ctx_.get());
  ASSERT_TRUE(loaded.ok());
  auto shapes = ValueShapes(loaded->graph, {{8, 5}});
  mlir::Value out = loaded->graph.getBodyBlock().getTerminator()->getOperand(0);
  EXPECT_THAT(shapes[out], ElementsAre(5, 8));
}


TEST_F(ShapeSolverTest, AGatherTiesItsResultToTheDataAndIndices) {
  // The table's rows are free; its columns and the ids' extent come out.
  SolvedShapes s = Solve(R"mlir(
tir.graph @g(%w: tensor<?x?xf32>, %ids: tensor<?xsi64>, %y: tensor<6x24xf32>) -> tensor<6x24xf32> {
  %e = gather %w, %ids axis = 0 : (tensor<?x?xf32>, tensor<?xsi64>) -> tensor<?x?xf32>
  %r = add %e, %y : (tensor<?x?xf32>, tensor<6x24xf32>) -> tensor<6x24xf32>
  results %r : tensor<6x24xf32>
})mlir");
  EXPECT_THAT(s.arguments[0], ElementsAre(8, 24));
  EXPECT_THAT(s.arguments[1], ElementsAre(6));
}

TEST_F(ShapeSolverTest, ExtentSourcesNameTheArgumentAnExtentEquals) {
  auto loaded = LoadGraphText(R"mlir(
tir.graph @g(%x: tensor<?x?xf32>, %n: index, %v: f32) -> (tensor<?x?xf32>, tensor<?x4xf32>, tensor<?x?xf32>) {
  %m = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<?x?xf32> -> tensor<?x1xf32>
  %mb = broadcast %m : tensor<?x1xf32> -> tensor<?x?xf32>
  %s = sub %x, %mb : tensor<?x?xf32>
  %f = splat %v dynamic_dims(%n) : tensor<?x4xf32>
  %open = splat %v : tensor<?x?xf32>
  results %s, %f, %open : tensor<?x?xf32>, tensor<?x4xf32>, tensor<?x?xf32>
})mlir",
                              ctx_.get());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const auto sources = ExtentSources(loaded->graph);
  mlir::Operation *terminator = loaded->graph.getBodyBlock().getTerminator();
  auto of = [&](mlir::Value v, size_t d) -> std::string {
    const std::optional<ExtentSource> s = sources.lookup(v)[d];
    return s ? std::to_string(s->argument) + ":" + std::to_string(s->dim) : "none";
  };
  mlir::Value mb = terminator->getOperand(0).getDefiningOp()->getOperand(1);
  EXPECT_EQ(of(mb, 0), "0:0");
  EXPECT_EQ(of(mb, 1), "0:1") << "tied to %x's columns by the sub";
  EXPECT_EQ(of(terminator->getOperand(1), 0), "1:-1") << "the index argument";
  EXPECT_EQ(of(terminator->getOperand(1), 1), "none") << "static";
  EXPECT_EQ(of(terminator->getOperand(2), 0), "none") << "nothing ties it";
  modules_.push_back(std::move(loaded->module));
}

}  // namespace
}  // namespace tir::reference
