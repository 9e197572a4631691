// What the candidate generator and the cost model need to know about a kernel.

#ifndef TIR_COMPILER_PLANNING_KERNELFACTS_H_
#define TIR_COMPILER_PLANNING_KERNELFACTS_H_

#include <cstdint>
#include <vector>

#include "compiler/planning/Partition.h"
#include "compiler/planning/TileRules.h"
#include "llvm/ADT/DenseMap.h"

namespace tir::planning {

// Extent assumed for a dynamic dimension when no shape hint is given.
inline constexpr int64_t kAssumedDynamicExtent = 1024;

struct KernelFacts {
  IterationSpace space;                  // dynamic extents replaced by kAssumedDynamicExtent
  double bytes_in = 0;                   // bytes read once (each input at its own size; a gather's data: the rows it picks)
  double bytes_out = 0;                  // bytes written
  double flops_per_point = 0;            // arithmetic per point of the parallel/row domain
  int element_bytes = 4;                 // widest element in the main domain (registers, compute)
  // Widest element that moves through global memory in runs: the kernel's
  // inputs and outputs along their contiguous dim (bf16 tensors computed in
  // f32: 2). Vector runs are limited to, and aim at, 16 bytes of it.
  int io_bytes = 4;
  int operand_bytes = 4;                 // matmul: A/B element size
  bool tensor_core = false;              // matmul on bf16/f16 (mma.sync)
  bool tf32 = false;                     // f32 matmul on tensor cores (tf32); not offered yet
  int64_t innermost = 1;                 // innermost extent of the iteration space
  // Largest vector width (elements) every input/output's contiguous dimension allows.
  int max_vector = 1;
  int64_t points = 1;                    // points of the full iteration domain
  int live_values = 1;                   // values alive per point (register pressure)
  // Matmul: A and B are kernel inputs (or conversions of them) the
  // cp.async pipeline can copy; otherwise tiles are staged element by
  // element and `stages` means nothing.
  bool matmul_pipelined = false;
  bool matmul_f32 = false;               // A and B are f32 (tf32 can apply)
  int matmul_acc_bytes = 4;              // CUDA-core accumulator: f32 4, f64 and integers 8
  // Matmul: element bytes of the one rank-2 bf16/f16/f32 output, indexed
  // (M, N) with no batch, that the Hopper form can store through shared
  // memory by TMA (tma_store); 0 when there is none.
  int tma_store_bytes = 0;
  // Reductions: what decides which strategies can be generated.
  int reductions = 0;                    // reduce ops (passes over a row)
  int online = 0;                        // of them, max-and-sum pairs computed in one pass (each counted once)
  bool ordered_reduction = false;        // a reduce_ud: one thread a row, in order
  bool row_outputs = false;              // something is stored per element of the row
  bool static_row = true;                // every reduced extent is static
  bool column = false;                   // the last dim is kept: threads along it
  int row_inputs = 0;                    // kernel inputs read along the row
  int64_t innermost_reduced = 1;         // extent of the innermost reduced dim
  // Passes over a row when nothing stays on chip.
  int RowPasses() const { return reductions - online + (row_outputs ? 1 : 0); }
  // One reduction (or online pair) of whole rows and nothing per element:
  // split across blocks.
  bool Splittable() const { return reductions - online == 1 && !ordered_reduction && !row_outputs && !column; }
};

// Every value's shape at the sizes a dynamic graph is tuned at (-1: open).
using ValueShapeMap = llvm::DenseMap<mlir::Value, std::vector<int64_t>>;

// `shapes`, when given, supply the dynamic extents (else
// kAssumedDynamicExtent): the iteration space's from the kernel's root
// value (a matmul's operands, a reduction's input, a pointwise kernel's
// output) and the bytes moved from its inputs' and outputs' shapes. What
// decides which candidates are valid for any size (static_row, max_vector)
// still reads the types.
KernelFacts ComputeFacts(const Kernel &kernel, const ValueShapeMap *shapes = nullptr);


}  // namespace tir::planning

#endif  // TIR_COMPILER_PLANNING_KERNELFACTS_H_
