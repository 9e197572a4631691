#include "worker/cuda/cuda_driver.h"

#include <cstring>

#include <dlfcn.h>

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"

namespace tir::cuda {
namespace {

absl::Status Unavailable(absl::string_view why) {
  return MakeError(absl::StatusCode::kFailedPrecondition, "CUDA_DRIVER_UNAVAILABLE",
                   absl::StrCat("CUDA backend unavailable: ", why));
}

template <typename Fn>
bool Resolve(void* handle, const char* symbol, Fn*& out) {
  out = reinterpret_cast<Fn*>(dlsym(handle, symbol));
  return out != nullptr;
}

}  // namespace

std::string DeviceInfo::Arch() const {
  std::string arch = absl::StrCat("sm_", compute_major, compute_minor);
  // Arch-specific ('a') features exist from Hopper on and need a cubin built
  // for exactly this major.minor, which a worker measuring its own device has.
  if (compute_major >= 9) arch += "a";
  return arch;
}

absl::StatusOr<std::unique_ptr<CudaDriver>> CudaDriver::Load(absl::string_view library) {
  const std::string path(library);
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    return Unavailable(absl::StrCat("no CUDA driver (could not load ", path,
                                    err ? absl::StrCat(": ", err) : std::string(),
                                    "); install the NVIDIA driver or use --backend=host"));
  }
  Api api{};
  const char* missing = nullptr;
#define TIR_RESOLVE(field, symbol) \
  if (missing == nullptr && !Resolve(handle, symbol, api.field)) missing = symbol
  TIR_RESOLVE(cuInit, "cuInit");
  TIR_RESOLVE(cuDriverGetVersion, "cuDriverGetVersion");
  TIR_RESOLVE(cuDeviceGetCount, "cuDeviceGetCount");
  TIR_RESOLVE(cuDeviceGet, "cuDeviceGet");
  TIR_RESOLVE(cuDeviceGetName, "cuDeviceGetName");
  TIR_RESOLVE(cuDeviceGetAttribute, "cuDeviceGetAttribute");
  TIR_RESOLVE(cuDeviceTotalMem, "cuDeviceTotalMem_v2");
  TIR_RESOLVE(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  TIR_RESOLVE(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  TIR_RESOLVE(cuCtxSetCurrent, "cuCtxSetCurrent");
  TIR_RESOLVE(cuCtxSynchronize, "cuCtxSynchronize");
  TIR_RESOLVE(cuModuleLoadData, "cuModuleLoadData");
  TIR_RESOLVE(cuModuleUnload, "cuModuleUnload");
  TIR_RESOLVE(cuModuleGetFunction, "cuModuleGetFunction");
  TIR_RESOLVE(cuFuncSetAttribute, "cuFuncSetAttribute");
  TIR_RESOLVE(cuLaunchKernel, "cuLaunchKernel");
  TIR_RESOLVE(cuMemAlloc, "cuMemAlloc_v2");
  TIR_RESOLVE(cuMemFree, "cuMemFree_v2");
  TIR_RESOLVE(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  TIR_RESOLVE(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  TIR_RESOLVE(cuMemsetD8, "cuMemsetD8_v2");
  TIR_RESOLVE(cuEventCreate, "cuEventCreate");
  TIR_RESOLVE(cuEventDestroy, "cuEventDestroy_v2");
  TIR_RESOLVE(cuEventRecord, "cuEventRecord");
  TIR_RESOLVE(cuEventSynchronize, "cuEventSynchronize");
  TIR_RESOLVE(cuEventElapsedTime, "cuEventElapsedTime_v2");
  TIR_RESOLVE(cuGetErrorName, "cuGetErrorName");
  TIR_RESOLVE(cuGetErrorString, "cuGetErrorString");
  TIR_RESOLVE(cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId");
#undef TIR_RESOLVE
  if (!Resolve(handle, "cuTensorMapEncodeTiled", api.cuTensorMapEncodeTiled)) api.cuTensorMapEncodeTiled = nullptr;
  if (!Resolve(handle, "cuLaunchKernelEx", api.cuLaunchKernelEx)) api.cuLaunchKernelEx = nullptr;
  if (missing != nullptr) {
    dlclose(handle);
    return Unavailable(absl::StrCat(path, " lacks entry point ", missing,
                                    " (driver too old for CUDA 13 code?)"));
  }
  std::unique_ptr<CudaDriver> driver(new CudaDriver(handle, api));
  const CUresult init = api.cuInit(0);
  if (init != CUDA_SUCCESS) {
    absl::Status s = driver->Check(init, "cuInit");
    return Unavailable(init == CUDA_ERROR_STUB_LIBRARY
                           ? absl::StrCat(path, " is the toolkit's stub, not a driver (", s.message(), ")")
                           : std::string(s.message()));
  }
  absl::StatusOr<int> count = driver->DeviceCount();
  if (!count.ok()) return Unavailable(count.status().message());
  if (*count == 0) return Unavailable("the driver sees no CUDA device");
  return driver;
}

CudaDriver::~CudaDriver() {
  if (handle_ != nullptr) dlclose(handle_);
}

std::string CudaDriver::Version() const {
  int v = 0;
  if (api_.cuDriverGetVersion(&v) != CUDA_SUCCESS) return "unknown";
  return absl::StrCat(v / 1000, ".", (v % 1000) / 10);
}

absl::Status CudaDriver::Check(CUresult result, absl::string_view what) const {
  if (result == CUDA_SUCCESS) return absl::OkStatus();
  const char* name = nullptr;
  const char* text = nullptr;
  if (api_.cuGetErrorName(result, &name) != CUDA_SUCCESS) name = nullptr;
  if (api_.cuGetErrorString(result, &text) != CUDA_SUCCESS) text = nullptr;
  return MakeError(absl::StatusCode::kInternal, "CUDA_ERROR",
                   absl::StrCat(what, ": ", name ? name : absl::StrCat("CUresult ", result),
                                text ? absl::StrCat(" (", text, ")") : std::string()));
}

absl::StatusOr<int> CudaDriver::DeviceCount() const {
  int count = 0;
  TIR_RETURN_IF_ERROR(Check(api_.cuDeviceGetCount(&count), "cuDeviceGetCount"));
  return count;
}

absl::StatusOr<DeviceInfo> CudaDriver::Device(int index) const {
  CUdevice dev;
  TIR_RETURN_IF_ERROR(Check(api_.cuDeviceGet(&dev, index), "cuDeviceGet"));
  DeviceInfo info;
  info.index = index;
  char name[256] = {};
  TIR_RETURN_IF_ERROR(Check(api_.cuDeviceGetName(name, sizeof(name), dev), "cuDeviceGetName"));
  info.name = name;
  struct {
    CUdevice_attribute attr;
    int* out;
  } attrs[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &info.compute_major},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &info.compute_minor},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &info.sm_count},
      {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, &info.sm_clock_khz},
      {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, &info.memory_clock_khz},
      {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, &info.l2_bytes},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &info.max_shared_per_block_optin},
  };
  for (const auto& a : attrs) {
    TIR_RETURN_IF_ERROR(Check(api_.cuDeviceGetAttribute(a.out, a.attr, dev), "cuDeviceGetAttribute"));
  }
  TIR_RETURN_IF_ERROR(Check(api_.cuDeviceTotalMem(&info.memory_bytes, dev), "cuDeviceTotalMem"));
  char bus[32] = {0};
  if (api_.cuDeviceGetPCIBusId(bus, sizeof(bus) - 1, dev) == CUDA_SUCCESS) info.pci_bus_id = bus;
  return info;
}

CUresult CudaDriver::Launch(CUfunction fn, const unsigned grid[3], const unsigned block[3], const unsigned cluster[3],
                           unsigned shared_bytes, CUstream stream, void** params) const {
  if (cluster[0] * cluster[1] * cluster[2] <= 1) {
    return api_.cuLaunchKernel(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_bytes, stream, params,
                               nullptr);
  }
  if (api_.cuLaunchKernelEx == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  CUlaunchAttribute attribute;
  std::memset(&attribute, 0, sizeof(attribute));
  attribute.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attribute.value.clusterDim.x = cluster[0];
  attribute.value.clusterDim.y = cluster[1];
  attribute.value.clusterDim.z = cluster[2];
  CUlaunchConfig config;
  std::memset(&config, 0, sizeof(config));
  config.gridDimX = grid[0];
  config.gridDimY = grid[1];
  config.gridDimZ = grid[2];
  config.blockDimX = block[0];
  config.blockDimY = block[1];
  config.blockDimZ = block[2];
  config.sharedMemBytes = shared_bytes;
  config.hStream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return api_.cuLaunchKernelEx(&config, fn, params, nullptr);
}

}  // namespace tir::cuda
