#include "server/tuning/time_floor.h"

#include <algorithm>
#include <cmath>

#include "compiler/target/ArchTable.h"

namespace tir::tuning {
namespace {

double Input(const tir::v1::Candidate &c, const char *name) {
  auto it = c.model_inputs().find(name);
  if (it == c.model_inputs().end() || !std::isfinite(it->second) || it->second < 0) return 0;
  return it->second;
}

// The fastest memory and math of any device of `arch` (its representative
// part and the other parts the table knows).
struct Peaks {
  double bytes_per_second = 0, flops_per_second = 0;
};

void Take(const target::ArchInfo &d, Peaks *p) {
  p->bytes_per_second = std::max(p->bytes_per_second, d.dram_gbps * 1e9);
  for (double tflops : {d.fp32_tflops, d.mma_bf16_tflops, d.mma_tf32_tflops, d.wgmma_bf16_tflops}) {
    p->flops_per_second = std::max(p->flops_per_second, tflops * 1e12);
  }
}

}  // namespace

double TimeFloorSeconds(const tir::v1::Candidate &candidate, const std::string &arch) {
  absl::StatusOr<target::ArchInfo> info = target::LookupArch(arch);
  if (!info.ok()) return 0;
  const double bytes = Input(candidate, "bytes"), flops = Input(candidate, "flops");
  if (!info->is_gpu) {
    return std::max({kHostMinKernelSeconds, bytes / kHostBytesPerSecond, flops / kHostFlopsPerSecond});
  }
  Peaks peaks;
  Take(*info, &peaks);
  for (const std::string &key : target::DeviceKeys()) {
    if (absl::StatusOr<target::ArchInfo> d = target::LookupDevice(arch, key); d.ok()) Take(*d, &peaks);
  }
  double floor = kGpuMinKernelSeconds;
  if (peaks.bytes_per_second > 0) floor = std::max(floor, bytes / (16 * peaks.bytes_per_second));
  if (peaks.flops_per_second > 0) floor = std::max(floor, flops / (4 * peaks.flops_per_second));
  return floor;
}

}  // namespace tir::tuning
