// What the candidate generator and the cost model need to know about a kernel.

#ifndef TIR_COMPILER_PLANNING_KERNELFACTS_H_
#define TIR_COMPILER_PLANNING_KERNELFACTS_H_

#include <cstdint>
#include <vector>

#include "compiler/planning/Partition.h"

namespace tir::planning {

// Extent assumed for a dynamic dimension when no shape hint is given.
inline constexpr int64_t kAssumedDynamicExtent = 1024;

struct KernelFacts {
  IterationSpace space;                  // dynamic extents replaced by kAssumedDynamicExtent
  double bytes_in = 0;                   // bytes read once (each input at its own size)
  double bytes_out = 0;                  // bytes written
  double flops_per_point = 0;            // arithmetic per point of the parallel/row domain
  int element_bytes = 4;                 // widest element in the main domain
  int operand_bytes = 4;                 // matmul: A/B element size
  bool tensor_core = false;              // matmul on bf16/f16 (mma.sync)
  bool tf32 = false;                     // f32 matmul on tensor cores (tf32); not offered yet
  int64_t innermost = 1;                 // innermost extent of the iteration space
  // Largest vector width (elements) every input/output's contiguous dimension allows.
  int max_vector = 1;
  int64_t points = 1;                    // points of the full iteration domain
  int live_values = 1;                   // values alive per point (register pressure)
};

KernelFacts ComputeFacts(const Kernel &kernel);

}  // namespace tir::planning

#endif  // TIR_COMPILER_PLANNING_KERNELFACTS_H_
