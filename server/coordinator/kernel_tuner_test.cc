#include "server/coordinator/kernel_tuner.h"

#include "compiler/support/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tir::coordinator {
namespace {

using ::testing::ElementsAre;

tir::v1::CandidateResult Passed(double seconds) {
  tir::v1::CandidateResult r;
  r.mutable_verification()->set_verdict(tir::v1::VERDICT_PASSED);
  r.mutable_measurement()->set_median_seconds(seconds);
  r.mutable_measurement()->set_samples(5);
  return r;
}

tir::v1::CandidateResult Failed(tir::v1::Verdict v) {
  tir::v1::CandidateResult r;
  r.mutable_verification()->set_verdict(v);
  return r;
}

// Runs the tuner against fixed per-position times (negative: fails).
int Tune(KernelTuner &t, const std::vector<double> &times, std::vector<std::vector<int>> *rounds = nullptr) {
  while (auto r = t.Next()) {
    std::vector<tir::v1::CandidateResult> results;
    for (int p : r->positions) results.push_back(times[p] < 0 ? Failed(tir::v1::VERDICT_WRONG) : Passed(times[p]));
    if (rounds) rounds->push_back(r->positions);
    t.Record(r->number, results);
  }
  return t.winner();
}

TEST(KernelTuner, HalvesThenConfirmsTheLastTwoInterleaved) {
  TunerConfig c;
  c.width = 8;
  KernelTuner t(20, 0, 100, c);
  std::vector<std::vector<int>> rounds;
  const std::vector<double> times = {5, 3, 8, 1, 7, 2, 6, 4, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9};
  EXPECT_EQ(Tune(t, times, &rounds), 3);
  ASSERT_EQ(rounds.size(), 4u);
  EXPECT_THAT(rounds[0], ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  EXPECT_THAT(rounds[1], ElementsAre(3, 5, 1, 7));
  EXPECT_THAT(rounds[2], ElementsAre(3, 5));
  EXPECT_THAT(rounds[3], ElementsAre(3, 5, 3, 5));
  EXPECT_TRUE(t.outcome().ok());
  EXPECT_EQ(t.measured(), 8);
}

TEST(KernelTuner, RoundsDoubleTheirRepetitionsAndBudget) {
  KernelTuner t(8, 0, 100, TunerConfig{});
  auto r0 = t.Next();
  ASSERT_TRUE(r0);
  t.Record(r0->number, std::vector<tir::v1::CandidateResult>(r0->positions.size(), Passed(1)));
  auto r1 = t.Next();
  ASSERT_TRUE(r1);
  EXPECT_EQ(r1->policy.min_runs(), 2 * r0->policy.min_runs());
  EXPECT_TRUE(r1->policy.verify());
}

TEST(KernelTuner, NeverMeasuresMoreThanATenthOfTheSpaceAndKeepsTheDefault) {
  TunerConfig c;
  c.width = 50;
  KernelTuner t(40, 30, 40, c);
  auto r = t.Next();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->positions.size(), 4u);
  EXPECT_EQ(r->positions.back(), 30);
}

TEST(KernelTuner, FailedCandidatesAreOutAndNoPassingOneIsAnError) {
  KernelTuner t(4, 0, 100, TunerConfig{});
  EXPECT_EQ(Tune(t, {-1, 2, -1, 1}), 3);
  KernelTuner none(3, 0, 100, TunerConfig{});
  Tune(none, {-1, -1, -1});
  EXPECT_TRUE(none.done());
  EXPECT_EQ(ReasonOf(none.outcome()), "NO_CORRECT_CANDIDATE");
}

TEST(KernelTuner, AStaleOrRepeatedRoundIsIgnored) {
  KernelTuner t(4, 0, 100, TunerConfig{});
  auto r = t.Next();
  ASSERT_TRUE(r);
  EXPECT_FALSE(t.Next()) << "one round in flight at a time";
  std::vector<tir::v1::CandidateResult> res(r->positions.size(), Passed(1));
  t.Record(r->number, res);
  t.Record(r->number, res);  // the same round again: no effect
  auto next = t.Next();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->number, 1);
}

TEST(KernelTuner, ATimeoutAfterAPassedRoundDoesNotLoseTheCandidate) {
  // Two candidates: round 0 passes both, the confirming round times out on
  // both (a busy machine): the kernel keeps the faster of round 0.
  KernelTuner t(2, 0, 100, TunerConfig{});
  auto r0 = t.Next();
  ASSERT_TRUE(r0);
  t.Record(r0->number, {Passed(2), Passed(1)});
  auto r1 = t.Next();
  ASSERT_TRUE(r1);
  EXPECT_THAT(r1->positions, ElementsAre(1, 0, 1, 0));
  t.Record(r1->number, std::vector<tir::v1::CandidateResult>(4, Failed(tir::v1::VERDICT_TIMEOUT)));
  EXPECT_TRUE(t.done());
  ASSERT_TRUE(t.outcome().ok()) << t.outcome();
  EXPECT_EQ(t.winner(), 1);
  EXPECT_EQ(t.failed(), 0);
  // A fault in a later round still puts a candidate out.
  KernelTuner f(2, 0, 100, TunerConfig{});
  auto f0 = f.Next();
  f.Record(f0->number, {Passed(2), Passed(1)});
  auto f1 = f.Next();
  f.Record(f1->number, {Failed(tir::v1::VERDICT_FAULT), Passed(2), Failed(tir::v1::VERDICT_FAULT), Passed(2)});
  ASSERT_TRUE(f.done());
  EXPECT_EQ(f.winner(), 0);
  // A timeout in round 0 is a failure like any other.
  KernelTuner z(2, 0, 100, TunerConfig{});
  auto z0 = z.Next();
  z.Record(z0->number, {Failed(tir::v1::VERDICT_TIMEOUT), Failed(tir::v1::VERDICT_TIMEOUT)});
  EXPECT_EQ(ReasonOf(z.outcome()), "NO_CORRECT_CANDIDATE");
}

}  // namespace
}  // namespace tir::coordinator
