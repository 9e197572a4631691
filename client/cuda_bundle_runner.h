// Runs a cubin bundle (BINARY_FORMAT_CUBIN) on an NVIDIA GPU from what the
// bundle says, as a framework's launcher does: the bundle's signature is
// checked before any module is loaded, each kernel's parameter struct is
// packed from its argument records (client/bundle_runner.h, KernelFields and
// CudaParamLayout), intermediates and workspaces are allocated on the device
// once and reused, and every kernel is launched in order on the caller's
// stream. The driver is loaded at run time (worker/cuda/cuda_driver.h): on a
// machine without one, Load answers CUDA_DRIVER_UNAVAILABLE.

#ifndef TIR_CLIENT_CUDA_BUNDLE_RUNNER_H_
#define TIR_CLIENT_CUDA_BUNDLE_RUNNER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler/reference/Tensor.h"
#include "tir/v1/kernel.pb.h"

namespace tir::cuda {
class CudaDriver;
}

namespace tir::client {

// A tensor in device memory: its address, and its strides in elements (empty:
// the layout the bundle declares, row-major unless it says otherwise).
struct DeviceTensor {
  uint64_t pointer = 0;
  std::vector<int64_t> strides;
};

class CudaBundleRunner {
 public:
  // Checks `bundle` (signature with `bundle_key` when given, cubin kernels,
  // concrete extents), then loads the driver, makes the primary context of
  // `device` current and loads every kernel's module. Errors:
  // FAILED_PRECONDITION (BUNDLE_* for the signature, BUNDLE_NOT_RUNNABLE,
  // CUDA_DRIVER_UNAVAILABLE), INTERNAL CUDA errors.
  static absl::StatusOr<std::unique_ptr<CudaBundleRunner>> Load(const tir::v1::KernelBundle &bundle,
                                                                const std::string &bundle_key = "", int device = 0);
  ~CudaBundleRunner();
  CudaBundleRunner(const CudaBundleRunner &) = delete;
  CudaBundleRunner &operator=(const CudaBundleRunner &) = delete;

  // Launches the bundle on `stream` (a CUstream; null: the default stream)
  // over one device tensor per bundle input and output. Does not wait.
  // Errors: INVALID_ARGUMENT (INPUT_MISMATCH for counts,
  // LAYOUT_CONTRACT_VIOLATED for a layout the kernels were not built for).
  absl::Status Launch(const std::vector<DeviceTensor> &inputs, const std::vector<DeviceTensor> &outputs,
                      void *stream = nullptr);

 private:
  CudaBundleRunner() = default;
  struct State;
  std::unique_ptr<State> state_;
};

// Host tensors in, host tensors out, through the device: copies `inputs`
// (dense, one per bundle input) in, launches, waits, copies the outputs back.
absl::StatusOr<std::vector<reference::Tensor>> RunCudaBundle(const tir::v1::KernelBundle &bundle,
                                                             const std::vector<reference::Tensor> &inputs,
                                                             const std::string &bundle_key = "", int device = 0);

}  // namespace tir::client

#endif  // TIR_CLIENT_CUDA_BUNDLE_RUNNER_H_
