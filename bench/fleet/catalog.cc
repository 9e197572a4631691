#include "bench/fleet/catalog.h"

#include <algorithm>
#include <cmath>

namespace tir::fleet {

Catalog::Catalog(const FleetShape &shape, uint64_t seed)
    : shape_(shape), archs_(static_cast<int>(shape.arch_share.size())) {
  std::mt19937_64 rng(seed);
  for (int m = 0; m < shape.models; ++m) AddModel(rng);
  double total = 0;
  for (int m = 0; m < shape.models; ++m) {
    total += 1.0 / std::pow(m + 1.0, shape.zipf_s);
    zipf_cdf_.push_back(total);
  }
  for (double &c : zipf_cdf_) c /= total;
}

int Catalog::AddModel(std::mt19937_64 &rng) {
  int model = static_cast<int>(graphs_.size());
  std::uniform_int_distribution<int> graphs(shape_.graphs_min, shape_.graphs_max);
  std::uniform_int_distribution<int> kernels(shape_.kernels_min, shape_.kernels_max);
  std::uniform_int_distribution<int> ops(shape_.ops_min, shape_.ops_max);
  int g = graphs(rng);
  graphs_.push_back(g);
  first_key_.push_back(static_cast<int>(keys_.size()));
  // The same graph has the same kernels on every arch; its key differs.
  std::vector<int> kernel_counts(g), op_counts(g);
  for (int i = 0; i < g; ++i) {
    kernel_counts[i] = kernels(rng);
    op_counts[i] = ops(rng);
  }
  for (int a = 0; a < archs_; ++a) {
    for (int i = 0; i < g; ++i) {
      keys_.push_back(CacheKey{model, a, kernel_counts[i], op_counts[i], rng()});
    }
  }
  return model;
}

int Catalog::SampleZipf(std::mt19937_64 &rng) const {
  double u = std::uniform_real_distribution<double>(0, 1)(rng);
  auto it = std::lower_bound(zipf_cdf_.begin(), zipf_cdf_.end(), u);
  return std::min<int>(static_cast<int>(it - zipf_cdf_.begin()), shape_.models - 1);
}

}  // namespace tir::fleet
