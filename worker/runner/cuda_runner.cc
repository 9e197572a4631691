#include "worker/runner/cuda_runner.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "compiler/codegen/ParamPacking.h"
#include "compiler/support/status.h"
#include "worker/measure/stats.h"

namespace tir::runner {

CudaRunner::~CudaRunner() {
  if (!context_lost_) FreeBuffers();
  if (driver_ && ctx_) driver_->api().cuDevicePrimaryCtxRelease(dev_);
}

absl::Status CudaRunner::Init() {
  if (driver_) return absl::OkStatus();
  TIR_ASSIGN_OR_RETURN(driver_, cuda::CudaDriver::Load());
  const auto &api = driver_->api();
  TIR_RETURN_IF_ERROR(driver_->Check(api.cuDeviceGet(&dev_, device_), "cuDeviceGet"));
  TIR_RETURN_IF_ERROR(driver_->Check(api.cuDevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain"));
  TIR_RETURN_IF_ERROR(driver_->Check(api.cuCtxSetCurrent(ctx_), "cuCtxSetCurrent"));
  TIR_ASSIGN_OR_RETURN(cuda::DeviceInfo info, driver_->Device(device_));
  l2_bytes_ = info.l2_bytes > 0 ? info.l2_bytes : 64 << 20;
  // Optional: without CUPTI kernel times come from events, without NVML the
  // samples carry no clock or temperature (each says why once).
  if (auto c = cuda::CuptiTimer::Start(); c.ok()) {
    cupti_ = std::move(*c);
  } else {
    std::fprintf(stderr, "tir-worker-runner: %s\n", std::string(c.status().message()).c_str());
  }
  if (auto n = cuda::NvmlSampler::Open(info.pci_bus_id); n.ok()) {
    nvml_ = std::move(*n);
  } else {
    std::fprintf(stderr, "tir-worker-runner: %s\n", std::string(n.status().message()).c_str());
  }
  return absl::OkStatus();
}

void CudaRunner::FreeBuffers() {
  if (!driver_) return;
  for (auto &set : buffers_) {
    for (CUdeviceptr p : set) driver_->api().cuMemFree(p);
  }
  buffers_.clear();
}

tir::v1::CandidateResult CudaRunner::Fault(uint32_t index, const absl::Status &s) {
  context_lost_ = true;
  tir::v1::CandidateResult r;
  r.set_candidate_index(index);
  r.mutable_verification()->set_verdict(tir::v1::VERDICT_FAULT);
  r.mutable_verification()->set_detail(std::string(s.message()));
  return r;
}

absl::Status CudaRunner::Prepare(const tir::v1::WorkItem &item) {
  TIR_RETURN_IF_ERROR(Init());
  FreeBuffers();
  host_.reset();
  TIR_ASSIGN_OR_RETURN(prepared_, PrepareItem(item));
  if (item.candidates().empty()) return absl::OkStatus();
  TIR_ASSIGN_OR_RETURN(host_, codegen::HostLaunch::Prepare(prepared_->loaded.graph, prepared_->field_names,
                                                           item.candidates(0).launch(), prepared_->inputs, 1));
  // The workspace as large as the largest candidate needs.
  for (const tir::v1::CandidateWork &c : item.candidates()) TIR_RETURN_IF_ERROR(host_->ReserveWorkspace(c.launch()));
  const int64_t per = std::max<int64_t>(1, host_->bytes_per_set());
  const int64_t sets = std::clamp<int64_t>((2 * int64_t{l2_bytes_} + per - 1) / per, 1,
                                           std::min<int64_t>(64, (int64_t{8} << 30) / per));
  const auto &api = driver_->api();
  buffers_.assign(sets, {});
  for (auto &set : buffers_) {
    for (int b = 0; b < host_->buffer_count(); ++b) {
      const codegen::HostLaunch::Bytes &h = host_->buffer(0, b);
      CUdeviceptr p = 0;
      TIR_RETURN_IF_ERROR(driver_->Check(api.cuMemAlloc(&p, h.size()), "cuMemAlloc"));
      set.push_back(p);
      TIR_RETURN_IF_ERROR(driver_->Check(api.cuMemcpyHtoD(p, h.data(), h.size()), "cuMemcpyHtoD"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<tir::v1::CandidateResult> CudaRunner::Measure(uint32_t candidate, const std::string &binary_path) {
  TIR_ASSIGN_OR_RETURN(const tir::v1::CandidateWork *at, CandidateAt(host_ ? prepared_.get() : nullptr, candidate));
  const tir::v1::CandidateWork &work = *at;
  const tir::v1::WorkItem &item = prepared_->item;
  const uint32_t index = work.candidate_index();
  const auto &api = driver_->api();
  std::ifstream in(binary_path, std::ios::binary);
  std::string cubin((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (cubin.empty()) return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_WORK", "cannot read " + binary_path);
  CUmodule module = nullptr;
  CUfunction fn = nullptr;
  if (absl::Status s = driver_->Check(api.cuModuleLoadData(&module, cubin.data()), "cuModuleLoadData"); !s.ok()) {
    return Fault(index, s);
  }
  const std::string entry = work.entry_symbol().empty() ? "tir_kernel" : work.entry_symbol();
  if (absl::Status s = driver_->Check(api.cuModuleGetFunction(&fn, module, entry.c_str()), "cuModuleGetFunction");
      !s.ok()) {
    api.cuModuleUnload(module);
    return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_WORK", std::string(s.message()));
  }
  const uint32_t smem = work.launch().dynamic_shared_memory_bytes();
  if (smem > 48 * 1024) {
    if (absl::Status s = driver_->Check(
            api.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(smem)),
            "cuFuncSetAttribute");
        !s.ok()) {
      return Fault(index, s);
    }
  }
  TIR_RETURN_IF_ERROR(host_->SetLaunch(work.launch()));
  const unsigned *grid = host_->grid();
  unsigned block[3] = {1, 1, 1};
  for (int i = 0; i < work.launch().block_size() && i < 3; ++i) block[i] = std::max(1u, work.launch().block(i));
  // tir_args per set, packed as the emulator gets it (ParamPacking.h):
  // pointers to the set's device buffers, tensor maps encoded by the driver
  // over the set's buffer, or left zero when the layout allows none (the
  // kernel then loads without TMA).
  const std::vector<codegen::HostLaunch::FieldView> fields = host_->Fields(0);
  const codegen::ParamLayout layout = codegen::LayOutParams(fields);
  std::vector<codegen::HostLaunch::Bytes> args;
  for (size_t s = 0; s < buffers_.size(); ++s) {
    auto encode = [&](const codegen::HostLaunch::FieldView &f, uint8_t *dst) -> absl::Status {
      // The kernel tests the same layout rule on the device pointer (an
      // output's map too: the kernel then stores its tile by TMA).
      if (!f.map->encodable || buffers_[s][f.map->buffer] % 16 != 0) return absl::OkStatus();
      if (api.cuTensorMapEncodeTiled == nullptr) {
        return MakeError(absl::StatusCode::kFailedPrecondition, "CUDA_DRIVER_UNAVAILABLE",
                         "the kernel loads by TMA and the driver has no cuTensorMapEncodeTiled (CUDA 12 or newer)");
      }
      CUtensorMap map;
      const cuuint64_t dims[2] = {f.map->dims[0], f.map->dims[1]};
      const cuuint64_t strides[1] = {f.map->stride_bytes};
      const cuuint32_t box[2] = {f.map->box[0], f.map->box[1]}, element[2] = {1, 1};
      if (absl::Status e = driver_->Check(
              api.cuTensorMapEncodeTiled(&map,
                                         f.map->bf16  ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                         : f.map->f32 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                                      : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                                         2, reinterpret_cast<void *>(static_cast<uintptr_t>(buffers_[s][f.map->buffer])), dims,
                                         strides, box, element, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                         CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
              "cuTensorMapEncodeTiled");
          !e.ok()) {
        return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_WORK", std::string(e.message()));
      }
      static_assert(sizeof(map) == 128, "a CUtensorMap is the 128 bytes the layout gives it");
      std::memcpy(dst, &map, sizeof(map));
      return absl::OkStatus();
    };
    TIR_ASSIGN_OR_RETURN(codegen::HostLaunch::Bytes packed,
                         codegen::PackParams(fields, layout, [&](int b) { return static_cast<uint64_t>(buffers_[s][b]); }, encode));
    args.push_back(std::move(packed));
  }
  // A kernel launched in thread-block clusters (sm_90): cuLaunchKernelEx
  // with the cluster dimension attribute; each grid dimension must be a
  // multiple of the cluster's.
  unsigned cluster[3] = {1, 1, 1};
  for (int i = 0; i < work.launch().cluster_size() && i < 3; ++i) cluster[i] = std::max(1u, work.launch().cluster(i));
  const bool clustered = cluster[0] * cluster[1] * cluster[2] > 1;
  if (clustered) {
    if (api.cuLaunchKernelEx == nullptr) {
      return MakeError(absl::StatusCode::kFailedPrecondition, "CUDA_DRIVER_UNAVAILABLE",
                       "the kernel is launched in thread-block clusters and the driver has no cuLaunchKernelEx "
                       "(CUDA 12 or newer)");
    }
    for (int d = 0; d < 3; ++d) {
      if (grid[d] % cluster[d] != 0) {
        return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_WORK",
                         absl::StrCat("grid dimension ", d, " of ", grid[d], " blocks is not a multiple of the cluster's ",
                                      cluster[d]));
      }
    }
  }
  auto launch = [&](size_t s) {
    void *params[] = {args[s].data()};
    return driver_->Launch(fn, grid, block, cluster, smem, nullptr, params);
  };
  tir::v1::CandidateResult result;
  result.set_candidate_index(index);
  // A zeroed workspace for this candidate, whatever ran before it.
  if (const int w = host_->workspace_buffer(); w >= 0) {
    for (auto &set : buffers_) {
      if (absl::Status s = driver_->Check(api.cuMemsetD8(set[w], 0, host_->buffer(0, w).size()), "cuMemsetD8"); !s.ok()) {
        return Fault(index, s);
      }
    }
  }
  // Verification run (also the warm-up) on poisoned outputs.
  for (size_t b : host_->output_buffers()) {
    if (absl::Status s = driver_->Check(api.cuMemsetD8(buffers_[0][b], 0xff, host_->buffer(0, b).size()), "cuMemsetD8");
        !s.ok()) {
      return Fault(index, s);
    }
  }
  if (absl::Status s = driver_->Check(launch(0), "cuLaunchKernel"); !s.ok()) return Fault(index, s);
  if (absl::Status s = driver_->Check(api.cuCtxSynchronize(), "running the kernel"); !s.ok()) return Fault(index, s);
  if (item.policy().verify()) {
    for (size_t b : host_->output_buffers()) {
      codegen::HostLaunch::Bytes &h = host_->buffer(0, b);
      if (absl::Status s = driver_->Check(api.cuMemcpyDtoH(h.data(), buffers_[0][b], h.size()), "cuMemcpyDtoH"); !s.ok()) {
        return Fault(index, s);
      }
    }
    *result.mutable_verification() = Verify(host_->Outputs(0), prepared_->expected, prepared_->rounding,
                                                codegen::ReductionLength(prepared_->loaded.graph, host_->domain()),
                                                work.candidate().params().count("tf32") > 0);
    if (result.verification().verdict() == tir::v1::VERDICT_WRONG) {
      api.cuModuleUnload(module);
      return result;
    }
  } else {
    result.mutable_verification()->set_verdict(tir::v1::VERDICT_PASSED);
    result.mutable_verification()->set_detail("not compared with the reference (policy.verify is off)");
  }
  // Timed runs, rotating the argument sets. With CUPTI: batches launched
  // back to back, each kernel's own GPU time from its activity record. Else
  // (or when CUPTI misses records): each run between two CUDA events.
  const TimedRuns runs = TimedRunsOf(item.policy(), 10);
  std::vector<double> samples;
  double spent = 0;
  int r = 0;
  tir::v1::TimingSource source = tir::v1::TIMING_SOURCE_CUPTI;
  if (cupti_) {
    cupti_->Collect(entry);  // drops the verification run's record
    while (runs.More(r, spent)) {
      const int batch = std::clamp(runs.min_runs - r, 1, 100);
      for (int b = 0; b < batch; ++b, ++r) {
        if (absl::Status s = driver_->Check(launch(r % buffers_.size()), "cuLaunchKernel"); !s.ok()) return Fault(index, s);
      }
      if (absl::Status s = driver_->Check(api.cuCtxSynchronize(), "running the kernel"); !s.ok()) return Fault(index, s);
      const std::vector<double> got = cupti_->Collect(entry);
      if (got.size() != static_cast<size_t>(batch)) {
        std::fprintf(stderr, "tir-worker-runner: CUPTI returned %zu records for %d launches; timing with CUDA events\n",
                     got.size(), batch);
        cupti_.reset();
        samples.clear();
        spent = 0;
        r = 0;
        break;
      }
      for (double t : got) {
        samples.push_back(t);
        spent += t;
      }
    }
  }
  if (!cupti_) {
    source = tir::v1::TIMING_SOURCE_CUDA_EVENTS;
    CUevent start = nullptr, stop = nullptr;
    api.cuEventCreate(&start, CU_EVENT_DEFAULT);
    api.cuEventCreate(&stop, CU_EVENT_DEFAULT);
    absl::Status failed = absl::OkStatus();
    for (; runs.More(r, spent); ++r) {
      api.cuEventRecord(start, nullptr);
      failed = driver_->Check(launch(r % buffers_.size()), "cuLaunchKernel");
      if (!failed.ok()) break;
      api.cuEventRecord(stop, nullptr);
      failed = driver_->Check(api.cuEventSynchronize(stop), "running the kernel");
      if (!failed.ok()) break;
      float ms = 0;
      api.cuEventElapsedTime(&ms, start, stop);
      samples.push_back(ms * 1e-3);
      spent += ms * 1e-3;
    }
    api.cuEventDestroy(start);
    api.cuEventDestroy(stop);
    if (!failed.ok()) return Fault(index, failed);
  }
  api.cuModuleUnload(module);
  tir::v1::Measurement *m = result.mutable_measurement();
  measure::Summarize(std::move(samples), m);
  m->set_source(source);
  if (nvml_) {
    const cuda::NvmlSampler::Sample now = nvml_->Now();
    m->set_sm_clock_mhz(now.sm_clock_mhz);
    m->set_temperature_c(now.temperature_c);
  }
  return result;
}

}  // namespace tir::runner
