// Predicted kernel time per candidate. A separate, replaceable component:
// the planner ranks with whatever CostModel it is given, and every prediction
// carries the inputs it was computed from, so measured times can check and
// calibrate it later.

#ifndef TIR_COMPILER_PLANNING_COSTMODEL_H_
#define TIR_COMPILER_PLANNING_COSTMODEL_H_

#include <map>
#include <string>

#include "compiler/planning/Candidates.h"

namespace tir::planning {

struct Prediction {
  double seconds = 0;
  std::map<std::string, double> inputs;  // bytes, flops, blocks, waves, ...
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  // `explain` fills Prediction::inputs; ranking alone does not need them.
  virtual Prediction Predict(const KernelFacts &facts, const TileCandidate &candidate,
                             const target::ArchInfo &arch, bool explain = true) const = 0;
};

// The analytic model:
//   time = launch overhead
//        + max(DRAM bytes / achieved bandwidth, flops x edge waste / achieved rate)
//          x wave quantization.
// DRAM bytes count the re-reads a tiling causes (matmul: A once per column of
// N tiles and B once per row of M tiles, divided by an L2 reuse factor that
// grows with the rasterization group; split-K and split reductions add their
// partials). Achieved bandwidth falls with low occupancy; the tensor-core rate
// with small warp tiles and shallow pipelines. Edge waste is the padded work
// of partial tiles; quantization the last partial wave over the SMs.
class AnalyticCostModel : public CostModel {
 public:
  Prediction Predict(const KernelFacts &facts, const TileCandidate &candidate,
                     const target::ArchInfo &arch, bool explain = true) const override;
};

}  // namespace tir::planning

#endif  // TIR_COMPILER_PLANNING_COSTMODEL_H_
