// Corrections to the analytic cost model learnt from measurements.
//
// Every stored trial (a candidate measured on a worker: its parameters, the
// model's inputs and prediction, the measured median) is a data point. Per
// arch and kernel kind, a ridge regression fits
//     log(measured / predicted) ~ w . features(candidate)
// over a few features of what the code does (share of memory time, blocks,
// occupancy, threads, and the kind's own tile choices). Trials are split
// deterministically by a hash of their key: one in five is held out, the
// fit uses the rest, and the held-out root-mean-square log error before and
// after the correction is reported. The fit depends only on the trials (in
// key order), so it is reproducible.

#ifndef TIR_COMPILER_PLANNING_CALIBRATION_H_
#define TIR_COMPILER_PLANNING_CALIBRATION_H_

#include <map>
#include <string>
#include <vector>

#include "compiler/planning/CostModel.h"

namespace tir::planning {

struct TrialPoint {
  std::string key;  // the ledger key: decides held-out or not
  std::string arch;
  std::string kind;  // "pointwise", "reduction", "matmul"
  std::map<std::string, int64_t> params;
  std::map<std::string, double> inputs;  // the model's inputs for it
  double predicted = 0, measured = 0;    // seconds
};

struct Correction {
  std::vector<double> weights;  // per feature (FeatureNames(kind))
  int trained = 0, held_out = 0;
  double held_out_rms_before = 0, held_out_rms_after = 0;  // natural-log error
};

// Feature names for a kernel kind, in order.
std::vector<std::string> FeatureNames(const std::string &kind);
std::vector<double> Features(const std::string &kind, const std::map<std::string, int64_t> &params,
                             const std::map<std::string, double> &inputs);

class Calibration {
 public:
  // Fits every (arch, kind) with at least `min_trials` training points.
  static Calibration Fit(std::vector<TrialPoint> trials, int min_trials = 8);
  const Correction *Find(const std::string &arch, const std::string &kind) const;
  bool empty() const { return fits_.empty(); }
  int trials() const { return trials_; }
  // One paragraph per fit: data points, weights, held-out error.
  std::string ToText() const;

 private:
  std::map<std::pair<std::string, std::string>, Correction> fits_;
  int trials_ = 0;
};

// The analytic model times exp(w . features) where a fit exists for the
// arch and kind ("correction" among the inputs says by how much).
class CalibratedCostModel : public CostModel {
 public:
  CalibratedCostModel(const CostModel &base, const Calibration &calibration) : base_(base), calibration_(calibration) {}
  Prediction Predict(const KernelFacts &facts, const TileCandidate &candidate, const target::ArchInfo &arch,
                     bool explain = true) const override;

 private:
  const CostModel &base_;
  const Calibration &calibration_;
};

}  // namespace tir::planning

#endif  // TIR_COMPILER_PLANNING_CALIBRATION_H_
