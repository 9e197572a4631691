#include "compiler/planning/Calibration.h"

#include <cmath>
#include <random>

#include "gtest/gtest.h"

namespace tir::planning {
namespace {

// Synthetic ledger: the analytic model over-predicts split reductions by 2x
// and under-predicts wide vectors; measurements carry 5% noise.
std::vector<TrialPoint> Ledger(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> strategy(0, 2), vecLog(0, 3), tprLog(5, 10);
  std::normal_distribution<double> noise(0, 0.05);
  std::vector<TrialPoint> out;
  for (int i = 0; i < n; ++i) {
    TrialPoint t;
    t.key = "job" + std::to_string(i) + "/0/" + std::to_string(i);
    t.arch = "sm_90a";
    t.kind = "reduction";
    t.params = {{"strategy", strategy(rng)}, {"vector_width", 1 << vecLog(rng)}, {"threads_per_row", 1 << tprLog(rng)},
                {"rows_per_block", 1}, {"split", 1}};
    t.inputs = {{"memory_seconds", 1e-5}, {"compute_seconds", 1e-6}, {"blocks", 64}, {"occupancy", 0.5}};
    t.predicted = 1e-5 * (1 + i % 7);
    const double truth = (t.params["strategy"] == 2 ? std::log(0.5) : 0.0) +
                         0.3 * std::log2(double(t.params["vector_width"])) / 3;
    t.measured = t.predicted * std::exp(truth + noise(rng));
    out.push_back(t);
  }
  return out;
}

TEST(CalibrationTest, LearnsTheModelsBiasAndCutsHeldOutError) {
  const Calibration c = Calibration::Fit(Ledger(200, 1));
  const Correction *fit = c.Find("sm_90a", "reduction");
  ASSERT_NE(fit, nullptr);
  EXPECT_GT(fit->held_out, 20);
  EXPECT_GT(fit->held_out_rms_before, 0.2);
  EXPECT_LT(fit->held_out_rms_after, 0.1) << c.ToText();
  EXPECT_EQ(c.Find("sm_80", "reduction"), nullptr);
  EXPECT_EQ(c.Find("sm_90a", "matmul"), nullptr);
}

TEST(CalibrationTest, TheFitIsReproducibleWhateverTheOrder) {
  std::vector<TrialPoint> a = Ledger(120, 7), b = a;
  std::reverse(b.begin(), b.end());
  const Calibration ca = Calibration::Fit(a), cb = Calibration::Fit(b);
  ASSERT_NE(ca.Find("sm_90a", "reduction"), nullptr);
  EXPECT_EQ(ca.Find("sm_90a", "reduction")->weights, cb.Find("sm_90a", "reduction")->weights);
  EXPECT_EQ(ca.ToText(), cb.ToText());
}

TEST(CalibrationTest, TooFewTrialsLeaveTheModelAlone) {
  const Calibration c = Calibration::Fit(Ledger(6, 3));
  EXPECT_TRUE(c.empty());
  EXPECT_NE(c.ToText().find("none"), std::string::npos);
}

}  // namespace
}  // namespace tir::planning
