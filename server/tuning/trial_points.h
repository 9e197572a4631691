// The trial ledger as cost-model data points: every stored trial that
// passed verification and was timed, with the candidate and prediction it
// was measured for.

#ifndef TIR_SERVER_TUNING_TRIAL_POINTS_H_
#define TIR_SERVER_TUNING_TRIAL_POINTS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "compiler/planning/Calibration.h"
#include "server/ledger/ledger.h"

namespace tir::tuning {

absl::StatusOr<std::vector<planning::TrialPoint>> LoadTrialPoints(const ledger::Ledger &ledger);

}  // namespace tir::tuning

#endif  // TIR_SERVER_TUNING_TRIAL_POINTS_H_
