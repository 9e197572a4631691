// The CUDA backend: candidates compiled by NVRTC (through the content-
// addressed compile cache) for the device's arch, run and timed by the CUDA
// runner in the child process that owns the device's context.

#ifndef TIR_WORKER_CUDA_CUDA_BACKEND_H_
#define TIR_WORKER_CUDA_CUDA_BACKEND_H_

#include <memory>

#include "compiler/nvrtc/compile_cache.h"
#include "worker/backend.h"
#include "worker/cuda/cuda_driver.h"

namespace tir::worker {

class CudaBackend : public Backend {
 public:
  // Loads the driver and describes device `device`. Errors:
  // FAILED_PRECONDITION / CUDA_DRIVER_UNAVAILABLE (no driver, stub driver, no
  // device), INVALID_ARGUMENT / NO_SUCH_DEVICE.
  static absl::StatusOr<std::unique_ptr<CudaBackend>> Create(int device, const std::string &work_dir);

  std::string name() const override { return "cuda"; }
  tir::v1::WorkerCapabilities Capabilities() const override { return capabilities_; }
  absl::StatusOr<CompiledCandidate> Compile(const tir::v1::CandidateWork &work, const std::string &arch) override;
  std::vector<std::string> RunnerFlags() const override;

 private:
  CudaBackend(int device, std::string work_dir, tir::v1::WorkerCapabilities caps);
  int device_;
  std::string work_dir_;
  tir::v1::WorkerCapabilities capabilities_;
  nvrtc::CompileCache cache_;
};

}  // namespace tir::worker

#endif  // TIR_WORKER_CUDA_CUDA_BACKEND_H_
