// The models the fleet's framework processes run, and their cache keys.
//
// A model is a set of graphs; a graph compiled for an arch is one cache key
// (tir keys a graph by its content and target), planned into a few kernels,
// each tuned separately. Processes pick models by a Zipf popularity; a
// released model (`AddModel`) joins with a fixed share of process starts.

#ifndef TIR_BENCH_FLEET_CATALOG_H_
#define TIR_BENCH_FLEET_CATALOG_H_

#include <cstdint>
#include <random>
#include <vector>

#include "bench/fleet/calibration.h"

namespace tir::fleet {

struct CacheKey {
  int model = 0;
  int arch = 0;
  int kernels = 0;
  int ops = 0;
  uint64_t hash = 0;  // what rendezvous hashing places
};

class Catalog {
 public:
  Catalog(const FleetShape &shape, uint64_t seed);

  // Adds a model drawn like the others; returns its index.
  int AddModel(std::mt19937_64 &rng);

  int models() const { return static_cast<int>(graphs_.size()); }
  int archs() const { return archs_; }
  int graphs(int model) const { return graphs_[model]; }
  // The keys of `model` for `arch`: first_key(model, arch) + 0..graphs-1.
  int first_key(int model, int arch) const { return first_key_[model] + arch * graphs_[model]; }
  const std::vector<CacheKey> &keys() const { return keys_; }
  // Draws a model by the Zipf popularity of the first `shape.models`.
  int SampleZipf(std::mt19937_64 &rng) const;

 private:
  const FleetShape &shape_;
  int archs_;
  std::vector<int> graphs_;
  std::vector<int> first_key_;
  std::vector<CacheKey> keys_;
  std::vector<double> zipf_cdf_;
};

}  // namespace tir::fleet

#endif  // TIR_BENCH_FLEET_CATALOG_H_
