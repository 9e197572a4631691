#include "client/service_commands.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tir::client {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

tir::v1::KernelBundle Tuned(double best, double fallback, std::vector<bool> defaults) {
  tir::v1::KernelBundle b;
  b.mutable_tuning()->set_tuned(true);
  b.mutable_tuning()->set_candidates_measured(8);
  b.mutable_tuning()->set_candidates_total(80);
  b.mutable_tuning()->set_best_seconds(best);
  b.mutable_tuning()->set_default_seconds(fallback);
  for (size_t i = 0; i < defaults.size(); ++i) {
    tir::v1::KernelEntry *k = b.add_kernels();
    k->set_partition(static_cast<uint32_t>(i));
    k->mutable_candidate()->set_is_default(defaults[i]);
  }
  return b;
}

TEST(DescribeBundle, SaysTheDefaultWasKeptWhenNoCandidateBeatIt) {
  const std::string text = DescribeBundle(Tuned(0.002, 0.002, {true}));
  EXPECT_THAT(text, HasSubstr("2.000 ms against the default's 2.000 ms: x1.00"));
  EXPECT_THAT(text, HasSubstr("the default kept (no candidate was faster in the same round)"));
}

TEST(DescribeBundle, CountsTheKernelsThatKeepTheirDefault) {
  const std::string text = DescribeBundle(Tuned(0.003, 0.004, {true, false}));
  EXPECT_THAT(text, HasSubstr("3.000 ms against the default's 4.000 ms: x1.33"));
  EXPECT_THAT(text, HasSubstr("1 of 2 kernels keep the default"));
}

TEST(DescribeBundle, ATunedWinnerIsNotCalledTheDefault) {
  const std::string text = DescribeBundle(Tuned(0.001, 0.002, {false}));
  EXPECT_THAT(text, HasSubstr("x2.00"));
  EXPECT_THAT(text, Not(HasSubstr("keep")));
}

}  // namespace
}  // namespace tir::client
