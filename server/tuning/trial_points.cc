#include "server/tuning/trial_points.h"

#include "tir/v1/worker_service.pb.h"

namespace tir::tuning {

absl::StatusOr<std::vector<planning::TrialPoint>> LoadTrialPoints(const ledger::Ledger &ledger) {
  std::vector<planning::TrialPoint> out;
  absl::Status s = ledger.ScanTrials([&](const std::string &id, const tir::v1::CandidateResult &r) {
    if (r.verification().verdict() != tir::v1::VERDICT_PASSED || r.measurement().samples() == 0 ||
        !r.has_candidate() || r.arch().empty()) {
      return;
    }
    planning::TrialPoint t;
    t.key = id;
    t.arch = r.arch();
    t.kind = r.candidate().kernel_kind();
    t.params.insert(r.candidate().params().begin(), r.candidate().params().end());
    t.inputs.insert(r.candidate().model_inputs().begin(), r.candidate().model_inputs().end());
    // The analytic prediction: a trial planned with a calibrated model stored
    // the corrected one and the factor.
    t.predicted = r.candidate().predicted_seconds();
    if (auto c = t.inputs.find("correction"); c != t.inputs.end() && c->second > 0) t.predicted /= c->second;
    t.inputs.erase("correction");
    t.measured = r.measurement().median_seconds();
    out.push_back(std::move(t));
  });
  if (!s.ok()) return s;
  return out;
}

}  // namespace tir::tuning
