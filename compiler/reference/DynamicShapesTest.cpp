#include "compiler/reference/DynamicShapes.h"

#include "absl/strings/str_cat.h"
#include "compiler/conversion/GraphProto.h"
#include "compiler/ir/Registration.h"
#include "compiler/support/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tir::reference {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class DynamicShapesTest : public ::testing::Test {
 protected:
  GraphOp Load(const std::string &text) {
    auto loaded = LoadGraphText(text, ctx_.get());
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    if (!loaded.ok()) return nullptr;
    modules_.push_back(std::move(loaded->module));
    return loaded->graph;
  }
  absl::StatusOr<BoundShapes> Bind(GraphOp g, const std::vector<std::string> &hints) {
    google::protobuf::RepeatedPtrField<tir::v1::ShapeHint> h;
    for (const std::string &s : hints) {
      absl::StatusOr<tir::v1::ShapeHint> one = ParseShapeHint(s);
      EXPECT_TRUE(one.ok()) << one.status();
      *h.Add() = *one;
    }
    return BindShapes(g, DynamicDimsOf(g), h);
  }
  std::unique_ptr<mlir::MLIRContext> ctx_ = makeTirContext();
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> modules_;
};

constexpr char kMatmul[] = R"mlir(
tir.graph @mm(%a: tensor<?x?xf32>, %b: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %c = matmul(%a, %b) : (tensor<?x?xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
  results %c : tensor<?x16xf32>
})mlir";

TEST_F(DynamicShapesTest, HintsGiveEveryValuesShape) {
  GraphOp g = Load(kMatmul);
  std::vector<DynamicDim> dims = DynamicDimsOf(g);
  ASSERT_EQ(dims.size(), 3u);
  auto b = Bind(g, {"0=100x32", "1=32x16"});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_THAT(b->args[0], ElementsAre(100, 32));
  EXPECT_THAT(b->sizes, ElementsAre(100, 32, 32));
  // K of b contradicts K of a: named.
  auto bad = Bind(g, {"0=100x32", "1=31x16"});
  EXPECT_EQ(ReasonOf(bad.status()), "INVALID_SHAPE_HINT");
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("input 1 dim 0 = 31 contradicts the graph"));
  auto missing = Bind(g, {"0=100x32"});
  EXPECT_EQ(ReasonOf(missing.status()), "SHAPE_HINT_MISSING");
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("input 1 dim 0"));
  EXPECT_EQ(ReasonOf(Bind(g, {"0=100x32", "1=32x16", "0=1x1"}).status()), "INVALID_SHAPE_HINT");
}

TEST_F(DynamicShapesTest, BucketsFollowThePolicyAndTheBound) {
  std::vector<DynamicDim> dims = {{0, 0, false, 0}, {0, 1, false, 6}};
  auto pow2 = BucketOf(dims, {300, 5}, BucketPolicy{});
  EXPECT_EQ(FormatBucket(dims, pow2), "0:0=257..512 0:1=5..6");
  auto mult = BucketOf(dims, {300, 5}, *BucketPolicy::Parse("multiple:64"));
  EXPECT_EQ(FormatBucket(dims, mult), "0:0=257..320 0:1=1..6");
  auto bound = BucketOf(dims, {300, 5}, *BucketPolicy::Parse("bound"));
  EXPECT_EQ(FormatBucket(dims, bound), "0:0=257..512 0:1=1..6");
  EXPECT_EQ(FormatBucket(dims, BucketOf(dims, {1, 1}, BucketPolicy{})), "0:0=1 0:1=1");
  EXPECT_EQ(ReasonOf(BucketPolicy::Parse("multiple:0").status()), "INVALID_CONFIG");
  EXPECT_EQ(ReasonOf(BucketPolicy::Parse("squares").status()), "INVALID_CONFIG");
}

TEST_F(DynamicShapesTest, TheRepresentativeIsTheBucketsTopWhenTheGraphAcceptsIt) {
  GraphOp g = Load(kMatmul);
  std::vector<DynamicDim> dims = DynamicDimsOf(g);
  auto asked = Bind(g, {"0=100x30", "1=30x16"});
  ASSERT_TRUE(asked.ok()) << asked.status();
  BoundShapes top = Representative(g, dims, BucketOf(dims, asked->sizes, BucketPolicy{}), *asked);
  EXPECT_THAT(top.args[0], ElementsAre(128, 32));
  EXPECT_THAT(top.args[1], ElementsAre(32, 16));
  // Dims tied by a product: the reshape's extent (an index input) follows
  // the input's rows. Of ?x4 the tops agree (8x4 = 32, the top of 17..32).
  auto flat = [&](int cols) {
    return absl::StrCat("tir.graph @flat(%x: tensor<?x", cols, "xf32>, %n: index) -> tensor<?xf32> {\n",
                        "  %y = reshape %x dynamic_dims(%n) : tensor<?x", cols, "xf32> -> tensor<?xf32>\n",
                        "  results %y : tensor<?xf32>\n}\n");
  };
  GraphOp r = Load(flat(4));
  std::vector<DynamicDim> rd = DynamicDimsOf(r);
  auto ra = Bind(r, {"0=5x4"});
  ASSERT_TRUE(ra.ok()) << ra.status();
  EXPECT_THAT(ra->args[1], ElementsAre(20)) << "the index is inferred";
  BoundShapes rt = Representative(r, rd, BucketOf(rd, ra->sizes, BucketPolicy{}), *ra);
  EXPECT_THAT(rt.args[0], ElementsAre(8, 4));
  EXPECT_THAT(rt.args[1], ElementsAre(32));
  // Of ?x3 they cannot: 8 rows make 24, outside the index's bucket 9..16;
  // the bundle is tuned at the shape asked.
  GraphOp r3 = Load(flat(3));
  std::vector<DynamicDim> rd3 = DynamicDimsOf(r3);
  auto ra3 = Bind(r3, {"0=5x3"});
  ASSERT_TRUE(ra3.ok()) << ra3.status();
  EXPECT_EQ(FormatBucket(rd3, BucketOf(rd3, ra3->sizes, BucketPolicy{})), "0:0=5..8 1=9..16");
  BoundShapes rt3 = Representative(r3, rd3, BucketOf(rd3, ra3->sizes, BucketPolicy{}), *ra3);
  EXPECT_THAT(rt3.args[0], ElementsAre(5, 3));
  EXPECT_THAT(rt3.args[1], ElementsAre(15));
}

TEST_F(DynamicShapesTest, BoundsInBothSpellingsAndThroughTheProtobufForm) {
  for (const char *spelling : {"\"[<=6,2]\"", "\"<=6, 2\"", "array<i64: 6, 2>", "\"[<=6,?]\""}) {
    SCOPED_TRACE(spelling);
    GraphOp g = Load(absl::StrCat("tir.graph @nz(%x: tensor<?x2xf32> {tir.bounds = ", spelling,
                                  "}) -> tensor<?x2xf32> {\n  %y = exp %x : tensor<?x2xf32>\n  results %y : tensor<?x2xf32>\n}\n"));
    ASSERT_TRUE(g);
    ASSERT_EQ(DynamicDimsOf(g).size(), 1u);
    EXPECT_EQ(DynamicDimsOf(g)[0].bound, 6);
    EXPECT_EQ(ReasonOf(Bind(g, {"0=7x2"}).status()), "SHAPE_OVER_BOUND");
    EXPECT_TRUE(Bind(g, {"0=6x2"}).ok());
    // The protobuf form keeps it.
    absl::StatusOr<tir::v1::Graph> proto = ExportGraph(g);
    ASSERT_TRUE(proto.ok()) << proto.status();
    tir::v1::GraphSource source;
    *source.mutable_graph() = *proto;
    auto back = LoadGraphSource(source, ctx_.get());
    ASSERT_TRUE(back.ok()) << back.status();
    ASSERT_EQ(DynamicDimsOf(back->graph).size(), 1u);
    EXPECT_EQ(DynamicDimsOf(back->graph)[0].bound, 6);
    modules_.push_back(std::move(back->module));
  }
  for (const char *bad : {"\"[<=0,2]\"", "\"[<=6]\"", "\"[<=6,3]\"", "\"[six,2]\"", "7"}) {
    SCOPED_TRACE(bad);
    auto loaded = LoadGraphText(absl::StrCat("tir.graph @nz(%x: tensor<?x2xf32> {tir.bounds = ", bad,
                                             "}) -> tensor<?x2xf32> {\n  %y = exp %x : tensor<?x2xf32>\n"
                                             "  results %y : tensor<?x2xf32>\n}\n"),
                                ctx_.get());
    EXPECT_EQ(ReasonOf(loaded.status()), "INVALID_GRAPH");
    EXPECT_THAT(std::string(loaded.status().message()), HasSubstr("tir.bounds"));
  }
}

TEST_F(DynamicShapesTest, ShapeTextRoundTrips) {
  auto h = ParseShapeHint("2=8x512x3");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->input(), 2u);
  EXPECT_THAT(h->shape(), ElementsAre(8, 512, 3));
  EXPECT_EQ(FormatShapes({*h}), "2=8x512x3");
  EXPECT_THAT(ParseShapeHint("0=8,512")->shape(), ElementsAre(8, 512));
  EXPECT_TRUE(ParseShapeHint("1=")->shape().empty());
  for (const char *bad : {"8x512", "a=8", "0=8xx", "0=8xq"}) EXPECT_FALSE(ParseShapeHint(bad).ok()) << bad;
}

}  // namespace
}  // namespace tir::reference
