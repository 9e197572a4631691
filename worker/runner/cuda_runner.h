// The CUDA backend's runner: owns the device's context in the runner
// process, loads candidates' cubins, verifies them against the reference and
// times them with CUPTI kernel activity records (CUDA events around each
// launch when CUPTI is unavailable, reported as such), records the SM clock
// and temperature from NVML with each candidate's samples, rotating argument
// sets that together exceed
// twice the L2 cache. A CUDA error during a candidate (illegal address, a
// sticky error) is that candidate's FAULT, and the runner exits after
// answering so the daemon starts a fresh context.

#ifndef TIR_WORKER_RUNNER_CUDA_RUNNER_H_
#define TIR_WORKER_RUNNER_CUDA_RUNNER_H_

#include <memory>
#include <vector>

#include "compiler/codegen/HostBuild.h"
#include "worker/cuda/cuda_driver.h"
#include "worker/cuda/cupti_timer.h"
#include "worker/cuda/nvml_sampler.h"
#include "worker/runner/prepared_item.h"
#include "worker/runner/runner.h"

namespace tir::runner {

class CudaRunner : public Runner {
 public:
  explicit CudaRunner(int device) : device_(device) {}
  ~CudaRunner() override;
  std::string backend() const override { return "cuda"; }
  // Loads the driver and retains the device's primary context.
  absl::Status Start() override { return Init(); }
  absl::Status Prepare(const tir::v1::WorkItem &item) override;
  absl::StatusOr<tir::v1::CandidateResult> Measure(uint32_t candidate, const std::string &binary_path) override;
  bool MustExit() const override { return context_lost_; }

 private:
  absl::Status Init();
  void FreeBuffers();
  // A candidate's CUDA error: its FAULT result, and the context is done for.
  tir::v1::CandidateResult Fault(uint32_t index, const absl::Status &s);

  int device_;
  std::unique_ptr<cuda::CudaDriver> driver_;
  std::unique_ptr<cuda::CuptiTimer> cupti_;     // null: CUDA events
  std::unique_ptr<cuda::NvmlSampler> nvml_;     // null: no clock/temperature
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  int l2_bytes_ = 0;
  bool context_lost_ = false;
  std::unique_ptr<PreparedItem> prepared_;
  std::unique_ptr<codegen::HostLaunch> host_;       // layout, domain, grid
  std::vector<std::vector<CUdeviceptr>> buffers_;    // per set, per buffer
};

}  // namespace tir::runner

#endif  // TIR_WORKER_RUNNER_CUDA_RUNNER_H_
