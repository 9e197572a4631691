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

tir::v1::Operation Progress(tir::v1::Stage stage, uint32_t kernels, uint32_t measured, uint32_t total) {
  tir::v1::Operation op;
  tir::v1::CompileProgress *p = op.mutable_metadata()->mutable_progress();
  p->set_stage(stage);
  p->set_partitions(kernels);
  p->set_candidates_measured(measured);
  p->set_candidates_total(total);
  return op;
}

TEST(ProgressLine, SaysKernelsPlannedCandidatesMeasuredAndTheBucket) {
  tir::v1::Operation op = Progress(tir::v1::STAGE_TUNING, 2, 12, 40);
  EXPECT_EQ(ProgressLine(op, absl::Milliseconds(3140)),
            "tuning: 2 kernels planned, 12/40 candidates measured (0 failed)  3.1 s");
  op.mutable_metadata()->set_shape_bucket("0:0=257..512");
  EXPECT_THAT(ProgressLine(op, absl::Seconds(1)), HasSubstr("tuning bucket 0:0=257..512: 2 kernels planned"));
  op = Progress(tir::v1::STAGE_QUEUED, 1, 0, 8);
  EXPECT_THAT(ProgressLine(op, absl::Seconds(1)), HasSubstr("queued: 1 kernel planned, 8 candidates to measure"));
  op = Progress(tir::v1::STAGE_DONE, 2, 40, 40);
  op.set_done(true);
  op.mutable_metadata()->set_shape_bucket("0:0=257..512");
  EXPECT_EQ(ProgressLine(op, absl::Seconds(48)),
            "tuned bucket 0:0=257..512: 2 kernels, 40/40 candidates measured (0 failed)  48.0 s");
  op.mutable_metadata()->set_cache_hit(true);
  EXPECT_THAT(ProgressLine(op, absl::ZeroDuration()), HasSubstr("cache hit bucket 0:0=257..512"));
}

}  // namespace
}  // namespace tir::client
