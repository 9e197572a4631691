#include "compiler/target/ArchTable.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/support/status.h"

namespace tir::target {
namespace {

// Limits per compute capability: CUDA C++ Programming Guide, "Technical
// Specifications per Compute Capability" (threads, blocks, registers and
// shared memory per SM and per block). Throughput and bandwidth: the vendor
// datasheet of the part named. mma.sync rates: the dense tensor-core peak
// for sm_80/86/89/120 (mma.sync is the native path there); for sm_90 and
// sm_100 the peak needs wgmma/tcgen05, and mma.sync reaches about two thirds
// of it, which is the figure used (CUTLASS's published sm_80-style kernels on
// H100 sit near that level).
std::vector<ArchInfo> MakeTable() {
  std::vector<ArchInfo> t;
  ArchInfo a100;  // NVIDIA A100 SXM4 80GB datasheet: 2039 GB/s, 312 TF bf16, 19.5 TF fp32, 156 TF tf32.
  a100.name = "sm_80";
  a100.part = "A100 SXM4 80GB";
  a100.sm_count = 108;
  a100.max_threads_per_sm = 2048;
  a100.max_threads_per_block = 1024;
  a100.max_blocks_per_sm = 32;
  a100.registers_per_sm = 65536;
  a100.max_registers_per_thread = 255;
  a100.shared_bytes_per_sm = 167936;          // 164 KB
  a100.max_shared_bytes_per_block = 166912;   // 163 KB opt-in
  a100.l2_bytes = 40 << 20;
  a100.dram_gbps = 2039;
  a100.fp32_tflops = 19.5;
  a100.mma_bf16_tflops = 312;
  a100.mma_tf32_tflops = 156;
  a100.launch_overhead_us = 3.0;
  a100.row_budget_bytes = 64 << 10;
  t.push_back(a100);

  ArchInfo a10 = a100;  // NVIDIA A10 datasheet: 72 SMs, 600 GB/s, 125 TF bf16, 31.2 TF fp32.
  a10.name = "sm_86";
  a10.part = "A10";
  a10.sm_count = 72;
  a10.max_threads_per_sm = 1536;
  a10.max_blocks_per_sm = 16;
  a10.shared_bytes_per_sm = 102400;           // 100 KB
  a10.max_shared_bytes_per_block = 101376;    // 99 KB opt-in
  a10.l2_bytes = 6 << 20;
  a10.dram_gbps = 600;
  a10.fp32_tflops = 31.2;
  a10.mma_bf16_tflops = 125;
  a10.mma_tf32_tflops = 62.5;
  a10.row_budget_bytes = 48 << 10;
  t.push_back(a10);

  ArchInfo l40s = a10;  // NVIDIA L40S datasheet: 142 SMs, 864 GB/s, 362 TF bf16, 91.6 TF fp32, 48 MB L2.
  l40s.name = "sm_89";
  l40s.part = "L40S";
  l40s.sm_count = 142;
  l40s.max_blocks_per_sm = 24;
  l40s.l2_bytes = 48 << 20;
  l40s.dram_gbps = 864;
  l40s.fp32_tflops = 91.6;
  l40s.mma_bf16_tflops = 362;
  l40s.mma_tf32_tflops = 183;
  t.push_back(l40s);

  ArchInfo h100 = a100;  // NVIDIA H100 SXM5 datasheet: 132 SMs, 3350 GB/s, 989 TF bf16 dense, 67 TF fp32, 50 MB L2.
  h100.name = "sm_90";
  h100.part = "H100 SXM5 (an H200 has the same SMs with 4800 GB/s)";
  h100.sm_count = 132;
  h100.shared_bytes_per_sm = 233472;          // 228 KB
  h100.max_shared_bytes_per_block = 232448;   // 227 KB opt-in
  h100.l2_bytes = 50 << 20;
  h100.dram_gbps = 3350;
  h100.fp32_tflops = 67;
  h100.mma_bf16_tflops = 660;                 // ~2/3 of 989 with mma.sync
  h100.mma_tf32_tflops = 330;
  h100.launch_overhead_us = 2.5;
  h100.row_budget_bytes = 96 << 10;
  t.push_back(h100);
  ArchInfo h100a = h100;
  h100a.name = "sm_90a";
  h100a.has_wgmma = true;
  h100a.wgmma_bf16_tflops = 989;              // the datasheet's dense rate
  t.push_back(h100a);

  ArchInfo b200 = h100;  // NVIDIA B200 (HGX B200 datasheet): 148 SMs, 8000 GB/s, 2250 TF bf16 dense, 80 TF fp32.
  b200.name = "sm_100";
  b200.part = "B200";
  b200.sm_count = 148;
  b200.l2_bytes = 126 << 20;
  b200.dram_gbps = 8000;
  b200.fp32_tflops = 80;
  b200.mma_bf16_tflops = 1500;                // ~2/3 of 2250 with mma.sync
  b200.mma_tf32_tflops = 750;
  t.push_back(b200);
  ArchInfo b200a = b200;
  b200a.name = "sm_100a";
  t.push_back(b200a);

  ArchInfo rtx5090 = a10;  // GeForce RTX 5090: 170 SMs, 1792 GB/s, 104.8 TF fp32, 209.5 TF fp16/bf16 dense (fp16 acc).
  rtx5090.name = "sm_120";
  rtx5090.part = "GeForce RTX 5090";
  rtx5090.sm_count = 170;
  rtx5090.max_blocks_per_sm = 32;
  rtx5090.shared_bytes_per_sm = 131072;       // 128 KB
  rtx5090.max_shared_bytes_per_block = 101376;
  rtx5090.l2_bytes = 96 << 20;
  rtx5090.dram_gbps = 1792;
  rtx5090.fp32_tflops = 104.8;
  rtx5090.mma_bf16_tflops = 104.8;            // GeForce: f32 accumulate runs at half the fp16-accumulate rate
  rtx5090.mma_tf32_tflops = 52.4;
  rtx5090.row_budget_bytes = 64 << 10;
  t.push_back(rtx5090);
  ArchInfo rtx5090a = rtx5090;
  rtx5090a.name = "sm_120a";
  t.push_back(rtx5090a);

  // The host backend: generated kernels built by the system compiler and run
  // on one CPU core per block. Figures for a current x86-64 server core
  // (AVX2 FMA at ~3 GHz: 2 x 8 lanes x 2 flops x 3e9 = 96 GFLOPS per core;
  // ~10 GB/s of DRAM bandwidth per core), for ranking only.
  ArchInfo host;
  host.name = "host";
  host.part = "x86-64 core";
  host.is_gpu = false;
  host.sm_count = 2;
  host.max_threads_per_sm = 1;
  host.max_threads_per_block = 1024;  // loop iterations per block; no hardware limit
  host.max_blocks_per_sm = 1;
  host.registers_per_sm = 1 << 30;
  host.max_registers_per_thread = 1 << 20;
  host.shared_bytes_per_sm = 1 << 20;         // L2-resident scratch
  host.max_shared_bytes_per_block = 1 << 20;
  host.l2_bytes = 1 << 20;
  host.dram_gbps = 10;
  host.fp32_tflops = 0.096;
  host.mma_bf16_tflops = 0.096;
  host.mma_tf32_tflops = 0.096;
  host.launch_overhead_us = 1.0;
  host.has_cp_async = false;
  host.row_budget_bytes = 1 << 20;
  t.push_back(host);
  return t;
}

}  // namespace

const std::vector<ArchInfo> &AllArchs() {
  static const auto *table = new std::vector<ArchInfo>(MakeTable());
  return *table;
}

absl::StatusOr<ArchInfo> LookupArch(absl::string_view name) {
  std::vector<std::string> names;
  for (const ArchInfo &a : AllArchs()) {
    if (a.name == name) return a;
    names.push_back(a.name);
  }
  return MakeError(absl::StatusCode::kInvalidArgument, "UNKNOWN_ARCH",
                   absl::StrCat("unknown target arch '", name, "'; expected one of ", absl::StrJoin(names, ", ")));
}

}  // namespace tir::target
