#include "server/coordinator/kernel_tuner.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"

namespace tir::coordinator {

KernelTuner::KernelTuner(int candidates, int default_position, int space_size, TunerConfig config)
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
}

std::optional<KernelTuner::Round> KernelTuner::Next() {
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
  r.positions = confirming_ ? std::vector<int>{alive_[0], alive_[1], alive_[0], alive_[1]} : alive_;
  in_flight_ = r.positions;
  return r;
}

double KernelTuner::Median(int position) const {
  auto it = median_.find(position);
  return it == median_.end() ? 0 : it->second;
}

void KernelTuner::Record(int number, const std::vector<tir::v1::CandidateResult> &results) {
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
    if (confirming_) confirm_[p].push_back(r.measurement().median_seconds());
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
  if (confirming_ || passed.size() == 1) {
    if (confirming_ && passed.size() == 2) {
      auto typical = [&](int p) {
        std::vector<double> v = confirm_[p];
        std::sort(v.begin(), v.end());
        return v.empty() ? median_[p] : v[(v.size() - 1) / 2];
      };
      if (typical(passed[1]) < typical(passed[0])) std::swap(passed[0], passed[1]);
    }
    done_ = true;
    winner_ = passed[0];
    return;
  }
  if (passed.size() == 2) {
    confirming_ = true;
    alive_ = passed;
    return;
  }
  passed.resize((passed.size() + 1) / 2);
  alive_ = passed;
}

}  // namespace tir::coordinator
