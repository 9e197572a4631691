// How one kernel's candidates are searched: which to measure, round by
// round, and which wins. The tuning job (tuning_jobs.h) drives a strategy
// with the results its workers report; a strategy knows nothing of workers,
// the store or locks, so it is tested in memory with made-up results.
// SuccessiveHalving (successive_halving.h) is the one in use.

#ifndef TIR_SERVER_TUNING_SEARCH_STRATEGY_H_
#define TIR_SERVER_TUNING_SEARCH_STRATEGY_H_

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "tir/v1/worker_service.pb.h"

namespace tir::tuning {

class SearchStrategy {
 public:
  virtual ~SearchStrategy() = default;

  // Positions (in the kernel's candidate list) to measure next, and how.
  struct Round {
    int number = 0;
    std::vector<int> positions;
    tir::v1::MeasurementPolicy policy;
  };
  // The next round; nullopt while one is being measured or when done.
  virtual std::optional<Round> Next() = 0;
  // Results of round `number`, one per position in order.
  virtual void Record(int number, const std::vector<tir::v1::CandidateResult> &results) = 0;

  virtual bool done() const = 0;
  // After done: OK with a winner, or why not (NO_CORRECT_CANDIDATE).
  virtual absl::Status outcome() const = 0;
  virtual int winner() const = 0;
  virtual int default_position() const = 0;
  // Median seconds of `position`'s latest passing measurement (0 if none).
  virtual double Median(int position) const = 0;
  // After done: the time `position` was chosen (or beaten) on, 0 when the
  // decision did not measure it; never more for the winner than for the
  // default when both are measured.
  virtual double FinalSeconds(int position) const = 0;
  // After done: the winner's measurement that decided.
  virtual tir::v1::Measurement FinalMeasurement() const = 0;

  // Progress: candidates measured and failed, chosen for the first round,
  // results recorded, the round now.
  virtual int measured() const = 0;
  virtual int failed() const = 0;
  virtual int planned() const = 0;
  virtual int measurements() const = 0;
  virtual int round() const = 0;
};

// Makes a kernel's strategy: `candidates` kept in rank order, the default's
// position among them, the size of the whole pruned space, the width the
// request asked (0: the configured one).
using StrategyFactory =
    std::function<std::unique_ptr<SearchStrategy>(int candidates, int default_position, int space_size, int width)>;

}  // namespace tir::tuning

#endif  // TIR_SERVER_TUNING_SEARCH_STRATEGY_H_
