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

// Instruction throughput of one SM, in thread-instructions per clock (the
// CUDA C++ Programming Guide's "Arithmetic Instructions" table for the
// compute capability; a warp instruction counts 32).
struct IssueRates {
  double dispatch = 128;     // every instruction: 4 schedulers x 1 warp-instruction a clock
  double fp32 = 128;         // FADD/FMUL/FFMA
  double fp16x2 = 128;       // HFMA2 and friends (two lanes each)
  double int32 = 64;         // IADD3/IMAD/LOP3/shifts/compares
  double mufu = 16;          // MUFU: ex2, lg2, rcp, rsqrt, sqrt, sin, cos, tanh
  double conversion = 16;    // F2F/F2I/I2F and conversions to and from 64-bit types
  double lsu = 32;           // global, local and shared loads and stores (one warp-instruction a clock)
  double shuffle = 32;       // SHFL
};

struct ArchInfo {
  std::string name;                 // "sm_90a", "host"
  std::string part;                 // the representative part the figures describe
  std::string device;               // the device key ("h100-sxm", "h200", ...); LookupDevice
  double clock_ghz = 0;             // SM boost clock
  double dram_latency_ns = 0;       // loaded DRAM latency a load in flight waits (Little's law)
  IssueRates issue;
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
  double l2_feed_gbps = 0;          // L2-to-SM bandwidth, all SMs together, GB/s (0: not modeled)
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

// The figures of one device of `arch`: `device` is a key of DeviceKeys() or
// a device name as the CUDA driver reports it ("NVIDIA H200", "NVIDIA H100
// 80GB HBM3", "NVIDIA A100-SXM4-80GB"); empty, the arch's representative
// part. INVALID_ARGUMENT (UNKNOWN_DEVICE) for a key that is not in the table
// or a device of another arch; a driver name the table does not know falls
// back to the arch's representative part (its figures are leads anyway).
absl::StatusOr<ArchInfo> LookupDevice(absl::string_view arch, absl::string_view device);

// The device keys, for messages and `--device` help.
std::vector<std::string> DeviceKeys();

}  // namespace tir::target

#endif  // TIR_COMPILER_TARGET_ARCHTABLE_H_
