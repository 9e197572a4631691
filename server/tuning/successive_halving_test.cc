#include "server/tuning/successive_halving.h"

#include <functional>

#include "compiler/support/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tir::tuning {
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
int Tune(SuccessiveHalving &t, const std::vector<double> &times, std::vector<std::vector<int>> *rounds = nullptr) {
  while (auto r = t.Next()) {
    std::vector<tir::v1::CandidateResult> results;
    for (int p : r->positions) results.push_back(times[p] < 0 ? Failed(tir::v1::VERDICT_WRONG) : Passed(times[p]));
    if (rounds) rounds->push_back(r->positions);
    t.Record(r->number, results);
  }
  return t.winner();
}

TEST(SuccessiveHalving, HalvesThenConfirmsTheLastTwoInterleaved) {
  TunerConfig c;
  c.width = 8;
  SuccessiveHalving t(20, 0, 100, c);
  std::vector<std::vector<int>> rounds;
  const std::vector<double> times = {5, 3, 8, 1, 7, 2, 6, 4, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9};
  EXPECT_EQ(Tune(t, times, &rounds), 3);
  ASSERT_EQ(rounds.size(), 4u);
  EXPECT_THAT(rounds[0], ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  EXPECT_THAT(rounds[1], ElementsAre(3, 5, 1, 7));
  EXPECT_THAT(rounds[2], ElementsAre(3, 5));
  EXPECT_THAT(rounds[3], ElementsAre(3, 5, 0, 3, 5, 0)) << "the finalists and the default, interleaved";
  EXPECT_TRUE(t.outcome().ok());
  EXPECT_EQ(t.measured(), 8);
}

TEST(SuccessiveHalving, RoundsDoubleTheirRepetitionsAndBudget) {
  SuccessiveHalving t(8, 0, 100, TunerConfig{});
  auto r0 = t.Next();
  ASSERT_TRUE(r0);
  t.Record(r0->number, std::vector<tir::v1::CandidateResult>(r0->positions.size(), Passed(1)));
  auto r1 = t.Next();
  ASSERT_TRUE(r1);
  EXPECT_EQ(r1->policy.min_runs(), 2 * r0->policy.min_runs());
  EXPECT_TRUE(r1->policy.verify());
}

TEST(SuccessiveHalving, NeverMeasuresMoreThanATenthOfTheSpaceAndKeepsTheDefault) {
  TunerConfig c;
  c.width = 50;
  SuccessiveHalving t(40, 30, 40, c);
  auto r = t.Next();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->positions.size(), 4u);
  EXPECT_EQ(r->positions.back(), 30);
}

TEST(SuccessiveHalving, FailedCandidatesAreOutAndNoPassingOneIsAnError) {
  SuccessiveHalving t(4, 0, 100, TunerConfig{});
  EXPECT_EQ(Tune(t, {-1, 2, -1, 1}), 3);
  SuccessiveHalving none(3, 0, 100, TunerConfig{});
  Tune(none, {-1, -1, -1});
  EXPECT_TRUE(none.done());
  EXPECT_EQ(ReasonOf(none.outcome()), "NO_CORRECT_CANDIDATE");
}

TEST(SuccessiveHalving, AStaleOrRepeatedRoundIsIgnored) {
  SuccessiveHalving t(4, 0, 100, TunerConfig{});
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

TEST(SuccessiveHalving, ATimeoutAfterAPassedRoundDoesNotLoseTheCandidate) {
  // Two candidates: round 0 passes both, the confirming round times out on
  // both (a busy machine): the kernel keeps the faster of round 0.
  SuccessiveHalving t(2, 0, 100, TunerConfig{});
  auto r0 = t.Next();
  ASSERT_TRUE(r0);
  t.Record(r0->number, {Passed(2), Passed(1)});
  auto r1 = t.Next();
  ASSERT_TRUE(r1);
  EXPECT_THAT(r1->positions, ElementsAre(1, 0, 1, 0));  // the default (0) is a finalist already
  t.Record(r1->number, std::vector<tir::v1::CandidateResult>(4, Failed(tir::v1::VERDICT_TIMEOUT)));
  EXPECT_TRUE(t.done());
  ASSERT_TRUE(t.outcome().ok()) << t.outcome();
  EXPECT_EQ(t.winner(), 1);
  EXPECT_EQ(t.failed(), 0);
  // A fault in a later round still puts a candidate out.
  SuccessiveHalving f(2, 0, 100, TunerConfig{});
  auto f0 = f.Next();
  f.Record(f0->number, {Passed(2), Passed(1)});
  auto f1 = f.Next();
  f.Record(f1->number, {Failed(tir::v1::VERDICT_FAULT), Passed(2), Failed(tir::v1::VERDICT_FAULT), Passed(2)});
  ASSERT_TRUE(f.done());
  EXPECT_EQ(f.winner(), 0);
  // A timeout in round 0 is a failure like any other.
  SuccessiveHalving z(2, 0, 100, TunerConfig{});
  auto z0 = z.Next();
  z.Record(z0->number, {Failed(tir::v1::VERDICT_TIMEOUT), Failed(tir::v1::VERDICT_TIMEOUT)});
  EXPECT_EQ(ReasonOf(z.outcome()), "NO_CORRECT_CANDIDATE");
}

// Runs the tuner with a time per round and position (negative: fails).
int TuneByRound(SuccessiveHalving &t, const std::function<double(int round, int position)> &time,
                std::vector<std::vector<int>> *rounds = nullptr) {
  while (auto r = t.Next()) {
    std::vector<tir::v1::CandidateResult> results;
    for (int p : r->positions) {
      const double s = time(r->number, p);
      results.push_back(s < 0 ? Failed(tir::v1::VERDICT_WRONG) : Passed(s));
    }
    if (rounds) rounds->push_back(r->positions);
    t.Record(r->number, results);
  }
  return t.winner();
}

TEST(SuccessiveHalving, TheDefaultFastestInTheConfirmingRoundWins) {
  // Round 0 on a noisy machine makes the default (position 2) look slow, so
  // halving drops it; the confirming round measures it beside the finalists
  // and there it is the fastest: it wins, and both reported times are the
  // confirming round's.
  TunerConfig c;
  c.width = 4;
  SuccessiveHalving t(4, 2, 100, c);
  std::vector<std::vector<int>> rounds;
  const int winner = TuneByRound(
      t,
      [](int round, int p) {
        const bool confirming = round == 2;
        if (p == 2) return confirming ? 30.0 : 50.0;
        return confirming ? 33.0 + p : 35.0 + p;
      },
      &rounds);
  ASSERT_TRUE(t.outcome().ok()) << t.outcome();
  ASSERT_EQ(rounds.size(), 3u);
  EXPECT_THAT(rounds[1], ElementsAre(0, 1)) << "the default is out of the halving";
  EXPECT_THAT(rounds[2], ElementsAre(0, 1, 2, 0, 1, 2)) << "but back for the confirming round";
  EXPECT_EQ(winner, 2);
  EXPECT_TRUE(t.confirmed());
  EXPECT_DOUBLE_EQ(t.FinalSeconds(2), 30.0);
  EXPECT_DOUBLE_EQ(t.FinalSeconds(0), 33.0) << "the confirming round's time, not round 1's";
  EXPECT_DOUBLE_EQ(t.FinalMeasurement().median_seconds(), 30.0);
}

TEST(SuccessiveHalving, TheDefaultWinsATieAndIsNeverReportedFasterThanTheWinner) {
  TunerConfig c;
  c.width = 4;
  SuccessiveHalving t(4, 3, 100, c);
  const int winner = TuneByRound(t, [](int round, int p) { return round < 2 ? 10.0 + p : 20.0; });
  EXPECT_EQ(winner, 3) << "a finalist only as fast as the default does not replace it";
  EXPECT_DOUBLE_EQ(t.FinalSeconds(winner), t.FinalSeconds(t.default_position()));
}

TEST(SuccessiveHalving, AFasterFinalistBeatsTheDefaultInTheSameRound) {
  TunerConfig c;
  c.width = 4;
  SuccessiveHalving t(4, 3, 100, c);
  const int winner = TuneByRound(t, [](int, int p) { return 10.0 + p; });
  EXPECT_EQ(winner, 0);
  EXPECT_DOUBLE_EQ(t.FinalSeconds(0), 10.0);
  EXPECT_DOUBLE_EQ(t.FinalSeconds(3), 13.0);
  EXPECT_LT(t.FinalSeconds(winner), t.FinalSeconds(t.default_position()));
}

TEST(SuccessiveHalving, ConfirmedTimesAreTheMediansOfTheConfirmingRuns) {
  // Two finalists (0 the default, 1): the confirming round measures each
  // twice; each one's time is the median (here the mean) of its two runs,
  // and its measurement merges them.
  SuccessiveHalving t(2, 0, 100, TunerConfig{});
  auto r0 = t.Next();
  ASSERT_TRUE(r0);
  t.Record(r0->number, {Passed(5), Passed(4)});
  auto r1 = t.Next();
  ASSERT_TRUE(r1);
  ASSERT_THAT(r1->positions, ElementsAre(1, 0, 1, 0));
  tir::v1::CandidateResult slow = Passed(3), fast = Passed(1);
  slow.mutable_measurement()->set_min_seconds(2.5);
  fast.mutable_measurement()->set_min_seconds(0.5);
  fast.mutable_measurement()->set_iqr_seconds(0.25);
  t.Record(r1->number, {fast, Passed(4), slow, Passed(4)});
  ASSERT_TRUE(t.done());
  EXPECT_EQ(t.winner(), 1);
  EXPECT_DOUBLE_EQ(t.FinalSeconds(1), 2.0);
  EXPECT_DOUBLE_EQ(t.FinalSeconds(0), 4.0);
  const tir::v1::Measurement m = t.FinalMeasurement();
  EXPECT_DOUBLE_EQ(m.median_seconds(), 2.0);
  EXPECT_EQ(m.samples(), 10u);
  EXPECT_DOUBLE_EQ(m.min_seconds(), 0.5);
  EXPECT_DOUBLE_EQ(m.iqr_seconds(), 0.125);
}

TEST(SuccessiveHalving, ALoneSurvivorIsConfirmedAgainstTheDefault) {
  // Width 4, default 3: round 0 halves to {0, 1} (the default out); round 1
  // finds 1 wrong; the survivor 0 is confirmed against the default.
  TunerConfig c;
  c.width = 4;
  SuccessiveHalving t(4, 3, 100, c);
  std::vector<std::vector<int>> rounds;
  const int winner = TuneByRound(
      t, [](int round, int p) { return round == 1 && p == 1 ? -1.0 : 10.0 + p; }, &rounds);
  ASSERT_EQ(rounds.size(), 3u);
  EXPECT_THAT(rounds[2], ElementsAre(0, 3, 0, 3));
  EXPECT_EQ(winner, 0);
  EXPECT_DOUBLE_EQ(t.FinalSeconds(3), 13.0);
}

TEST(SuccessiveHalving, AFailedDefaultIsNotConfirmedAndHasNoTime) {
  TunerConfig c;
  c.width = 4;
  SuccessiveHalving t(4, 3, 100, c);
  std::vector<std::vector<int>> rounds;
  TuneByRound(t, [](int, int p) { return p == 3 ? -1.0 : 10.0 + p; }, &rounds);
  ASSERT_FALSE(rounds.empty());
  EXPECT_THAT(rounds.back(), ElementsAre(0, 1, 0, 1));
  EXPECT_EQ(t.winner(), 0);
  EXPECT_EQ(t.FinalSeconds(3), 0) << "a default that failed has no time to compare with";
}

}  // namespace
}  // namespace tir::tuning
