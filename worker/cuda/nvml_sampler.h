// SM clock and temperature of a GPU from NVML (libnvidia-ml, which ships
// with the driver), loaded at run time, so each candidate's samples carry the
// conditions they were taken under and throttled ones can be spotted.

#ifndef TIR_WORKER_CUDA_NVML_SAMPLER_H_
#define TIR_WORKER_CUDA_NVML_SAMPLER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace tir::cuda {

class NvmlSampler {
 public:
  // The device at PCI bus id `pci_bus_id` (from the CUDA driver, so both
  // APIs mean the same GPU). Errors: FAILED_PRECONDITION / NVML_UNAVAILABLE.
  static absl::StatusOr<std::unique_ptr<NvmlSampler>> Open(const std::string &pci_bus_id);

  struct Sample {
    unsigned sm_clock_mhz = 0;
    unsigned temperature_c = 0;
  };
  // Current values (0 for what NVML does not report).
  Sample Now() const;

 private:
  NvmlSampler() = default;
  void *device_ = nullptr;
};

}  // namespace tir::cuda

#endif  // TIR_WORKER_CUDA_NVML_SAMPLER_H_
