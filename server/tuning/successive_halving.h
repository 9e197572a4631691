// Tuning of one kernel: which candidates to measure, round by round.
//
// Algorithm:
//  1. round 0 measures the `width` best candidates by the cost model (the
//     default candidate always among them);
//  2. each later round keeps the better half (by median time) of the
//     candidates that passed the previous round and measures them again with
//     twice the repetitions and time budget (successive halving), until two
//     remain (or one: then step 3 confirms it against the default);
//  3. a confirming round measures the finalists and the default candidate
//     (unless it failed) interleaved (A B D A B D), so a drift of the machine
//     hits them alike; each one's confirmed time is the median of its
//     confirming runs' medians, and the winner has the lowest. The default
//     wins a tie: a tuned kernel is never reported slower than the default it
//     was measured against, and both times come from this one round.
// A candidate that fails (compile, fault, timeout, wrong) in any round is out
// for good, but for a timeout after a round it passed: it keeps its earlier
// time (a busy machine must not lose the kernel its best candidate), though
// the confirming round's candidates measured there are compared among
// themselves; only when none was do the earlier times decide. Every result is
// kept (trials). No candidate passing round 0 ends the kernel with
// NO_CORRECT_CANDIDATE.

#ifndef TIR_SERVER_TUNING_SUCCESSIVE_HALVING_H_
#define TIR_SERVER_TUNING_SUCCESSIVE_HALVING_H_

#include <map>
#include <string>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "server/tuning/search_strategy.h"
#include "tir/v1/worker_service.grpc.pb.h"

namespace tir::tuning {

struct TunerConfig {
  // Candidates measured in round 0, at most `max_space_fraction` of the
  // kernel's pruned space (at least two).
  int width = 8;
  double max_space_fraction = 0.10;
  // Round-0 repetitions and time budget; doubled each round.
  int min_runs = 5;
  double budget_seconds = 0.02;
  // Per-candidate deadline floor.
  double min_deadline_seconds = 10;
};

class SuccessiveHalving : public SearchStrategy {
 public:
  // `space` is the kernel's kept candidates in rank order (as many as the
  // work item carries), `default_position` the default candidate's position
  // in it, `space_size` the size of the whole pruned space.
  SuccessiveHalving(int candidates, int default_position, int space_size, TunerConfig config);

  std::optional<Round> Next() override;
  void Record(int number, const std::vector<tir::v1::CandidateResult> &results) override;

  bool done() const override { return done_; }
  // After done: the winner's position, or an error (NO_CORRECT_CANDIDATE).
  absl::Status outcome() const override { return outcome_; }
  int winner() const override { return winner_; }
  double Median(int position) const override;
  // After done: the time the winner was chosen on for `position`: its
  // confirmed time when the confirming round decided, its latest median when
  // only one candidate was left without one (0 for a candidate the decision
  // did not measure). FinalSeconds(winner()) <= FinalSeconds(default_position())
  // whenever the latter is not 0.
  double FinalSeconds(int position) const override;
  // After done: the winner's measurement in the round that decided; for a
  // confirmed winner its confirming runs merged: samples summed, the least
  // minimum, and the medians of the runs' medians and IQRs.
  tir::v1::Measurement FinalMeasurement() const override;
  // Whether a confirming round decided (false: one candidate was left).
  bool confirmed() const { return confirmed_; }
  int measured() const override { return static_cast<int>(measured_.size()); }
  int failed() const override { return static_cast<int>(failed_.size()); }
  int default_position() const override { return default_position_; }
  int planned() const override { return planned_; }
  int measurements() const override { return measurements_; }
  int round() const override { return round_; }

 private:
  TunerConfig config_;
  int default_position_;
  std::vector<int> alive_;          // still in the running, best first
  std::map<int, double> median_;    // latest passing median per position
  std::map<int, tir::v1::Measurement> latest_;  // latest passing measurement per position
  std::map<int, std::vector<tir::v1::Measurement>> confirm_;  // confirming-round measurements
  std::map<int, double> final_;     // after done: the times the winner was chosen on
  std::map<int, int> failed_;       // position -> verdict
  std::map<int, int> measured_;     // position -> times measured
  int round_ = 0;
  int planned_ = 0;
  int measurements_ = 0;
  std::vector<int> in_flight_;      // positions of the round being measured
  bool confirming_ = false;
  bool confirmed_ = false;
  bool done_ = false;
  int winner_ = -1;
  absl::Status outcome_ = absl::OkStatus();

  // Ends with the confirming round's `finalists` (passed candidates).
  void Decide(const std::vector<int> &finalists);
};

// The factory of SuccessiveHalving strategies under `config` (a request's
// width, when it gives one, replaces the configured one).
StrategyFactory SuccessiveHalvingFactory(TunerConfig config);

// The tuning policy string folded into cache keys (a request's width, when it
// gives one, replaces the configured one).
std::string TuningPolicy(TunerConfig config, int width = 0);

}  // namespace tir::tuning


#endif  // TIR_SERVER_TUNING_SUCCESSIVE_HALVING_H_
