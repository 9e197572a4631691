// The GPU side of bench/gpu: loads tir's cubins and launches and times them
// in PyTorch's CUDA context, for run.py (ctypes), and runs the baselines
// that must be timed the same way: cuBLASLt on the same inputs (bf16 in,
// f32 accumulate, optionally its bias + GELU epilogue) and a device-to-device
// copy. Built with CMake on the lent machine (no Bazel there); uses the CUDA
// driver API, CUPTI and cuBLASLt from the toolkit.
//
// Timing: one untimed warm-up, then `reps` runs, each after a memset over a
// buffer four times the L2 (so every run starts with a cold L2). Each run is
// timed twice: by CUDA events around it, and by CUPTI activity records (the
// span from the first kernel's start to the last kernel's end between two
// flushes, so a cuBLAS split-K reduction counts). CUPTI times are returned
// only when every run produced records; run.py prefers them and says which
// it used.

#include <cublasLt.h>
#include <cuda.h>
#include <cupti.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace {

CUdevice g_device;
CUcontext g_context = nullptr;
CUdeviceptr g_flush = 0;
size_t g_flush_bytes = 0;

struct Record {
  bool flush;  // the L2-flush memset that separates runs
  uint64_t start, end;
};
std::mutex g_mu;
std::vector<Record> g_records;

bool Fail(CUresult r, const char *what, char *err, int errlen) {
  if (r == CUDA_SUCCESS) return false;
  const char *name = nullptr;
  if (cuGetErrorName(r, &name) != CUDA_SUCCESS || name == nullptr) {
    std::snprintf(err, errlen, "%s: CUDA error %d", what, static_cast<int>(r));
  } else {
    std::snprintf(err, errlen, "%s: %s", what, name);
  }
  return true;
}

bool FailBlas(cublasStatus_t s, const char *what, char *err, int errlen) {
  if (s == CUBLAS_STATUS_SUCCESS) return false;
  std::snprintf(err, errlen, "%s: cuBLAS status %d", what, static_cast<int>(s));
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
    Record r{};
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      auto *k = reinterpret_cast<CUpti_ActivityKernel10 *>(record);
      r = {false, k->start, k->end};
    } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      auto *m = reinterpret_cast<CUpti_ActivityMemset4 *>(record);
      // Only the flush separates runs; a library's own small memset is work.
      r = {m->bytes == g_flush_bytes, m->start, m->end};
    } else {
      continue;
    }
    std::lock_guard<std::mutex> lock(g_mu);
    g_records.push_back(r);
  }
  free(buffer);
}

// The timing loop shared by tir's kernels and the baselines. `launch`
// enqueues one run on the legacy default stream and returns false with `err`
// set on failure. Writes `reps` event times (ns) to `events_ns`; when CUPTI
// recorded every run, also `reps` CUPTI spans to `cupti_ns` and sets
// *cupti_n = reps (else 0). Returns 0, or -1 with `err` set.
int TimeLoop(const std::function<bool(char *, int)> &launch, int reps, double *events_ns, double *cupti_ns,
             int *cupti_n, char *err, int errlen) {
  cuCtxSetCurrent(g_context);
  *cupti_n = 0;
  if (!launch(err, errlen)) return -1;
  if (Fail(cuCtxSynchronize(), "warm-up run", err, errlen)) return -1;
  static const bool registered = cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted) == CUPTI_SUCCESS;
  const bool cupti = registered &&
                     cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS &&
                     cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET) == CUPTI_SUCCESS;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_records.clear();
  }
  CUevent start, stop;
  if (Fail(cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate", err, errlen)) return -1;
  if (Fail(cuEventCreate(&stop, CU_EVENT_DEFAULT), "cuEventCreate", err, errlen)) return -1;
  int status = 0;
  for (int r = 0; r < reps && status == 0; ++r) {
    if (Fail(cuMemsetD8(g_flush, static_cast<unsigned char>(r), g_flush_bytes), "L2 flush", err, errlen) ||
        Fail(cuEventRecord(start, nullptr), "cuEventRecord", err, errlen) || !launch(err, errlen) ||
        Fail(cuEventRecord(stop, nullptr), "cuEventRecord", err, errlen) ||
        Fail(cuEventSynchronize(stop), "timed run", err, errlen)) {
      status = -1;
      break;
    }
    float ms = 0;
    if (Fail(cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime", err, errlen)) status = -1;
    events_ns[r] = ms * 1e6;
  }
  cuEventDestroy(start);
  cuEventDestroy(stop);
  if (cupti) {
    cuptiActivityFlushAll(1);  // CUPTI_ACTIVITY_FLAG_FLUSH_FORCED
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMSET);
  }
  if (status != 0 || !cupti) return status;
  std::vector<Record> records;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    records.swap(g_records);
  }
  std::sort(records.begin(), records.end(), [](const Record &a, const Record &b) { return a.start < b.start; });
  std::vector<double> spans;
  uint64_t first = 0, last = 0;
  bool open = false, any = false;
  for (const Record &r : records) {
    if (r.flush) {
      if (any) spans.push_back(static_cast<double>(last - first));
      open = true;
      any = false;
      continue;
    }
    if (!open) continue;  // before the first flush: not a timed run
    if (!any) first = r.start;
    last = std::max(last, r.end);
    any = true;
  }
  if (any) spans.push_back(static_cast<double>(last - first));
  if (static_cast<int>(spans.size()) == reps) {
    std::copy(spans.begin(), spans.end(), cupti_ns);
    *cupti_n = reps;
  }
  return 0;
}

CUresult LaunchOne(void *fn, const void *params, const unsigned *grid, const unsigned *block, unsigned smem) {
  void *args[] = {const_cast<void *>(params)};  // one parameter: the tir_args struct
  if (smem > 48 * 1024) {  // dynamic shared memory above 48 KiB needs the opt-in
    CUresult r = cuFuncSetAttribute(static_cast<CUfunction>(fn), CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    static_cast<int>(smem));
    if (r != CUDA_SUCCESS) return r;
  }
  return cuLaunchKernel(static_cast<CUfunction>(fn), grid[0], grid[1], grid[2], block[0], block[1], block[2], smem,
                        nullptr, args, nullptr);
}

// One cuBLASLt problem, set up once (descriptors, heuristic algorithm,
// workspace) and run many times.
struct Gemm {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  const void *w = nullptr, *x = nullptr;
  void *out = nullptr;
  void *workspace = nullptr;
  size_t workspace_bytes = 0;
  float alpha = 1, beta = 0;

  ~Gemm() {
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (desc) cublasLtMatmulDescDestroy(desc);
    if (handle) cublasLtDestroy(handle);
    if (workspace) cuMemFree(reinterpret_cast<CUdeviceptr>(workspace));
  }

  bool Run(char *err, int errlen) const {
    return !FailBlas(cublasLtMatmul(handle, desc, &alpha, w, a, x, b, &beta, out, d, out, d, &algo, workspace,
                                    workspace_bytes, nullptr),
                     "cublasLtMatmul", err, errlen);
  }
};

// A graph's kernels in launch order: `n` functions, their argument structs,
// grids and blocks (3 each) and dynamic shared memory.
struct Sequence {
  int n;
  void *const *fns;
  const void *const *params;
  const unsigned *grids, *blocks, *smems;

  bool Launch(char *err, int errlen) const {
    for (int i = 0; i < n; ++i) {
      if (Fail(LaunchOne(fns[i], params[i], grids + 3 * i, blocks + 3 * i, smems[i]), "cuLaunchKernel", err, errlen)) {
        return false;
      }
    }
    return true;
  }
};

}  // namespace

extern "C" {

// Binds to device `device`'s primary context (the one PyTorch uses) and
// allocates the L2-flush buffer. Returns 0 on success.
int tir_gpu_init(int device, char *err, int errlen) {
  if (Fail(cuInit(0), "cuInit", err, errlen)) return 1;
  int count = 0;
  if (Fail(cuDeviceGetCount(&count), "cuDeviceGetCount", err, errlen)) return 1;
  if (count <= device) {
    std::snprintf(err, errlen, "no CUDA device %d (%d visible)", device, count);
    return 1;
  }
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

// One launch of the sequence, synchronized; a fault is reported, not hidden.
int tir_gpu_launch(int n, void *const *fns, const void *const *params, const unsigned *grids, const unsigned *blocks,
                   const unsigned *smems, char *err, int errlen) {
  cuCtxSetCurrent(g_context);
  const Sequence seq{n, fns, params, grids, blocks, smems};
  if (!seq.Launch(err, errlen)) return 1;
  if (Fail(cuCtxSynchronize(), "kernel execution", err, errlen)) return 1;
  return 0;
}

// Times the sequence as one run (see TimeLoop). Returns 0, or -1 with `err` set.
int tir_gpu_time(int n, void *const *fns, const void *const *params, const unsigned *grids, const unsigned *blocks,
                 const unsigned *smems, int reps, double *events_ns, double *cupti_ns, int *cupti_n, char *err,
                 int errlen) {
  const Sequence seq{n, fns, params, grids, blocks, smems};
  return TimeLoop([&seq](char *e, int len) { return seq.Launch(e, len); }, reps, events_ns, cupti_ns, cupti_n, err,
                  errlen);
}

// Device-to-device copy of `bytes` (cuMemcpyDtoDAsync between two fresh
// buffers), timed like a kernel. Bandwidth = 2 * bytes / time (read + write).
int tir_gpu_copy_time(unsigned long long bytes, int reps, double *events_ns, double *cupti_ns, int *cupti_n, char *err,
                      int errlen) {
  cuCtxSetCurrent(g_context);
  CUdeviceptr src = 0, dst = 0;
  if (Fail(cuMemAlloc(&src, bytes), "cuMemAlloc (copy source)", err, errlen)) return -1;
  if (Fail(cuMemAlloc(&dst, bytes), "cuMemAlloc (copy destination)", err, errlen)) {
    cuMemFree(src);
    return -1;
  }
  int rc = -1;
  if (!Fail(cuMemsetD32(src, 0x3f800001u, bytes / 4), "cuMemsetD32 (copy source)", err, errlen)) {
    // CUPTI sees a copy as a memcpy record, not a kernel, so the copy is timed by events alone.
    auto launch = [&](char *e, int n) { return !Fail(cuMemcpyDtoDAsync(dst, src, bytes, nullptr), "cuMemcpyDtoD", e, n); };
    rc = TimeLoop(launch, reps, events_ns, cupti_ns, cupti_n, err, errlen);
    *cupti_n = 0;
  }
  cuMemFree(src);
  cuMemFree(dst);
  return rc;
}

// Sets up C[M,N] = X[M,K] W (+ bias, GELU) in cuBLASLt, row-major as tir and
// torch store it: X bf16 [M,K]; W bf16 [K,N], or [N,K] when `w_transposed`
// (nn.Linear's layout); C bf16 or f32 (`out_f32`) [M,N]; f32 compute and
// scale. `bias` (length N, C's element type, as cuBLASLt requires) non-null
// selects the GELU_BIAS epilogue (tanh-approximated GELU). The heuristic's
// first algorithm is used, with a 32 MiB workspace, as a framework would.
// Returns a handle, or null with `err` set.
void *tir_gpu_cublas_create(int m, int n, int k, int w_transposed, int out_f32, const void *x, const void *w,
                            const void *bias, void *out, char *err, int errlen) {
  cuCtxSetCurrent(g_context);
  auto *g = new Gemm();
  g->x = x;
  g->w = w;
  g->out = out;
  g->workspace_bytes = 32u << 20;
  // Column-major view: C^T [N,M] = op(W^T) [N,K] x X^T [K,M].
  // Row-major W [K,N] is column-major N x K (ld N): no transpose.
  // Row-major W [N,K] is column-major K x N (ld K): transposed.
  const cudaDataType_t out_type = out_f32 ? CUDA_R_32F : CUDA_R_16BF;
  const cublasOperation_t op_w = w_transposed ? CUBLAS_OP_T : CUBLAS_OP_N, op_x = CUBLAS_OP_N;
  const cublasLtEpilogue_t epilogue = bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  cublasLtMatmulPreference_t pref = nullptr;
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  bool ok = !FailBlas(cublasLtCreate(&g->handle), "cublasLtCreate", err, errlen) &&
            !FailBlas(cublasLtMatmulDescCreate(&g->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate",
                      err, errlen) &&
            !FailBlas(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_w, sizeof(op_w)),
                      "TRANSA", err, errlen) &&
            !FailBlas(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_x, sizeof(op_x)),
                      "TRANSB", err, errlen) &&
            !FailBlas(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                                     sizeof(epilogue)),
                      "EPILOGUE", err, errlen) &&
            (!bias || !FailBlas(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                               sizeof(bias)),
                                "BIAS_POINTER", err, errlen)) &&
            !FailBlas(cublasLtMatrixLayoutCreate(&g->a, CUDA_R_16BF, w_transposed ? k : n, w_transposed ? n : k,
                                                 w_transposed ? k : n),
                      "layout W", err, errlen) &&
            !FailBlas(cublasLtMatrixLayoutCreate(&g->b, CUDA_R_16BF, k, m, k), "layout X", err, errlen) &&
            !FailBlas(cublasLtMatrixLayoutCreate(&g->d, out_type, n, m, n), "layout C", err, errlen) &&
            !Fail(cuMemAlloc(reinterpret_cast<CUdeviceptr *>(&g->workspace), g->workspace_bytes),
                  "cuMemAlloc (cuBLASLt workspace)", err, errlen) &&
            !FailBlas(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate", err, errlen) &&
            !FailBlas(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                           &g->workspace_bytes, sizeof(g->workspace_bytes)),
                      "MAX_WORKSPACE_BYTES", err, errlen) &&
            !FailBlas(cublasLtMatmulAlgoGetHeuristic(g->handle, g->desc, g->a, g->b, g->d, g->d, pref, 1, &result,
                                                     &found),
                      "cublasLtMatmulAlgoGetHeuristic", err, errlen);
  if (pref) cublasLtMatmulPreferenceDestroy(pref);
  if (ok && found == 0) {
    std::snprintf(err, errlen, "cuBLASLt found no algorithm for this problem");
    ok = false;
  }
  if (!ok) {
    delete g;
    return nullptr;
  }
  g->algo = result.algo;
  return g;
}

// One run, synchronized, so run.py can check cuBLAS's output too.
int tir_gpu_cublas_run(void *gemm, char *err, int errlen) {
  cuCtxSetCurrent(g_context);
  if (!static_cast<Gemm *>(gemm)->Run(err, errlen)) return 1;
  if (Fail(cuCtxSynchronize(), "cuBLASLt execution", err, errlen)) return 1;
  return 0;
}

int tir_gpu_cublas_time(void *gemm, int reps, double *events_ns, double *cupti_ns, int *cupti_n, char *err,
                        int errlen) {
  const Gemm *g = static_cast<Gemm *>(gemm);
  return TimeLoop([g](char *e, int n) { return g->Run(e, n); }, reps, events_ns, cupti_ns, cupti_n, err, errlen);
}

void tir_gpu_cublas_destroy(void *gemm) { delete static_cast<Gemm *>(gemm); }

}  // extern "C"
