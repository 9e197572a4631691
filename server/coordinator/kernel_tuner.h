// Tuning of one kernel: which candidates to measure, round by round.
//
// Algorithm:
//  1. round 0 measures the `width` best candidates by the cost model (the
//     default candidate always among them);
//  2. each later round keeps the better half (by median time) of the
//     candidates that passed the previous round and measures them again with
//     twice the repetitions and time budget (successive halving), until two
//     remain;
//  3. a confirming round measures the last two interleaved (A B A B), so a
//     drift of the machine hits both alike; the winner has the lower median
//     over its confirming samples.
// A candidate that fails (compile, fault, timeout, wrong) in any round is out
// for good, but for a timeout after a round it passed: it keeps its earlier
// time (a busy machine must not lose the kernel its best candidate). Every result is kept (trials). No candidate passing round 0 ends
// the kernel with NO_CORRECT_CANDIDATE.

#ifndef TIR_SERVER_COORDINATOR_KERNEL_TUNER_H_
#define TIR_SERVER_COORDINATOR_KERNEL_TUNER_H_

#include <map>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "tir/v1/worker_service.grpc.pb.h"

namespace tir::coordinator {

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

class KernelTuner {
 public:
  // `space` is the kernel's kept candidates in rank order (as many as the
  // work item carries), `default_position` the default candidate's position
  // in it, `space_size` the size of the whole pruned space.
  KernelTuner(int candidates, int default_position, int space_size, TunerConfig config);

  // Positions to measure in the next round (empty when done) and its policy.
  struct Round {
    int number = 0;
    std::vector<int> positions;
    tir::v1::MeasurementPolicy policy;
  };
  std::optional<Round> Next();
  // Results of round `number`, one per position in order.
  void Record(int number, const std::vector<tir::v1::CandidateResult> &results);

  bool done() const { return done_; }
  // After done: the winner's position, or an error (NO_CORRECT_CANDIDATE).
  absl::Status outcome() const { return outcome_; }
  int winner() const { return winner_; }
  // Median seconds of `position`'s latest passing measurement (0 if none).
  double Median(int position) const;
  int measured() const { return static_cast<int>(measured_.size()); }
  int failed() const { return static_cast<int>(failed_.size()); }
  int default_position() const { return default_position_; }
  // Candidates chosen for round 0.
  int planned() const { return planned_; }
  // Results recorded over all rounds, and the current round.
  int measurements() const { return measurements_; }
  int round() const { return round_; }

 private:
  TunerConfig config_;
  int default_position_;
  std::vector<int> alive_;          // still in the running, best first
  std::map<int, double> median_;    // latest passing median per position
  std::map<int, std::vector<double>> confirm_;  // confirming-round medians
  std::map<int, int> failed_;       // position -> verdict
  std::map<int, int> measured_;     // position -> times measured
  int round_ = 0;
  int planned_ = 0;
  int measurements_ = 0;
  std::vector<int> in_flight_;      // positions of the round being measured
  bool confirming_ = false;
  bool done_ = false;
  int winner_ = -1;
  absl::Status outcome_ = absl::OkStatus();
};

}  // namespace tir::coordinator

#endif  // TIR_SERVER_COORDINATOR_KERNEL_TUNER_H_
