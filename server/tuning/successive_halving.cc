#include "server/tuning/successive_halving.h"

#include "absl/strings/str_format.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"

namespace tir::tuning {

SuccessiveHalving::SuccessiveHalving(int candidates, int default_position, int space_size, TunerConfig config)
    : config_(config), default_position_(default_position) {
  // At most max_space_fraction of the pruned space (at least two), at most `width`.
  const int cap = std::max(2, static_cast<int>(space_size * config.max_space_fraction));
  const int width = std::max(1, std::min({config.width, cap, candidates}));
  for (int p = 0; p < width; ++p) alive_.push_back(p);
  if (default_position >= 0 && default_position < candidates &&
      std::find(alive_.begin(), alive_.end(), default_position) == alive_.end()) {
    alive_.back() = default_position;
  }
  planned_ = static_cast<int>(alive_.size());
  if (std::find(alive_.begin(), alive_.end(), default_position) == alive_.end()) default_position_ = -1;
}

std::optional<SuccessiveHalving::Round> SuccessiveHalving::Next() {
  if (done_ || !in_flight_.empty()) return std::nullopt;
  Round r;
  r.number = round_;
  const double scale = std::pow(2.0, round_);
  r.policy.set_min_runs(static_cast<uint32_t>(config_.min_runs * scale));
  const double budget = config_.budget_seconds * scale;
  r.policy.mutable_time_budget()->set_seconds(static_cast<int64_t>(budget));
  r.policy.mutable_time_budget()->set_nanos(static_cast<int32_t>((budget - std::floor(budget)) * 1e9));
  r.policy.mutable_min_deadline()->set_seconds(static_cast<int64_t>(config_.min_deadline_seconds));
  r.policy.set_seed(1 + round_);
  r.policy.set_verify(true);
  r.positions = alive_;
  if (confirming_) r.positions.insert(r.positions.end(), alive_.begin(), alive_.end());  // A B D A B D
  in_flight_ = r.positions;
  return r;
}

namespace {

// Median of `v` (the mean of the middle two for an even count; 0 if empty).
double MedianOf(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

}  // namespace

double SuccessiveHalving::Median(int position) const {
  auto it = median_.find(position);
  return it == median_.end() ? 0 : it->second;
}

double SuccessiveHalving::FinalSeconds(int position) const {
  auto it = final_.find(position);
  return it == final_.end() ? 0 : it->second;
}

tir::v1::Measurement SuccessiveHalving::FinalMeasurement() const {
  auto runs = confirm_.find(winner_);
  if (runs == confirm_.end() || runs->second.empty()) {
    auto latest = latest_.find(winner_);
    return latest == latest_.end() ? tir::v1::Measurement() : latest->second;
  }
  tir::v1::Measurement m = runs->second.back();
  std::vector<double> medians, iqrs;
  uint32_t samples = 0;
  double least = runs->second.front().min_seconds();
  for (const tir::v1::Measurement &r : runs->second) {
    medians.push_back(r.median_seconds());
    iqrs.push_back(r.iqr_seconds());
    samples += r.samples();
    least = std::min(least, r.min_seconds());
  }
  m.set_median_seconds(MedianOf(medians));
  m.set_iqr_seconds(MedianOf(iqrs));
  m.set_samples(samples);
  m.set_min_seconds(least);
  return m;
}

void SuccessiveHalving::Decide(const std::vector<int> &finalists) {
  done_ = true;
  // The candidates measured in the confirming round are compared on their
  // confirmed times; only when none was (all timed out there) do the earlier
  // medians decide.
  for (int p : finalists) {
    if (!confirm_[p].empty()) {
      std::vector<double> medians;
      for (const tir::v1::Measurement &m : confirm_[p]) medians.push_back(m.median_seconds());
      final_[p] = MedianOf(medians);
    }
  }
  confirmed_ = !final_.empty();
  if (!confirmed_) {
    for (int p : finalists) final_[p] = median_[p];
  }
  winner_ = -1;
  for (int p : finalists) {  // a tie keeps the earlier one in `finalists`
    if (final_.count(p) && (winner_ < 0 || final_[p] < final_[winner_])) winner_ = p;
  }
  // The default wins unless a finalist was faster in this same round.
  if (final_.count(default_position_) && final_[default_position_] <= final_[winner_]) winner_ = default_position_;
}

void SuccessiveHalving::Record(int number, const std::vector<tir::v1::CandidateResult> &results) {
  if (done_ || number != round_ || in_flight_.empty()) return;  // a stale or repeated round
  const std::vector<int> positions = std::move(in_flight_);
  in_flight_.clear();
  for (size_t i = 0; i < positions.size() && i < results.size(); ++i) {
    const int p = positions[i];
    const tir::v1::CandidateResult &r = results[i];
    ++measured_[p];
    ++measurements_;
    // A candidate that passed an earlier round and only times out now (the
    // machine was busy, the run longer) keeps its earlier time; a fault or a
    // wrong result puts it out whenever it comes.
    if (r.verification().verdict() == tir::v1::VERDICT_TIMEOUT && median_.count(p)) continue;
    if (r.verification().verdict() != tir::v1::VERDICT_PASSED || r.measurement().samples() == 0) {
      failed_[p] = r.verification().verdict();
      continue;
    }
    median_[p] = r.measurement().median_seconds();
    latest_[p] = r.measurement();
    if (confirming_) confirm_[p].push_back(r.measurement());
  }
  // Results missing from a short report count as failures.
  for (size_t i = results.size(); i < positions.size(); ++i) failed_[positions[i]] = tir::v1::VERDICT_FAULT;
  std::vector<int> passed;
  for (int p : alive_) {
    if (!failed_.count(p)) passed.push_back(p);
  }
  std::stable_sort(passed.begin(), passed.end(), [&](int a, int b) { return median_[a] < median_[b]; });
  ++round_;
  if (passed.empty()) {
    done_ = true;
    outcome_ = MakeError(absl::StatusCode::kFailedPrecondition, "NO_CORRECT_CANDIDATE",
                         absl::StrCat("none of the ", alive_.size(), " candidates measured passed verification"));
    return;
  }
  if (confirming_) {
    Decide(passed);
    return;
  }
  if (passed.size() <= 2) {
    // The finalists and the default (unless it failed), in one round.
    std::vector<int> finalists = passed;
    if (default_position_ >= 0 && !failed_.count(default_position_) &&
        std::find(finalists.begin(), finalists.end(), default_position_) == finalists.end()) {
      finalists.push_back(default_position_);
    }
    if (finalists.size() == 1) {  // nothing to confirm against
      done_ = true;
      winner_ = finalists[0];
      final_[winner_] = median_[winner_];
      return;
    }
    confirming_ = true;
    alive_ = finalists;
    return;
  }
  passed.resize((passed.size() + 1) / 2);
  alive_ = passed;
}

StrategyFactory SuccessiveHalvingFactory(TunerConfig config) {
  return [config](int candidates, int default_position, int space_size, int width) {
    TunerConfig c = config;
    if (width > 0) c.width = width;
    return std::make_unique<SuccessiveHalving>(candidates, default_position, space_size, c);
  };
}

std::string TuningPolicy(TunerConfig c, int width) {
  if (width > 0) c.width = width;
  return absl::StrFormat("halving-v3:w%d:f%g:r%d:b%g", c.width, c.max_space_fraction, c.min_runs, c.budget_seconds);
}

}  // namespace tir::tuning
