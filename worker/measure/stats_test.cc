#include "worker/measure/stats.h"

#include "gtest/gtest.h"

namespace tir::measure {
namespace {

TEST(Summarize, MedianIqrMinAndCountOfUnsortedSamples) {
  tir::v1::Measurement m;
  Summarize({5, 1, 4, 2, 3}, &m);
  EXPECT_EQ(m.samples(), 5u);
  EXPECT_DOUBLE_EQ(m.median_seconds(), 3);
  EXPECT_DOUBLE_EQ(m.iqr_seconds(), 2);  // Q3 = 4, Q1 = 2
  EXPECT_DOUBLE_EQ(m.min_seconds(), 1);
}

TEST(Summarize, EvenCountInterpolatesAndOutliersDoNotMoveTheMedian) {
  tir::v1::Measurement m;
  Summarize({1, 2, 3, 4, 1000}, &m);
  EXPECT_DOUBLE_EQ(m.median_seconds(), 3);
  Summarize({1, 2, 3, 4}, &m);
  EXPECT_DOUBLE_EQ(m.median_seconds(), 2.5);
  EXPECT_DOUBLE_EQ(m.iqr_seconds(), 3.25 - 1.75);
}

TEST(Summarize, NoSamplesGivesZeros) {
  tir::v1::Measurement m;
  Summarize({}, &m);
  EXPECT_EQ(m.samples(), 0u);
  EXPECT_EQ(m.median_seconds(), 0);
}

}  // namespace
}  // namespace tir::measure
