#include "compiler/target/ArchTable.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
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
  a100.device = "a100-sxm";
  a100.clock_ghz = 1.41;        // boost; 108 SMs x 64 FP32 lanes x 2 x 1.41 GHz = 19.5 TF
  a100.dram_latency_ns = 650;   // loaded HBM latency, a lead (microbenchmarks put idle latency near 500 ns)
  a100.issue.fp32 = 64;         // compute capability 8.0: 64 FP32 results a clock per SM
  a100.issue.fp16x2 = 128;
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
  a10.device = "a10";
  a10.clock_ghz = 1.695;        // 72 SMs x 128 x 2 x 1.695 GHz = 31.2 TF
  a10.dram_latency_ns = 600;    // GDDR6, a lead
  a10.issue.fp32 = 128;         // compute capability 8.6: 128 FP32 results a clock per SM
  a10.issue.fp16x2 = 128;
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
  l40s.device = "l40s";
  l40s.clock_ghz = 2.52;        // 142 SMs x 128 x 2 x 2.52 GHz = 91.6 TF
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
  h100.part = "H100 SXM5";
  h100.device = "h100-sxm";
  h100.clock_ghz = 1.98;        // 132 SMs x 128 x 2 x 1.98 GHz = 66.9 TF
  h100.dram_latency_ns = 650;   // loaded HBM3 latency, a lead
  h100.issue.fp32 = 128;        // compute capability 9.0
  h100.issue.fp16x2 = 256;
  h100.sm_count = 132;
  h100.shared_bytes_per_sm = 233472;          // 228 KB
  h100.max_shared_bytes_per_block = 232448;   // 227 KB opt-in
  h100.l2_bytes = 50 << 20;
  h100.dram_gbps = 3350;
  // A lead, not a measurement: the operand feed a 128 x 256 wgmma tile
  // needs at the dense peak is 11.6 TB/s, and published Hopper GEMMs gain
  // from halving it with cluster multicast, so the feed sits near that.
  h100.l2_feed_gbps = 12000;
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
  b200.l2_feed_gbps = 0;  // not modeled off Hopper
  b200.name = "sm_100";
  b200.part = "B200";
  b200.device = "b200";
  b200.clock_ghz = 1.965;
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
  rtx5090.device = "rtx5090";
  rtx5090.clock_ghz = 2.41;
  rtx5090.dram_latency_ns = 600;
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
  host.device = "x86-64";
  host.clock_ghz = 3.0;
  host.dram_latency_ns = 90;
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

// Devices beyond each arch's representative part: the same SMs with other
// memory, clocks or SM counts.
std::vector<ArchInfo> MakeDevices(const std::vector<ArchInfo> &archs) {
  std::vector<ArchInfo> d;
  auto of = [&](const char *arch) {
    for (const ArchInfo &a : archs) {
      if (a.name == arch) return a;
    }
    return ArchInfo{};
  };
  for (const char *arch : {"sm_90", "sm_90a"}) {
    // NVIDIA H200 SXM datasheet: 141 GB HBM3e at 4.8 TB/s; the H100's SMs,
    // clocks and tensor rates. (A device-to-device copy measured about
    // 4.3 TB/s of it on an H200 lent here, 2026-10-28.)
    ArchInfo h200 = of(arch);
    h200.device = "h200";
    h200.part = "H200 SXM";
    h200.dram_gbps = 4800;
    d.push_back(h200);
    // NVIDIA H100 PCIe datasheet: 114 SMs, 2.0 TB/s (80 GB HBM2e), 1.755 GHz
    // boost (51 TF fp32, 756 TF dense bf16).
    ArchInfo pcie = of(arch);
    pcie.device = "h100-pcie";
    pcie.part = "H100 PCIe";
    pcie.sm_count = 114;
    pcie.dram_gbps = 2000;
    pcie.clock_ghz = 1.755;
    pcie.fp32_tflops = 51;
    pcie.mma_bf16_tflops = 504;
    pcie.mma_tf32_tflops = 252;
    if (pcie.has_wgmma) pcie.wgmma_bf16_tflops = 756;
    d.push_back(pcie);
  }
  // NVIDIA A100 PCIe 80GB datasheet: 1935 GB/s; otherwise the SXM part's SMs.
  ArchInfo a100pcie = of("sm_80");
  a100pcie.device = "a100-pcie";
  a100pcie.part = "A100 PCIe 80GB";
  a100pcie.dram_gbps = 1935;
  d.push_back(a100pcie);
  return d;
}

// Driver device names ("NVIDIA H200", "NVIDIA H100 80GB HBM3", "NVIDIA
// H100 PCIe", "NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe") to keys;
// the first substring that matches wins.
std::string KeyOfDriverName(absl::string_view name) {
  static const std::pair<const char *, const char *> kNames[] = {
      {"H200", "h200"},       {"H100 PCIe", "h100-pcie"}, {"H100", "h100-sxm"},   {"A100-PCIE", "a100-pcie"},
      {"A100 80GB PCIe", "a100-pcie"}, {"A100 PCIe", "a100-pcie"}, {"A100", "a100-sxm"}, {"L40S", "l40s"},
      {"A10", "a10"},         {"B200", "b200"},           {"RTX 5090", "rtx5090"}};
  for (const auto &[part, key] : kNames) {
    if (absl::StrContains(name, part)) return key;
  }
  return "";
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

const std::vector<ArchInfo> &Devices() {
  static const auto *devices = new std::vector<ArchInfo>(MakeDevices(AllArchs()));
  return *devices;
}

std::vector<std::string> DeviceKeys() {
  std::vector<std::string> keys;
  for (const auto *list : {&AllArchs(), &Devices()}) {
    for (const ArchInfo &a : *list) {
      if (std::find(keys.begin(), keys.end(), a.device) == keys.end()) keys.push_back(a.device);
    }
  }
  return keys;
}

absl::StatusOr<ArchInfo> LookupDevice(absl::string_view arch, absl::string_view device) {
  TIR_ASSIGN_OR_RETURN(ArchInfo base, LookupArch(arch));
  if (device.empty() || device == base.device) return base;
  const std::vector<std::string> keys = DeviceKeys();
  const bool isKey = std::find(keys.begin(), keys.end(), std::string(device)) != keys.end();
  const std::string key = isKey ? std::string(device) : KeyOfDriverName(device);
  for (const ArchInfo &d : Devices()) {
    if (d.name == arch && d.device == key) return d;
  }
  if (isKey) {
    std::vector<std::string> ofArch = {base.device};
    for (const ArchInfo &d : Devices()) {
      if (d.name == arch) ofArch.push_back(d.device);
    }
    return MakeError(absl::StatusCode::kInvalidArgument, "UNKNOWN_DEVICE",
                     absl::StrCat("device '", device, "' is not a device of ", arch, "; expected one of ",
                                  absl::StrJoin(ofArch, ", ")));
  }
  return base;  // a name the table does not know: the arch's representative part
}

}  // namespace tir::target
