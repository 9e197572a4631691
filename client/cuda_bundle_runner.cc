#include "client/cuda_bundle_runner.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "client/bundle_runner.h"
#include "client/bundle_signature.h"
#include "compiler/codegen/HostBuild.h"
#include "compiler/codegen/LaunchContract.h"
#include "compiler/support/status.h"
#include "worker/cuda/cuda_driver.h"

namespace tir::client {
namespace {

absl::Status NotRunnable(const std::string &m) {
  return MakeError(absl::StatusCode::kFailedPrecondition, "BUNDLE_NOT_RUNNABLE", m);
}
absl::Status Mismatch(const std::string &m) {
  return MakeError(absl::StatusCode::kInvalidArgument, "INPUT_MISMATCH", m);
}

using Key = std::pair<int, uint32_t>;

}  // namespace

struct CudaBundleRunner::State {
  tir::v1::KernelBundle bundle;
  std::unique_ptr<cuda::CudaDriver> driver;
  CUdevice device = 0;
  CUcontext context = nullptr;
  std::vector<CUmodule> modules;
  std::vector<CUfunction> functions;
  std::map<Key, tir::v1::TensorType> types;
  std::map<Key, CUdeviceptr> scratch;  // intermediates, allocated once
  std::vector<CUdeviceptr> workspaces;  // per kernel, zeroed once
};

absl::StatusOr<std::unique_ptr<CudaBundleRunner>> CudaBundleRunner::Load(const tir::v1::KernelBundle &bundle,
                                                                         const std::string &bundle_key, int device) {
  if (!bundle_key.empty()) TIR_RETURN_IF_ERROR(CheckBundleSignature(bundle, bundle_key));
  TIR_RETURN_IF_ERROR(CheckBinaryHashes(bundle));
  if (bundle.kernels_size() == 0) return NotRunnable("the bundle holds no kernels");
  for (const tir::v1::KernelEntry &k : bundle.kernels()) {
    if (k.format() != tir::v1::BINARY_FORMAT_CUBIN) {
      return NotRunnable(absl::StrCat("kernel ", k.partition(), " is not a cubin (bundle for ", bundle.arch(),
                                      "); host bundles run with RunHostBundle"));
    }
    for (int64_t d : k.iteration_domain()) {
      if (d < 0) return NotRunnable("the bundle has dynamic extents; compile it for the shape");
    }
  }
  std::unique_ptr<CudaBundleRunner> runner(new CudaBundleRunner());
  runner->state_ = std::make_unique<State>();
  State &s = *runner->state_;
  s.bundle = bundle;
  auto add = [&](tir::v1::TensorRef::Kind kind, const auto &list) -> absl::Status {
    for (int i = 0; i < list.size(); ++i) {
      for (int64_t d : list[i].shape()) {
        if (d < 0) return NotRunnable("the bundle has dynamic extents; compile it for the shape");
      }
      s.types[{kind, static_cast<uint32_t>(i)}] = list[i];
    }
    return absl::OkStatus();
  };
  TIR_RETURN_IF_ERROR(add(tir::v1::TensorRef::INPUT, bundle.inputs()));
  TIR_RETURN_IF_ERROR(add(tir::v1::TensorRef::OUTPUT, bundle.outputs()));
  TIR_RETURN_IF_ERROR(add(tir::v1::TensorRef::INTERMEDIATE, bundle.intermediates()));
  TIR_ASSIGN_OR_RETURN(s.driver, cuda::CudaDriver::Load());
  const auto &api = s.driver->api();
  TIR_RETURN_IF_ERROR(s.driver->Check(api.cuDeviceGet(&s.device, device), "cuDeviceGet"));
  TIR_RETURN_IF_ERROR(s.driver->Check(api.cuDevicePrimaryCtxRetain(&s.context, s.device), "cuDevicePrimaryCtxRetain"));
  TIR_RETURN_IF_ERROR(s.driver->Check(api.cuCtxSetCurrent(s.context), "cuCtxSetCurrent"));
  for (const tir::v1::KernelEntry &k : bundle.kernels()) {
    CUmodule module = nullptr;
    TIR_RETURN_IF_ERROR(s.driver->Check(api.cuModuleLoadData(&module, k.binary().data()), "cuModuleLoadData"));
    s.modules.push_back(module);
    CUfunction fn = nullptr;
    const std::string entry = k.entry_symbol().empty() ? "tir_kernel" : k.entry_symbol();
    TIR_RETURN_IF_ERROR(s.driver->Check(api.cuModuleGetFunction(&fn, module, entry.c_str()), "cuModuleGetFunction"));
    const uint32_t smem = k.launch().dynamic_shared_memory_bytes();
    if (smem > 48 * 1024) {
      TIR_RETURN_IF_ERROR(s.driver->Check(
          api.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(smem)),
          "cuFuncSetAttribute"));
    }
    s.functions.push_back(fn);
  }
  s.workspaces.assign(bundle.kernels_size(), 0);
  return runner;
}

CudaBundleRunner::~CudaBundleRunner() {
  if (!state_ || !state_->driver) return;
  const auto &api = state_->driver->api();
  if (state_->context) api.cuCtxSetCurrent(state_->context);
  for (auto &[key, p] : state_->scratch) api.cuMemFree(p);
  for (CUdeviceptr p : state_->workspaces) {
    if (p) api.cuMemFree(p);
  }
  for (CUmodule m : state_->modules) api.cuModuleUnload(m);
  if (state_->context) api.cuDevicePrimaryCtxRelease(state_->device);
}

absl::Status CudaBundleRunner::Launch(const std::vector<DeviceTensor> &inputs, const std::vector<DeviceTensor> &outputs,
                                      void *stream) {
  State &s = *state_;
  const auto &api = s.driver->api();
  TIR_RETURN_IF_ERROR(s.driver->Check(api.cuCtxSetCurrent(s.context), "cuCtxSetCurrent"));
  if (inputs.size() != static_cast<size_t>(s.bundle.inputs_size()) ||
      outputs.size() != static_cast<size_t>(s.bundle.outputs_size())) {
    return Mismatch(absl::StrCat("the bundle takes ", s.bundle.inputs_size(), " inputs and ", s.bundle.outputs_size(),
                                 " outputs, got ", inputs.size(), " and ", outputs.size()));
  }
  LaunchTensors layouts;
  std::map<Key, CUdeviceptr> pointers;
  auto bind = [&](Key key, const DeviceTensor *given, bool output, const std::string &what) -> absl::Status {
    const tir::v1::TensorType &t = s.types.at(key);
    const std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
    const codegen::LayoutContract contract = codegen::ContractOf(t);
    std::vector<int64_t> strides =
        t.scalar() ? std::vector<int64_t>{} : codegen::LayoutStrides(shape, contract);
    CUdeviceptr p = 0;
    if (given != nullptr) {
      p = given->pointer;
      if (!given->strides.empty()) {
        if (given->strides.size() != shape.size()) return Mismatch(absl::StrCat(what, ": ", given->strides.size(),
                                                                                " strides for rank ", shape.size()));
        strides = given->strides;
      }
      if (!t.scalar()) {
        TIR_RETURN_IF_ERROR(codegen::CheckLaunchContract(contract, reinterpret_cast<const void *>(p), shape, strides,
                                                         output, what));
      }
    } else {
      auto it = s.scratch.find(key);
      if (it == s.scratch.end()) {
        const int64_t bytes = std::max<int64_t>(
            8, reference::BufferBytes(static_cast<reference::DType>(t.dtype()), shape, strides));
        TIR_RETURN_IF_ERROR(s.driver->Check(api.cuMemAlloc(&p, bytes), "cuMemAlloc"));
        it = s.scratch.emplace(key, p).first;
      }
      p = it->second;
    }
    layouts[key] = LaunchTensor{t.dtype(), shape, strides};
    pointers[key] = p;
    return absl::OkStatus();
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    TIR_RETURN_IF_ERROR(bind({tir::v1::TensorRef::INPUT, i}, &inputs[i], false, absl::StrCat("input ", i)));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    TIR_RETURN_IF_ERROR(bind({tir::v1::TensorRef::OUTPUT, i}, &outputs[i], true, absl::StrCat("output ", i)));
  }
  for (int i = 0; i < s.bundle.intermediates_size(); ++i) {
    TIR_RETURN_IF_ERROR(bind({tir::v1::TensorRef::INTERMEDIATE, static_cast<uint32_t>(i)}, nullptr, false, ""));
  }
  for (int ki = 0; ki < s.bundle.kernels_size(); ++ki) {
    const tir::v1::KernelEntry &k = s.bundle.kernels(ki);
    const std::vector<int64_t> domain(k.iteration_domain().begin(), k.iteration_domain().end());
    TIR_ASSIGN_OR_RETURN(std::vector<LaunchField> fields, KernelFields(k, layouts));
    const ParamLayout layout = CudaParamLayout(fields);
    std::vector<uint8_t> params(layout.bytes, 0);
    for (size_t f = 0; f < fields.size(); ++f) {
      const LaunchField &field = fields[f];
      uint8_t *at = params.data() + layout.offsets[f];
      const Key key{field.tensor_kind, field.tensor_index};
      switch (field.kind) {
        case LaunchField::kPointer:
          std::memcpy(at, &pointers.at(key), 8);
          break;
        case LaunchField::kArray:
          std::memcpy(at, field.values.data(), 8 * field.values.size());
          break;
        case LaunchField::kScalar:
          // A scalar input's value is read from device memory at the pointer
          // given for it (the bundle's inputs are all device tensors).
          TIR_RETURN_IF_ERROR(s.driver->Check(api.cuMemcpyDtoH(at, pointers.at(key), field.bytes), "cuMemcpyDtoH"));
          break;
        case LaunchField::kWorkspace: {
          if (s.workspaces[ki] == 0) {
            TIR_ASSIGN_OR_RETURN(int64_t bytes, codegen::LaunchWorkspaceBytes(k.launch(), domain));
            CUdeviceptr p = 0;
            TIR_RETURN_IF_ERROR(s.driver->Check(api.cuMemAlloc(&p, std::max<int64_t>(8, bytes)), "cuMemAlloc"));
            TIR_RETURN_IF_ERROR(s.driver->Check(api.cuMemsetD8(p, 0, std::max<int64_t>(8, bytes)), "cuMemsetD8"));
            s.workspaces[ki] = p;  // the kernel leaves it zeroed again
          }
          std::memcpy(at, &s.workspaces[ki], 8);
          break;
        }
        case LaunchField::kTensorMap: {
          const LaunchTensor &t = layouts.at(key);
          const int elem = reference::StorageBytes(t.dtype);
          const CUdeviceptr base = pointers.at(key);
          if (!codegen::TensorMapEncodable(base, t.shape, t.strides, elem)) break;  // the kernel loads without TMA
          if (api.cuTensorMapEncodeTiled == nullptr) {
            return MakeError(absl::StatusCode::kFailedPrecondition, "CUDA_DRIVER_UNAVAILABLE",
                             "the kernel loads by TMA and the driver has no cuTensorMapEncodeTiled (CUDA 12 or newer)");
          }
          if (field.box.size() < 2) return NotRunnable("a tensor-map argument without its box");
          CUtensorMap map;
          const cuuint64_t dims[2] = {static_cast<cuuint64_t>(t.shape[1]), static_cast<cuuint64_t>(t.shape[0])};
          const cuuint64_t strides[1] = {static_cast<cuuint64_t>(t.strides[0] * elem)};
          const cuuint32_t box[2] = {field.box[0], field.box[1]}, element[2] = {1, 1};
          TIR_RETURN_IF_ERROR(s.driver->Check(
              api.cuTensorMapEncodeTiled(&map,
                                         t.dtype == tir::v1::DTYPE_BF16  ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                         : t.dtype == tir::v1::DTYPE_F32 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                                                         : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                                         2, reinterpret_cast<void *>(static_cast<uintptr_t>(base)), dims, strides, box,
                                         element, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                         CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
              "cuTensorMapEncodeTiled"));
          std::memcpy(at, &map, sizeof(map));
          break;
        }
      }
    }
    TIR_ASSIGN_OR_RETURN(const auto grid, codegen::LaunchGrid(k.launch(), domain));
    unsigned block[3] = {1, 1, 1};
    for (int i = 0; i < k.launch().block_size() && i < 3; ++i) block[i] = std::max(1u, k.launch().block(i));
    // A kernel of thread-block clusters launches with its cluster dimensions.
    unsigned cluster[3] = {1, 1, 1};
    for (int i = 0; i < k.launch().cluster_size() && i < 3; ++i) cluster[i] = std::max(1u, k.launch().cluster(i));
    void *args[] = {params.data()};
    TIR_RETURN_IF_ERROR(s.driver->Check(s.driver->Launch(s.functions[ki], grid.data(), block, cluster,
                                                         k.launch().dynamic_shared_memory_bytes(),
                                                         static_cast<CUstream>(stream), args),
                                        absl::StrCat("cuLaunchKernel (kernel ", k.partition(), ")")));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<reference::Tensor>> RunCudaBundle(const tir::v1::KernelBundle &bundle,
                                                             const std::vector<reference::Tensor> &inputs,
                                                             const std::string &bundle_key, int device) {
  if (inputs.size() != static_cast<size_t>(bundle.inputs_size())) {
    return Mismatch(absl::StrCat("the bundle takes ", bundle.inputs_size(), " inputs, got ", inputs.size()));
  }
  TIR_ASSIGN_OR_RETURN(std::unique_ptr<CudaBundleRunner> runner, CudaBundleRunner::Load(bundle, bundle_key, device));
  auto driver = cuda::CudaDriver::Load();
  if (!driver.ok()) return driver.status();
  const auto &api = (*driver)->api();
  struct Buffer {
    reference::DType dtype;
    std::vector<int64_t> shape, strides;
    CUdeviceptr pointer = 0;
    int64_t bytes = 0;
  };
  std::vector<Buffer> buffers;
  auto release = [&] {
    for (Buffer &b : buffers) {
      if (b.pointer) api.cuMemFree(b.pointer);
    }
  };
  auto alloc = [&](const tir::v1::TensorType &t, const reference::Tensor *value) -> absl::Status {
    Buffer b;
    b.dtype = static_cast<reference::DType>(t.dtype());
    b.shape.assign(t.shape().begin(), t.shape().end());
    b.strides = t.scalar() ? std::vector<int64_t>{} : codegen::LayoutStrides(b.shape, codegen::ContractOf(t));
    b.bytes = std::max<int64_t>(8, reference::BufferBytes(b.dtype, b.shape, b.strides));
    TIR_RETURN_IF_ERROR((*driver)->Check(api.cuMemAlloc(&b.pointer, b.bytes), "cuMemAlloc"));
    buffers.push_back(b);
    std::vector<uint8_t> host(b.bytes, value ? 0 : 0xff);
    if (value != nullptr) {
      if (value->shape != b.shape) return Mismatch("an input does not have the bundle's shape");
      reference::ToBuffer(*value, b.strides, host.data());
    }
    return (*driver)->Check(api.cuMemcpyHtoD(b.pointer, host.data(), host.size()), "cuMemcpyHtoD");
  };
  absl::Status status = absl::OkStatus();
  for (int i = 0; i < bundle.inputs_size() && status.ok(); ++i) status = alloc(bundle.inputs(i), &inputs[i]);
  for (int i = 0; i < bundle.outputs_size() && status.ok(); ++i) status = alloc(bundle.outputs(i), nullptr);
  std::vector<DeviceTensor> in, out;
  for (size_t i = 0; i < buffers.size(); ++i) {
    (i < static_cast<size_t>(bundle.inputs_size()) ? in : out).push_back(DeviceTensor{buffers[i].pointer, buffers[i].strides});
  }
  if (status.ok()) status = runner->Launch(in, out, nullptr);
  if (status.ok()) status = (*driver)->Check(api.cuCtxSynchronize(), "running the bundle");
  std::vector<reference::Tensor> results;
  for (int i = 0; i < bundle.outputs_size() && status.ok(); ++i) {
    const Buffer &b = buffers[bundle.inputs_size() + i];
    std::vector<uint8_t> host(b.bytes);
    status = (*driver)->Check(api.cuMemcpyDtoH(host.data(), b.pointer, b.bytes), "cuMemcpyDtoH");
    if (status.ok()) results.push_back(reference::FromBuffer(b.dtype, b.shape, b.strides, host.data()));
  }
  release();
  if (!status.ok()) return status;
  return results;
}

}  // namespace tir::client
