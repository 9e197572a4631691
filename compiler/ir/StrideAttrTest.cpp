#include "compiler/ir/StrideAttr.h"

#include "compiler/ir/ShapeRules.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mlir/IR/BuiltinTypes.h"

namespace tir {
namespace {

using ::testing::ElementsAre;
constexpr int64_t kDyn = mlir::ShapedType::kDynamic;

TEST(StrideString, ParsesStaticDynamicAndRejectsJunk) {
  EXPECT_THAT(*parseStrideString("(8,1)", nullptr), ElementsAre(8, 1));
  EXPECT_THAT(*parseStrideString("(?, ?,1)", nullptr), ElementsAre(kDyn, kDyn, 1));
  std::string why;
  EXPECT_FALSE(parseStrideString("(?,?,??)", &why));
  EXPECT_FALSE(why.empty());
  EXPECT_FALSE(parseStrideString("(?,?,x)", nullptr));
  EXPECT_FALSE(parseStrideString("(1,2", nullptr));
  EXPECT_FALSE(parseStrideString("(1,(2,3))", nullptr));
  EXPECT_FALSE(parseStrideString("(1) trailing", nullptr));
  EXPECT_FALSE(parseStrideString("(99999999999999999999)", nullptr));
  EXPECT_EQ(formatStrideString({kDyn, 4, 1}), "(?,4,1)");
}

TEST(StrideString, RowMajorDefault) {
  EXPECT_THAT(rowMajorStrides({2, 3, 4}), ElementsAre(12, 4, 1));
  EXPECT_THAT(rowMajorStrides({kDyn, 3, 4}), ElementsAre(12, 4, 1));
  EXPECT_THAT(rowMajorStrides({2, kDyn, 4}), ElementsAre(kDyn, 4, 1));
  EXPECT_THAT(rowMajorStrides({4, kDyn}), ElementsAre(kDyn, 1));
}

TEST(LayoutString, CuteStyleShapesAndStrides) {
  llvm::SmallVector<int64_t> flat;
  EXPECT_TRUE(parseLayoutString("(32,32,32):(1024,32,1)", &flat, nullptr));
  EXPECT_THAT(flat, ElementsAre(32, 32, 32));
  EXPECT_TRUE(parseLayoutString("(4,1)", nullptr, nullptr));
  EXPECT_TRUE(parseLayoutString("((2,4),8):((1,2),8)", nullptr, nullptr));
  std::string why;
  EXPECT_FALSE(parseLayoutString("(4..1):(1..3)", nullptr, &why));
  EXPECT_FALSE(parseLayoutString("((2,4),8):(1,8)", nullptr, &why));
  EXPECT_EQ(why, "shape and stride tuples differ in structure");
}

TEST(ShapeRules, MergeRules) {
  EXPECT_EQ(*equalMerge(kDyn, 4), 4);
  EXPECT_EQ(*equalMerge(4, 4), 4);
  EXPECT_FALSE(equalMerge(4, 1));
  EXPECT_EQ(*broadcastMerge(1, 4), 4);
  EXPECT_EQ(*broadcastMerge(1, kDyn), kDyn);
  EXPECT_EQ(*broadcastMerge(kDyn, 4), 4);
  EXPECT_FALSE(broadcastMerge(2, 3));
  int64_t dim = -1;
  EXPECT_FALSE(broadcastMergeShapes({8, 32}, {8, 16}, &dim));
  EXPECT_EQ(dim, 1);
  EXPECT_EQ(staticElementCount({2, 3, 4}), 24);
  EXPECT_FALSE(staticElementCount({2, kDyn}));
  EXPECT_FALSE(staticElementCount({int64_t{1} << 40, int64_t{1} << 40}));
}

}  // namespace
}  // namespace tir
