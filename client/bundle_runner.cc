#include "client/bundle_runner.h"

#include <unistd.h>

#include <dlfcn.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "absl/strings/str_cat.h"
#include "compiler/codegen/HostBuild.h"
#include "compiler/codegen/LaunchContract.h"
#include "client/bundle_signature.h"
#include "compiler/support/status.h"

namespace tir::client {
namespace {

absl::Status Precondition(const std::string &m) {
  return MakeError(absl::StatusCode::kFailedPrecondition, "FAILED_PRECONDITION", m);
}

// One graph-level tensor in memory.
struct Buffer {
  reference::DType dtype;
  std::vector<int64_t> shape, strides;
  bool scalar = false;
  codegen::HostLaunch::Bytes bytes;  // 256-byte aligned
  void *pointer = nullptr;  // what a POINTER field holds
};

}  // namespace

absl::StatusOr<std::vector<LaunchField>> KernelFields(const tir::v1::KernelEntry &k, const LaunchTensors &tensors) {
  const std::vector<int64_t> domain(k.iteration_domain().begin(), k.iteration_domain().end());
  auto valueOf = [&](const tir::v1::KernelArgument &a) -> absl::StatusOr<int64_t> {
    if (a.tensor().kind() == tir::v1::TensorRef::ITERATION_DOMAIN) {
      if (domain.empty() && a.dim() == 0) return int64_t{1};  // a rank-0 domain's one entry
      if (a.dim() >= domain.size()) return Precondition("argument reads a missing domain dim");
      return domain[a.dim()];
    }
    auto it = tensors.find({a.tensor().kind(), a.tensor().index()});
    if (it == tensors.end()) return Precondition("argument names a tensor the bundle lacks");
    const std::vector<int64_t> &v = a.kind() == tir::v1::KernelArgument::SIZE ? it->second.shape : it->second.strides;
    return a.dim() < v.size() ? v[a.dim()] : 1;
  };
  std::vector<LaunchField> fields;
  for (int i = 0; i < k.arguments_size(); ++i) {
    const tir::v1::KernelArgument &a = k.arguments(i);
    LaunchField f;
    f.tensor_kind = a.tensor().kind();
    f.tensor_index = a.tensor().index();
    const bool named = tensors.count({a.tensor().kind(), a.tensor().index()}) > 0;
    switch (a.kind()) {
      case tir::v1::KernelArgument::POINTER:
        if (!named) return Precondition("argument names a tensor the bundle lacks");
        f.kind = LaunchField::kPointer;
        break;
      case tir::v1::KernelArgument::WORKSPACE:
        f.kind = LaunchField::kWorkspace;
        break;
      case tir::v1::KernelArgument::TENSOR_MAP:
        if (!named) return Precondition("argument names a tensor the bundle lacks");
        f.kind = LaunchField::kTensorMap;
        f.bytes = 128;
        f.box.assign(a.box().begin(), a.box().end());
        break;
      case tir::v1::KernelArgument::SCALAR:
        if (!named) return Precondition("argument names a tensor the bundle lacks");
        f.kind = LaunchField::kScalar;
        f.bytes = std::max(1, reference::StorageBytes(tensors.at({a.tensor().kind(), a.tensor().index()}).dtype));
        break;
      case tir::v1::KernelArgument::SIZE:
      case tir::v1::KernelArgument::STRIDE:
        f.kind = LaunchField::kArray;
        for (; i < k.arguments_size(); ++i) {
          const tir::v1::KernelArgument &b = k.arguments(i);
          if (b.kind() != a.kind() || b.tensor().kind() != a.tensor().kind() || b.tensor().index() != a.tensor().index() ||
              b.dim() != f.values.size()) {
            break;
          }
          TIR_ASSIGN_OR_RETURN(int64_t v, valueOf(b));
          f.values.push_back(v);
        }
        --i;
        f.bytes = 8 * f.values.size();
        break;
      default:
        return Precondition(absl::StrCat("argument ", i, " has an unknown kind"));
    }
    fields.push_back(std::move(f));
  }
  return fields;
}

ParamLayout CudaParamLayout(const std::vector<LaunchField> &fields) {
  ParamLayout layout;
  size_t at = 0;
  for (const LaunchField &f : fields) {
    const size_t align = f.kind == LaunchField::kTensorMap ? 64
                         : f.kind == LaunchField::kScalar  ? std::min<size_t>(8, f.bytes)
                                                           : 8;
    layout.align = std::max(layout.align, align);
    at = (at + align - 1) / align * align;
    layout.offsets.push_back(at);
    at += f.bytes;
  }
  layout.bytes = (at + layout.align - 1) / layout.align * layout.align;
  return layout;
}

absl::StatusOr<std::vector<reference::Tensor>> RunHostBundle(const tir::v1::KernelBundle &bundle,
                                                             const std::vector<reference::Tensor> &inputs,
                                                             const std::string &work_dir,
                                                             const std::string &bundle_key) {
  if (!bundle_key.empty()) TIR_RETURN_IF_ERROR(CheckBundleSignature(bundle, bundle_key));
  TIR_RETURN_IF_ERROR(CheckBinaryHashes(bundle));
  if (inputs.size() != static_cast<size_t>(bundle.inputs_size())) {
    return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_ARGUMENT",
                     absl::StrCat("the bundle takes ", bundle.inputs_size(), " inputs, got ", inputs.size()));
  }
  // Memory for every tensor the bundle names.
  std::map<std::pair<int, uint32_t>, Buffer> tensors;
  auto make = [&](tir::v1::TensorRef::Kind kind, uint32_t index, const tir::v1::TensorType &t) -> absl::Status {
    Buffer b;
    b.dtype = static_cast<reference::DType>(t.dtype());
    b.scalar = t.scalar();
    b.shape.assign(t.shape().begin(), t.shape().end());
    for (int64_t d : b.shape) {
      if (d < 0) return Precondition("the bundle has dynamic extents; give concrete sizes");
    }
    // Laid out as declared (a `?` stride: row-major, padded to its divisor).
    const codegen::LayoutContract contract = codegen::ContractOf(t);
    b.strides = b.scalar ? std::vector<int64_t>{} : codegen::LayoutStrides(b.shape, contract);
    b.bytes.assign(std::max<int64_t>(8, reference::BufferBytes(b.dtype, b.shape, b.strides)),
                   kind == tir::v1::TensorRef::INPUT ? 0 : 0xff);
    if (!b.scalar) {
      TIR_RETURN_IF_ERROR(codegen::CheckLaunchContract(contract, b.bytes.data(), b.shape, b.strides,
                                                       kind == tir::v1::TensorRef::OUTPUT,
                                                       absl::StrCat("bundle tensor ", kind, ":", index)));
    }
    tensors[{kind, index}] = std::move(b);
    return absl::OkStatus();
  };
  for (int i = 0; i < bundle.inputs_size(); ++i) TIR_RETURN_IF_ERROR(make(tir::v1::TensorRef::INPUT, i, bundle.inputs(i)));
  for (int i = 0; i < bundle.outputs_size(); ++i) TIR_RETURN_IF_ERROR(make(tir::v1::TensorRef::OUTPUT, i, bundle.outputs(i)));
  for (int i = 0; i < bundle.intermediates_size(); ++i) {
    TIR_RETURN_IF_ERROR(make(tir::v1::TensorRef::INTERMEDIATE, i, bundle.intermediates(i)));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    Buffer &b = tensors[{tir::v1::TensorRef::INPUT, static_cast<uint32_t>(i)}];
    if (inputs[i].shape != b.shape || inputs[i].scalar != b.scalar) {
      return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_ARGUMENT",
                       absl::StrCat("input ", i, " does not have the bundle's shape"));
    }
    reference::ToBuffer(inputs[i], b.scalar ? std::vector<int64_t>{} : b.strides, b.bytes.data());
  }
  LaunchTensors layouts;
  for (auto &[ref, b] : tensors) {
    b.pointer = b.bytes.data();
    layouts[ref] = LaunchTensor{b.dtype, b.shape, b.strides};
  }

  for (const tir::v1::KernelEntry &k : bundle.kernels()) {
    if (k.format() != tir::v1::BINARY_FORMAT_HOST_SHARED_OBJECT) return Precondition("not a host bundle");
    // A new file in a directory only this user may write, named by nothing
    // the server sent, read back and hashed before it is loaded; removed
    // once loaded (the mapping stays).
    TIR_ASSIGN_OR_RETURN(const std::string so, WriteCheckedBinary(work_dir, absl::StrCat("k", k.partition(), "_so"),
                                                                 k.binary(), k.binary_sha256()));
    void *handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    ::unlink(so.c_str());
    if (handle == nullptr) return MakeError(absl::StatusCode::kInternal, "INTERNAL", absl::StrCat("dlopen ", dlerror()));
    using CallFn = void (*)(void **, unsigned, unsigned, unsigned);
    auto call = reinterpret_cast<CallFn>(dlsym(handle, "tir_host_call"));
    if (call == nullptr) {
      dlclose(handle);
      return Precondition("the kernel has no tir_host_call");
    }
    std::vector<int64_t> domain(k.iteration_domain().begin(), k.iteration_domain().end());
    for (int64_t d : domain) {
      if (d < 0) return Precondition("the bundle has dynamic extents; give concrete sizes");
    }
    absl::StatusOr<std::vector<LaunchField>> launchFields = KernelFields(k, layouts);
    if (!launchFields.ok()) {
      dlclose(handle);
      return launchFields.status();
    }
    // tir_host_call takes a pointer to each field's storage.
    std::vector<std::vector<int64_t>> arrays;
    std::vector<std::array<uint8_t, 8>> scalars;
    std::vector<std::vector<uint8_t>> workspaces;
    std::vector<void *> workspacePointers;
    arrays.reserve(launchFields->size());
    scalars.reserve(launchFields->size());
    workspaces.reserve(launchFields->size());
    workspacePointers.reserve(launchFields->size());
    std::vector<void *> fields;
    for (const LaunchField &f : *launchFields) {
      if (f.kind == LaunchField::kTensorMap) {
        dlclose(handle);
        return Precondition("the kernel takes a TMA tensor map: it runs on an sm_90 GPU, not on the host");
      }
      if (f.kind == LaunchField::kWorkspace) {
        absl::StatusOr<int64_t> bytes = codegen::LaunchWorkspaceBytes(k.launch(), domain);
        if (!bytes.ok()) return Precondition(std::string(bytes.status().message()));
        workspaces.emplace_back(std::max<int64_t>(8, *bytes), 0);
        workspacePointers.push_back(workspaces.back().data());
        fields.push_back(&workspacePointers.back());
      } else if (f.kind == LaunchField::kPointer) {
        fields.push_back(&tensors[{f.tensor_kind, f.tensor_index}].pointer);
      } else if (f.kind == LaunchField::kScalar) {
        std::array<uint8_t, 8> v{};
        std::memcpy(v.data(), tensors[{f.tensor_kind, f.tensor_index}].bytes.data(), 8);
        scalars.push_back(v);
        fields.push_back(scalars.back().data());
      } else {
        arrays.push_back(f.values);
        fields.push_back(arrays.back().data());
      }
    }
    absl::StatusOr<std::array<unsigned, 3>> grid = codegen::LaunchGrid(k.launch(), domain);
    if (!grid.ok()) {
      dlclose(handle);
      return Precondition(std::string(grid.status().message()));
    }
    call(fields.data(), (*grid)[0], (*grid)[1], (*grid)[2]);
    dlclose(handle);
  }
  std::vector<reference::Tensor> out;
  for (int i = 0; i < bundle.outputs_size(); ++i) {
    const Buffer &b = tensors[{tir::v1::TensorRef::OUTPUT, static_cast<uint32_t>(i)}];
    out.push_back(reference::FromBuffer(b.dtype, b.shape, b.strides, b.bytes.data()));
  }
  return out;
}

}  // namespace tir::client
