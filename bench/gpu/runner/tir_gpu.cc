// The GPU side of bench/gpu: loads tir's cubins and launches and times them
// in PyTorch's CUDA context, for run.py (ctypes). Built with CMake on the lent
// machine (no Bazel there); uses the CUDA driver API and CUPTI from the
// toolkit. Kernel time comes from CUPTI kernel activity records, with the L2
// flushed (a memset over a buffer larger than L2) before every timed run;
// CUDA events are the fallback when CUPTI is unavailable.

#include <cuda.h>
#include <cupti.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace {

CUdevice g_device;
CUcontext g_context = nullptr;
CUdeviceptr g_flush = 0;
size_t g_flush_bytes = 0;
std::mutex g_mu;
std::vector<double> g_durations_ns;  // CUPTI kernel records named tir_kernel

bool Fail(CUresult r, const char *what, char *err, int errlen) {
  if (r == CUDA_SUCCESS) return false;
  const char *name = nullptr;
  cuGetErrorName(r, &name);
  std::snprintf(err, errlen, "%s: %s", what, name ? name : "unknown CUDA error");
  return true;
}

void CUPTIAPI BufferRequested(uint8_t **buffer, size_t *size, size_t *maxRecords) {
  *size = 8 << 20;
  *buffer = static_cast<uint8_t *>(aligned_alloc(8, *size));
  *maxRecords = 0;
}

void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t *buffer, size_t, size_t validSize) {
  CUpti_Activity *record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, validSize, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && record->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
    auto *k = reinterpret_cast<CUpti_ActivityKernel10 *>(record);
    if (k->name != nullptr && std::strcmp(k->name, "tir_kernel") == 0) {
      std::lock_guard<std::mutex> lock(g_mu);
      g_durations_ns.push_back(static_cast<double>(k->end - k->start));
    }
  }
  free(buffer);
}

}  // namespace

extern "C" {

// Binds to device `device`'s primary context (the one PyTorch uses) and
// allocates the L2-flush buffer. Returns 0 on success.
int tir_gpu_init(int device, char *err, int errlen) {
  if (Fail(cuInit(0), "cuInit", err, errlen)) return 1;
  if (Fail(cuDeviceGet(&g_device, device), "cuDeviceGet", err, errlen)) return 1;
  if (Fail(cuDevicePrimaryCtxRetain(&g_context, g_device), "cuDevicePrimaryCtxRetain", err, errlen)) return 1;
  if (Fail(cuCtxSetCurrent(g_context), "cuCtxSetCurrent", err, errlen)) return 1;
  int l2 = 0;
  cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, g_device);
  g_flush_bytes = std::max<size_t>(size_t(l2) * 4, 256u << 20);
  if (Fail(cuMemAlloc(&g_flush, g_flush_bytes), "cuMemAlloc (L2 flush buffer)", err, errlen)) return 1;
  return 0;
}

// Loads `cubin_path` and returns its tir_kernel, or null with `err` set.
void *tir_gpu_load(const char *cubin_path, char *err, int errlen) {
  cuCtxSetCurrent(g_context);
  CUmodule module;
  if (Fail(cuModuleLoad(&module, cubin_path), "cuModuleLoad", err, errlen)) return nullptr;
  CUfunction fn;
  if (Fail(cuModuleGetFunction(&fn, module, "tir_kernel"), "cuModuleGetFunction", err, errlen)) return nullptr;
  return fn;
}

static CUresult Launch(void *fn, const void *params, const unsigned *grid, const unsigned *block, unsigned smem) {
  void *args[] = {const_cast<void *>(params)};  // one parameter: the tir_args struct
  if (smem > 48 * 1024) {  // dynamic shared memory above 48 KiB needs the opt-in
    CUresult r = cuFuncSetAttribute(static_cast<CUfunction>(fn), CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    static_cast<int>(smem));
    if (r != CUDA_SUCCESS) return r;
  }
  return cuLaunchKernel(static_cast<CUfunction>(fn), grid[0], grid[1], grid[2], block[0], block[1], block[2], smem,
                        nullptr, args, nullptr);
}

// Encodes a 2D TMA tensor map (128 bytes at `out`) as the worker does: bf16
// or f16 elements, dims and box inner first, the outer stride in bytes, the
// 128-byte swizzle, zeros outside the tensor. Returns 0 on success.
int tir_gpu_tensor_map(void *out, int bf16, unsigned long long base, unsigned long long dim0, unsigned long long dim1,
                       unsigned long long stride_bytes, unsigned box0, unsigned box1, char *err, int errlen) {
  const cuuint64_t dims[2] = {dim0, dim1}, strides[1] = {stride_bytes};
  const cuuint32_t box[2] = {box0, box1}, element[2] = {1, 1};
  CUtensorMap map;
  if (Fail(cuTensorMapEncodeTiled(&map, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2,
                                  reinterpret_cast<void *>(base), dims, strides, box, element,
                                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                  CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
           "cuTensorMapEncodeTiled", err, errlen)) {
    return 1;
  }
  std::memcpy(out, &map, sizeof(map));
  return 0;
}

// One launch, synchronized; a fault is reported, not hidden.
int tir_gpu_launch(void *fn, const void *params, const unsigned *grid, const unsigned *block, unsigned smem,
                   char *err, int errlen) {
  cuCtxSetCurrent(g_context);
  if (Fail(Launch(fn, params, grid, block, smem), "cuLaunchKernel", err, errlen)) return 1;
  if (Fail(cuCtxSynchronize(), "kernel execution", err, errlen)) return 1;
  return 0;
}

// Times `reps` runs after one untimed warm-up, flushing L2 before each.
// Writes per-run kernel times (ns) to `out_ns` and 1 (CUPTI) or 2 (events)
// to `source`. Returns the number of samples, or -1 with `err` set.
int tir_gpu_time(void *fn, const void *params, const unsigned *grid, const unsigned *block, unsigned smem, int reps,
                 double *out_ns, int *source, char *err, int errlen) {
  cuCtxSetCurrent(g_context);
  if (Fail(Launch(fn, params, grid, block, smem), "warm-up launch", err, errlen)) return -1;
  if (Fail(cuCtxSynchronize(), "warm-up run", err, errlen)) return -1;
  const bool cupti = cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted) == CUPTI_SUCCESS &&
                     cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_durations_ns.clear();
  }
  std::vector<double> events;
  CUevent start, stop;
  cuEventCreate(&start, CU_EVENT_DEFAULT);
  cuEventCreate(&stop, CU_EVENT_DEFAULT);
  for (int r = 0; r < reps; ++r) {
    cuMemsetD8(g_flush, static_cast<unsigned char>(r), g_flush_bytes);
    cuEventRecord(start, nullptr);
    if (Fail(Launch(fn, params, grid, block, smem), "timed launch", err, errlen)) return -1;
    cuEventRecord(stop, nullptr);
    if (Fail(cuEventSynchronize(stop), "timed run", err, errlen)) return -1;
    float ms = 0;
    cuEventElapsedTime(&ms, start, stop);
    events.push_back(ms * 1e6);
  }
  cuEventDestroy(start);
  cuEventDestroy(stop);
  int n = 0;
  if (cupti) {
    cuptiActivityFlushAll(0);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    std::lock_guard<std::mutex> lock(g_mu);
    if (static_cast<int>(g_durations_ns.size()) >= reps) {
      for (int r = 0; r < reps; ++r) out_ns[r] = g_durations_ns[g_durations_ns.size() - reps + r];
      *source = 1;
      n = reps;
    }
  }
  if (n == 0) {
    for (int r = 0; r < reps; ++r) out_ns[r] = events[r];
    *source = 2;
    n = reps;
  }
  return n;
}

}  // extern "C"
