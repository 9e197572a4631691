#include "compiler/planning/Calibration.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tir::planning {
namespace {

double Log2(double v) { return std::log2(std::max(1.0, v)); }

int64_t P(const std::map<std::string, int64_t> &params, const char *name, int64_t fallback) {
  auto it = params.find(name);
  return it == params.end() ? fallback : it->second;
}
double In(const std::map<std::string, double> &inputs, const char *name) {
  auto it = inputs.find(name);
  return it == inputs.end() ? 0 : it->second;
}

// FNV-1a: the same split of trials on every machine.
uint64_t Fnv(const std::string &s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Solves (X'X + lambda I) w = X'y by Gaussian elimination with pivoting.
std::vector<double> Ridge(const std::vector<std::vector<double>> &x, const std::vector<double> &y, double lambda) {
  const size_t d = x.empty() ? 0 : x[0].size();
  std::vector<std::vector<double>> a(d, std::vector<double>(d + 1, 0));
  for (size_t r = 0; r < x.size(); ++r) {
    for (size_t i = 0; i < d; ++i) {
      for (size_t j = 0; j < d; ++j) a[i][j] += x[r][i] * x[r][j];
      a[i][d] += x[r][i] * y[r];
    }
  }
  for (size_t i = 0; i < d; ++i) a[i][i] += lambda;
  for (size_t c = 0; c < d; ++c) {
    size_t piv = c;
    for (size_t r = c + 1; r < d; ++r) {
      if (std::fabs(a[r][c]) > std::fabs(a[piv][c])) piv = r;
    }
    std::swap(a[c], a[piv]);
    if (std::fabs(a[c][c]) < 1e-12) continue;
    for (size_t r = 0; r < d; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (size_t j = c; j <= d; ++j) a[r][j] -= f * a[c][j];
    }
  }
  std::vector<double> w(d, 0);
  for (size_t i = 0; i < d; ++i) w[i] = std::fabs(a[i][i]) < 1e-12 ? 0 : a[i][d] / a[i][i];
  return w;
}

double Dot(const std::vector<double> &w, const std::vector<double> &x) {
  double s = 0;
  for (size_t i = 0; i < w.size() && i < x.size(); ++i) s += w[i] * x[i];
  return s;
}

}  // namespace

std::vector<std::string> FeatureNames(const std::string &kind) {
  std::vector<std::string> n = {"bias", "memory_share", "log2_blocks/10", "occupancy", "log2_threads/10"};
  if (kind == "reduction") {
    n.insert(n.end(), {"row_resident", "split", "log2_vector_width/3"});
  } else if (kind == "matmul") {
    n.insert(n.end(), {"log2_block_mn/16", "stages/5", "log2_block_k/6"});
  } else {
    n.insert(n.end(), {"log2_vector_width/4", "log2_elements_per_thread/4"});
  }
  return n;
}

std::vector<double> Features(const std::string &kind, const std::map<std::string, int64_t> &params,
                             const std::map<std::string, double> &inputs) {
  const double memory = In(inputs, "memory_seconds"), compute = In(inputs, "compute_seconds");
  double threads = static_cast<double>(P(params, "threads", 0));
  if (kind == "reduction") threads = double(P(params, "threads_per_row", 1)) * double(P(params, "rows_per_block", 1));
  if (kind == "matmul") threads = 32.0 * double(P(params, "warps", 1));
  std::vector<double> x = {1.0, memory + compute > 0 ? memory / (memory + compute) : 0.5,
                           Log2(In(inputs, "blocks")) / 10, In(inputs, "occupancy"), Log2(threads) / 10};
  if (kind == "reduction") {
    const int64_t s = P(params, "strategy", 1);
    x.insert(x.end(), {s == 0 ? 1.0 : 0.0, s == 2 ? 1.0 : 0.0, Log2(double(P(params, "vector_width", 1))) / 3});
  } else if (kind == "matmul") {
    x.insert(x.end(), {Log2(double(P(params, "block_m", 1)) * double(P(params, "block_n", 1))) / 16,
                       double(P(params, "stages", 1)) / 5, Log2(double(P(params, "block_k", 1))) / 6});
  } else {
    x.insert(x.end(), {Log2(double(P(params, "vector_width", 1))) / 4,
                       Log2(double(P(params, "elements_per_thread", 1))) / 4});
  }
  return x;
}

Calibration Calibration::Fit(std::vector<TrialPoint> trials, int min_trials) {
  Calibration c;
  std::sort(trials.begin(), trials.end(), [](const TrialPoint &a, const TrialPoint &b) { return a.key < b.key; });
  std::map<std::pair<std::string, std::string>, std::vector<const TrialPoint *>> groups;
  for (const TrialPoint &t : trials) {
    if (!(t.predicted > 0) || !(t.measured > 0)) continue;
    groups[{t.arch, t.kind}].push_back(&t);
    ++c.trials_;
  }
  for (const auto &[group, points] : groups) {
    std::vector<std::vector<double>> xt, xh;
    std::vector<double> yt, yh;
    for (const TrialPoint *t : points) {
      const bool held = Fnv(t->key) % 5 == 0;
      (held ? xh : xt).push_back(Features(group.second, t->params, t->inputs));
      (held ? yh : yt).push_back(std::log(t->measured / t->predicted));
    }
    if (static_cast<int>(yt.size()) < min_trials) continue;
    Correction fit;
    fit.weights = Ridge(xt, yt, 0.1);
    fit.trained = static_cast<int>(yt.size());
    fit.held_out = static_cast<int>(yh.size());
    double before = 0, after = 0;
    for (size_t i = 0; i < yh.size(); ++i) {
      before += yh[i] * yh[i];
      const double r = yh[i] - Dot(fit.weights, xh[i]);
      after += r * r;
    }
    if (!yh.empty()) {
      fit.held_out_rms_before = std::sqrt(before / yh.size());
      fit.held_out_rms_after = std::sqrt(after / yh.size());
    }
    c.fits_[group] = std::move(fit);
  }
  return c;
}

const Correction *Calibration::Find(const std::string &arch, const std::string &kind) const {
  auto it = fits_.find({arch, kind});
  return it == fits_.end() ? nullptr : &it->second;
}

std::string Calibration::ToText() const {
  if (fits_.empty()) {
    return absl::StrCat("cost model calibration: none (", trials_,
                        " measured trials; a fit needs 8 of one arch and kernel kind)\n");
  }
  std::string out = absl::StrCat("cost model calibration from ", trials_, " measured trials:\n");
  for (const auto &[group, fit] : fits_) {
    absl::StrAppendFormat(&out, "  %s %s: %d trials fit, %d held out", group.first, group.second, fit.trained,
                          fit.held_out);
    if (fit.held_out > 0) {
      absl::StrAppendFormat(&out, "; held-out error x%.2f -> x%.2f (geometric RMS)", std::exp(fit.held_out_rms_before),
                            std::exp(fit.held_out_rms_after));
    }
    out += "\n    log(measured/predicted) =";
    const std::vector<std::string> names = FeatureNames(group.second);
    for (size_t i = 0; i < fit.weights.size() && i < names.size(); ++i) {
      absl::StrAppendFormat(&out, " %+.3f*%s", fit.weights[i], names[i]);
    }
    out += "\n";
  }
  return out;
}

Prediction CalibratedCostModel::Predict(const KernelFacts &facts, const TileCandidate &candidate,
                                        const target::ArchInfo &arch, bool explain) const {
  const std::string kind = KernelKindName(facts.space.kind);
  const Correction *fit = calibration_.Find(arch.name, kind);
  if (fit == nullptr) return base_.Predict(facts, candidate, arch, explain);
  Prediction p = base_.Predict(facts, candidate, arch, /*explain=*/true);
  const double factor = std::exp(std::clamp(Dot(fit->weights, Features(kind, candidate.params, p.inputs)), -5.0, 5.0));
  p.seconds *= factor;
  p.inputs["correction"] = factor;
  if (!explain) p.inputs.clear();
  return p;
}

}  // namespace tir::planning
