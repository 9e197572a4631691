// The CUDA driver API, loaded at run time.
//
// tir binaries never link libcuda: they start on machines without an NVIDIA
// driver, and the CUDA backend reports that as a typed error
// (FAILED_PRECONDITION, reason CUDA_DRIVER_UNAVAILABLE) instead of failing to
// start. Entry points are resolved by their ABI names (the `_v2` suffixes the
// header's macros map to).

#ifndef TIR_WORKER_CUDA_CUDA_DRIVER_H_
#define TIR_WORKER_CUDA_CUDA_DRIVER_H_

#include <cuda.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tir::cuda {

// Facts about one device.
struct DeviceInfo {
  int index = 0;
  std::string name;
  int compute_major = 0;
  int compute_minor = 0;
  int sm_count = 0;
  size_t memory_bytes = 0;
  int sm_clock_khz = 0;
  int memory_clock_khz = 0;
  int l2_bytes = 0;
  int max_shared_per_block_optin = 0;
  // "0000:3b:00.0": how NVML finds the same device.
  std::string pci_bus_id;

  // "sm_90a" for Hopper (arch-specific features are usable on the device
  // itself), "sm_XY" otherwise.
  std::string Arch() const;
};

// A loaded driver. Thread-safe after Load.
class CudaDriver {
 public:
  // Entry points used by tir, resolved at load.
  struct Api {
    CUresult (*cuInit)(unsigned int);
    CUresult (*cuDriverGetVersion)(int*);
    CUresult (*cuDeviceGetCount)(int*);
    CUresult (*cuDeviceGet)(CUdevice*, int);
    CUresult (*cuDeviceGetName)(char*, int, CUdevice);
    CUresult (*cuDeviceGetAttribute)(int*, CUdevice_attribute, CUdevice);
    CUresult (*cuDeviceTotalMem)(size_t*, CUdevice);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
    CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuCtxSynchronize)();
    CUresult (*cuModuleLoadData)(CUmodule*, const void*);
    CUresult (*cuModuleUnload)(CUmodule);
    CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
    CUresult (*cuFuncSetAttribute)(CUfunction, CUfunction_attribute, int);
    CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, unsigned, CUstream, void**, void**);
    CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
    CUresult (*cuMemFree)(CUdeviceptr);
    CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t);
    CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t);
    CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*cuEventCreate)(CUevent*, unsigned int);
    CUresult (*cuEventDestroy)(CUevent);
    CUresult (*cuEventRecord)(CUevent, CUstream);
    CUresult (*cuEventSynchronize)(CUevent);
    CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);
    CUresult (*cuGetErrorName)(CUresult, const char**);
    CUresult (*cuGetErrorString)(CUresult, const char**);
    CUresult (*cuDeviceGetPCIBusId)(char*, int, CUdevice);
    // CUDA 12+ (null with an older driver): TMA tensor maps.
    CUresult (*cuTensorMapEncodeTiled)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                       const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                       CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
    // cuLaunchKernelEx (CUDA 12): a launch with attributes (cluster
    // dimensions); null when the driver has none.
    CUresult (*cuLaunchKernelEx)(const CUlaunchConfig*, CUfunction, void**, void**);
  };

  // Loads the driver library (default "libcuda.so.1", found by the system
  // loader) and calls cuInit. No library, a stub library, or no device gives
  // FAILED_PRECONDITION with reason CUDA_DRIVER_UNAVAILABLE.
  static absl::StatusOr<std::unique_ptr<CudaDriver>> Load(
      absl::string_view library = "libcuda.so.1");

  ~CudaDriver();
  CudaDriver(const CudaDriver&) = delete;
  CudaDriver& operator=(const CudaDriver&) = delete;

  const Api& api() const { return api_; }

  // Driver version as "MAJOR.MINOR".
  std::string Version() const;

  // Number of devices.
  absl::StatusOr<int> DeviceCount() const;

  // Facts about device `index`.
  absl::StatusOr<DeviceInfo> Device(int index) const;

  // The one adapter from CUresult to absl::Status: "`what`: CUDA_ERROR_X (text)".
  absl::Status Check(CUresult result, absl::string_view what) const;

  // Launches `fn` on `stream`; in thread-block clusters of `cluster` blocks
  // (x, y, z) when that is more than one (cuLaunchKernelEx with
  // CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION; each grid dimension a multiple
  // of the cluster's), else with cuLaunchKernel. CUDA_ERROR_NOT_SUPPORTED
  // for a cluster when the driver has no cuLaunchKernelEx.
  CUresult Launch(CUfunction fn, const unsigned grid[3], const unsigned block[3], const unsigned cluster[3],
                  unsigned shared_bytes, CUstream stream, void** params) const;

 private:
  CudaDriver(void* handle, const Api& api) : handle_(handle), api_(api) {}
  void* handle_;
  Api api_;
};

}  // namespace tir::cuda

#endif  // TIR_WORKER_CUDA_CUDA_DRIVER_H_
