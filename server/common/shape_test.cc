#include "server/common/shape.h"

#include "gtest/gtest.h"

namespace tir::common {
namespace {

TEST(ShapeTest, TextRoundTripsThroughAnOperationName) {
  const Shape s = ParseShapeText("0=8x512 1=7");
  ASSERT_EQ(s.hints.size(), 2u);
  EXPECT_EQ(s.text, "0=8x512 1=7");
  EXPECT_EQ(ShapeInName(s.text), "0=8x512;1=7");
  EXPECT_EQ(ParseShapeText(ShapeInName(s.text)).text, s.text);
}

TEST(ShapeTest, ABadShapeIsEmpty) {
  EXPECT_TRUE(ParseShapeText("0=8xq").hints.empty());
  EXPECT_TRUE(ParseShapeText("0=8xq").text.empty());
}

}  // namespace
}  // namespace tir::common
