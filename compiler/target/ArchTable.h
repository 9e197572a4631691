// What tir knows about each target architecture, for pruning tile candidates
// and for the cost model. Figures are per representative part (named in
// ArchTable.cpp with their sources); the cost model uses them to rank
// candidates, and measured results calibrate it.

#ifndef TIR_COMPILER_TARGET_ARCHTABLE_H_
#define TIR_COMPILER_TARGET_ARCHTABLE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tir::target {

struct ArchInfo {
  std::string name;                 // "sm_90a", "host"
  std::string part;                 // the representative part the figures describe
  bool is_gpu = true;
  int sm_count = 0;                 // SMs (CPU cores for host)
  int max_threads_per_sm = 0;
  int max_threads_per_block = 0;
  int max_blocks_per_sm = 0;
  int registers_per_sm = 0;         // 32-bit registers
  int max_registers_per_thread = 0;
  int shared_bytes_per_sm = 0;
  int max_shared_bytes_per_block = 0;  // with the opt-in attribute
  int l2_bytes = 0;
  double dram_gbps = 0;             // DRAM bandwidth, GB/s
  double fp32_tflops = 0;           // CUDA-core FP32 (FMA = 2 flops)
  double mma_bf16_tflops = 0;       // dense bf16/f16 tensor-core rate reachable with mma.sync
  double mma_tf32_tflops = 0;       // dense tf32 with mma.sync
  double launch_overhead_us = 0;    // per kernel launch, as seen by a stream of launches
  bool has_cp_async = true;         // sm_80+
  // wgmma, TMA and setmaxnreg (sm_90a): the Hopper matmul form, and the
  // dense bf16/f16 rate it can reach.
  bool has_wgmma = false;
  double wgmma_bf16_tflops = 0;
  // On-chip bytes a row-resident reduction may keep per block (registers +
  // shared memory it can use without collapsing occupancy).
  int row_budget_bytes = 0;
};

// The arch named `name` ("sm_80", "sm_86", "sm_89", "sm_90", "sm_90a",
// "sm_100", "sm_100a", "sm_120", "sm_120a", "host"); INVALID_ARGUMENT with
// reason UNKNOWN_ARCH otherwise.
absl::StatusOr<ArchInfo> LookupArch(absl::string_view name);

// Every arch in the table.
const std::vector<ArchInfo> &AllArchs();

}  // namespace tir::target

#endif  // TIR_COMPILER_TARGET_ARCHTABLE_H_
