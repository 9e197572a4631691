#include "compiler/fingerprint/Fingerprint.h"

#include <string>

#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tir {
namespace {

class FingerprintTest : public ::testing::Test {
 protected:
  std::string Fp(const std::string &text) {
    auto loaded = LoadGraphText(text, ctx_.get());
    EXPECT_TRUE(loaded.ok()) << loaded.status() << "\n" << text;
    if (!loaded.ok()) return "";
    modules_.push_back(std::move(loaded->module));
    return FingerprintGraph(loaded->graph);
  }
  std::unique_ptr<mlir::MLIRContext> ctx_ = makeTirContext();
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> modules_;
};

constexpr char kBase[] = R"mlir(
tir.graph @g(%x: tensor<4x8xf32>, %b: tensor<1x8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>) {
  %bb = broadcast %b : tensor<1x8xf32> -> tensor<4x8xf32>
  %y = add %x, %bb : tensor<4x8xf32>
  %e = exp %x : tensor<4x8xf32>
  %s = reduce(%e)<dimensions = [1], reduction_mode = <add>> : tensor<4x8xf32> -> tensor<4x1xf32>
  results %y, %s : tensor<4x8xf32>, tensor<4x1xf32>
}
)mlir";

TEST_F(FingerprintTest, IsStableHex) {
  const std::string a = Fp(kBase);
  EXPECT_THAT(a, ::testing::MatchesRegex("[0-9a-f]{64}"));
  EXPECT_EQ(a, Fp(kBase));
}

TEST_F(FingerprintTest, IgnoresNamesGraphNameAndOpOrder) {
  const std::string a = Fp(kBase);
  // Renamed values and graph, independent ops reordered.
  EXPECT_EQ(a, Fp(R"mlir(
tir.graph @other(%in: tensor<4x8xf32>, %bias: tensor<1x8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>) {
  %ex = exp %in : tensor<4x8xf32>
  %sum = reduce(%ex)<dimensions = [1], reduction_mode = <add>> : tensor<4x8xf32> -> tensor<4x1xf32>
  %bcast = broadcast %bias : tensor<1x8xf32> -> tensor<4x8xf32>
  %out = add %in, %bcast : tensor<4x8xf32>
  results %out, %sum : tensor<4x8xf32>, tensor<4x1xf32>
}
)mlir"));
}

TEST_F(FingerprintTest, TensorIrFormAndExplicitDefaultStridesMatch) {
  const std::string a = Fp(kBase);
  EXPECT_EQ(a, Fp(R"mlir(
nv_tensor_ir.graph @g(%x: tensor<4x8xf32> {nv_tensor_ir.stride = "(8,1)"}, %b: tensor<1x8xf32>)
    -> (tensor<4x8xf32> {nv_tensor_ir.stride = "(8,1)"}, tensor<4x1xf32>) {
  %bb = broadcast %b : tensor<1x8xf32> -> tensor<4x8xf32>
  %y = add %x, %bb : tensor<4x8xf32>
  %e = exp %x : tensor<4x8xf32>
  %s = reduce(%e)<dimensions = [1], reduction_mode = <add>> : tensor<4x8xf32> -> tensor<4x1xf32>
  results %y, %s : tensor<4x8xf32>, tensor<4x1xf32>
}
)mlir"));
}

// TensorIR's analysis annotations and the spelling of a stride string change
// nothing computed; a divisibility hint, an alignment and the user's tile do
// (kernels rely on the first two; the tile picks the default answer).
TEST_F(FingerprintTest, IgnoresAnalysisAttributesButNotLayoutPromisesOrTiles) {
  auto graph = [](const std::string &argAttrs, const std::string &opAttrs, const std::string &graphAttrs) {
    return "nv_tensor_ir.graph @g(%x: tensor<8x?xf32> " + argAttrs + ") -> tensor<8x?xf32> " + graphAttrs +
           " {\n  %y = exp %x " + opAttrs + " : tensor<8x?xf32>\n  results %y : tensor<8x?xf32>\n}\n";
  };
  const std::string plain = Fp(graph("{nv_tensor_ir.stride = \"(?{div=8},1)\"}", "", ""));
  EXPECT_EQ(plain, Fp(graph("{nv_tensor_ir.stride = \"( ? { div = 8 } , 1 )\"}", "", "")));
  EXPECT_EQ(plain, Fp(graph("{nv_tensor_ir.stride = \"(?{div=8},1)\", nv_tensor_ir.iter_space_ids = array<i32: 0>, "
                            "nv_tensor_ir.iter_space_map = affine_map<(d0, d1) -> (d0, d1)>, nv_tensor_ir.cost = 2 : i32, "
                            "nv_tensor_ir.iter_space_dim_domains = #nv_tensor_ir<iter_space_dim_domains[undef, def]>}",
                            "{nv_tensor_ir.iter_space_id = 0 : i32, layout = #nv_tensor_ir.tensor_source<0, 0, \"(8,?):(?,1)\">}",
                            "")));
  EXPECT_NE(plain, Fp(graph("{nv_tensor_ir.stride = \"(?,1)\"}", "", "")));
  EXPECT_NE(plain, Fp(graph("{nv_tensor_ir.stride = \"(?{div=16},1)\"}", "", "")));
  EXPECT_NE(plain, Fp(graph("{nv_tensor_ir.stride = \"(?{div=8},1)\", nv_tensor_ir.alignment = 64}", "", "")));
  const std::string tiled = Fp(graph("{nv_tensor_ir.stride = \"(?{div=8},1)\"}", "", "attributes {tile_size = array<i32: 64>}"));
  EXPECT_NE(plain, tiled);
  EXPECT_NE(tiled, Fp(graph("{nv_tensor_ir.stride = \"(?{div=8},1)\"}", "", "attributes {tile_size = array<i32: 128>}")));
}

TEST_F(FingerprintTest, MeanIsAvg) {
  const std::string r = "tir.graph @g(%x: tensor<4x8xf32>) -> tensor<4x1xf32> {\n"
                        "  %s = reduce(%x)<dimensions = [1], reduction_mode = <MODE>> : tensor<4x8xf32> -> tensor<4x1xf32>\n"
                        "  results %s : tensor<4x1xf32>\n}\n";
  auto with = [&](const std::string &mode) { return std::string(r).replace(r.find("MODE"), 4, mode); };
  EXPECT_EQ(Fp(with("mean")), Fp(with("avg")));
  EXPECT_NE(Fp(with("avg")), Fp(with("add")));
  EXPECT_NE(Fp(with("mul_no_zeros")), Fp(with("mul")));
}

TEST_F(FingerprintTest, SurvivesProtoRoundTrip) {
  auto loaded = LoadGraphText(kBase, ctx_.get());
  ASSERT_TRUE(loaded.ok());
  auto proto = ExportGraph(loaded->graph);
  ASSERT_TRUE(proto.ok()) << proto.status();
  auto back = ImportGraph(*proto, ctx_.get());
  ASSERT_TRUE(back.ok()) << back.status();
  auto graph = *(*back)->getOps<GraphOp>().begin();
  EXPECT_EQ(FingerprintGraph(loaded->graph), FingerprintGraph(graph));
}

// Each variant changes one thing the graph computes; all must differ from the
// base and from each other.
TEST_F(FingerprintTest, NearMissesDiffer) {
  auto variant = [](const std::string &from, const std::string &to) {
    std::string s = kBase;
    size_t pos = s.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    while (pos != std::string::npos) {
      s.replace(pos, from.size(), to);
      pos = s.find(from, pos + to.size());
    }
    return s;
  };
  std::vector<std::string> texts = {
      kBase,
      variant("%y = add %x, %bb", "%y = sub %x, %bb"),                      // op kind
      variant("%y = add %x, %bb : tensor<4x8xf32>",
              "%y = sub %bb, %x : tensor<4x8xf32>"),                        // operand order (with sub)
      variant("reduction_mode = <add>", "reduction_mode = <max>"),          // enum attribute
      variant("results %y, %s : tensor<4x8xf32>, tensor<4x1xf32>",
              "results %y, %s : tensor<4x8xf32>, tensor<4x1xf32>\n") ,      // same (control)
      variant("-> (tensor<4x8xf32>, tensor<4x1xf32>) {",
              "-> (tensor<4x8xf32> {tir.stride = \"(16,1)\"}, tensor<4x1xf32>) {"),  // output stride
      variant("%x: tensor<4x8xf32>,", "%x: tensor<4x8xf32> {tir.stride = \"(1,4)\"},"),  // input stride
      variant("%e = exp %x", "%e = log %x"),                                // unary kind
      variant("%x: tensor<4x8xf32>, %b", "%x: tensor<4x8xf32> {tir.alignment = 16}, %b"),  // alignment
  };
  // The control (index 4) equals the base; everything else is distinct.
  std::vector<std::string> fps;
  for (const auto &t : texts) fps.push_back(Fp(t));
  EXPECT_EQ(fps[4], fps[0]);
  for (size_t i = 0; i < fps.size(); ++i) {
    for (size_t j = i + 1; j < fps.size(); ++j) {
      if (i == 0 && j == 4) continue;
      EXPECT_NE(fps[i], fps[j]) << "variants " << i << " and " << j << " collide";
    }
  }
}

TEST_F(FingerprintTest, ShapeDtypeOutputOrderDeadOpsAndConstantsMatter) {
  auto g = [](const std::string &type, const std::string &extra, bool swap,
              const std::string &c) {
    return "tir.graph @g(%x: " + type + ") -> (" + type + ", " + type + ") {\n" +
           "  %c = constant dense<" + c + "> : " + type + "\n" +
           "  %a = add %x, %c : " + type + "\n  %m = mul %x, %x : " + type + "\n" + extra +
           (swap ? "  results %m, %a : " : "  results %a, %m : ") + type + ", " + type + "\n}\n";
  };
  const std::string base = Fp(g("tensor<4x8xf32>", "", false, "1.0"));
  EXPECT_NE(base, Fp(g("tensor<8x4xf32>", "", false, "1.0")));   // shape
  EXPECT_NE(base, Fp(g("tensor<4x8xf16>", "", false, "1.0")));   // dtype
  EXPECT_NE(base, Fp(g("tensor<4x8xf32>", "", true, "1.0")));    // output order
  EXPECT_NE(base, Fp(g("tensor<4x8xf32>", "", false, "2.0")));   // constant value
  EXPECT_NE(base, Fp(g("tensor<4x8xf32>", "  %d = neg %x : tensor<4x8xf32>\n", false, "1.0")));
}

TEST_F(FingerprintTest, DynamicAndStaticDimsDiffer) {
  EXPECT_NE(Fp("tir.graph @g(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {\n"
               "  %y = exp %x : tensor<?x8xf32>\n  results %y : tensor<?x8xf32>\n}\n"),
            Fp("tir.graph @g(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {\n"
               "  %y = exp %x : tensor<4x8xf32>\n  results %y : tensor<4x8xf32>\n}\n"));
}

TEST_F(FingerprintTest, BetaAttributeMatters) {
  auto g = [](const std::string &beta) {
    return "tir.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {\n  %y = softplus_fwd<beta = " + beta +
           " : f32> %x : tensor<4xf32>\n  results %y : tensor<4xf32>\n}\n";
  };
  EXPECT_NE(Fp(g("1.0")), Fp(g("2.0")));
}


TEST_F(FingerprintTest, AGatherIsKeyedByItsAxisAndItsOperands) {
  auto gather = [&](const std::string &axis, const std::string &a, const std::string &b) {
    return Fp("tir.graph @g(%w: tensor<8x8xf32>, %v: tensor<8x8xf32>, %i: tensor<8xsi64>) -> tensor<8x8xf32> {\n"
              "  %r = gather " + a + ", %i axis = " + axis +
              " : (tensor<8x8xf32>, tensor<8xsi64>) -> tensor<8x8xf32>\n"
              "  %s = add %r, " + b + " : tensor<8x8xf32>\n  results %s : tensor<8x8xf32>\n}\n");
  };
  const std::string rows = gather("0", "%w", "%v");
  EXPECT_EQ(rows, gather("0", "%w", "%v"));
  EXPECT_NE(rows, gather("1", "%w", "%v")) << "rows and columns";
  EXPECT_NE(rows, gather("0", "%v", "%w")) << "which table";
}

}  // namespace
}  // namespace tir
