#include "client/bundle_runner.h"

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

absl::StatusOr<std::vector<reference::Tensor>> RunHostBundle(const tir::v1::KernelBundle &bundle,
                                                             const std::vector<reference::Tensor> &inputs,
                                                             const std::string &work_dir,
                                                             const std::string &bundle_key) {
  if (!bundle_key.empty()) TIR_RETURN_IF_ERROR(CheckBundleSignature(bundle, bundle_key));
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
  for (auto &[ref, b] : tensors) b.pointer = b.bytes.data();

  std::error_code ec;
  std::filesystem::create_directories(work_dir, ec);
  for (const tir::v1::KernelEntry &k : bundle.kernels()) {
    if (k.format() != tir::v1::BINARY_FORMAT_HOST_SHARED_OBJECT) return Precondition("not a host bundle");
    const std::string so = absl::StrCat(work_dir, "/", bundle.key().substr(0, 16), "_k", k.partition(), ".so");
    std::ofstream(so, std::ios::binary) << k.binary();
    void *handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
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
    // The struct's fields: runs of SIZE / STRIDE records of one tensor form
    // one array field; every other record is a field of its own.
    std::vector<std::vector<int64_t>> arrays;
    std::vector<std::array<uint8_t, 8>> scalars;
    arrays.reserve(k.arguments_size());
    scalars.reserve(k.arguments_size());
    std::vector<void *> fields;
    std::vector<std::vector<uint8_t>> workspaces;
    workspaces.reserve(k.arguments_size());
    std::vector<void *> workspacePointers;
    workspacePointers.reserve(k.arguments_size());
    auto valueOf = [&](const tir::v1::KernelArgument &a) -> absl::StatusOr<int64_t> {
      if (a.tensor().kind() == tir::v1::TensorRef::ITERATION_DOMAIN) {
        if (a.dim() >= domain.size()) return Precondition("argument reads a missing domain dim");
        return domain[a.dim()];
      }
      auto it = tensors.find({a.tensor().kind(), a.tensor().index()});
      if (it == tensors.end()) return Precondition("argument names a tensor the bundle lacks");
      const std::vector<int64_t> &v = a.kind() == tir::v1::KernelArgument::SIZE ? it->second.shape : it->second.strides;
      return a.dim() < v.size() ? v[a.dim()] : 1;
    };
    for (int i = 0; i < k.arguments_size(); ++i) {
      const tir::v1::KernelArgument &a = k.arguments(i);
      auto it = tensors.find({a.tensor().kind(), a.tensor().index()});
      if (a.kind() == tir::v1::KernelArgument::TENSOR_MAP) {
        dlclose(handle);
        return Precondition("the kernel takes a TMA tensor map: it runs on an sm_90 GPU, not on the host");
      } else if (a.kind() == tir::v1::KernelArgument::WORKSPACE) {
        absl::StatusOr<int64_t> bytes = codegen::LaunchWorkspaceBytes(k.launch(), domain);
        if (!bytes.ok()) return Precondition(std::string(bytes.status().message()));
        workspaces.emplace_back(std::max<int64_t>(8, *bytes), 0);
        workspacePointers.push_back(workspaces.back().data());
        fields.push_back(&workspacePointers.back());
      } else if (a.kind() == tir::v1::KernelArgument::POINTER) {
        if (it == tensors.end()) return Precondition("argument names a tensor the bundle lacks");
        fields.push_back(&it->second.pointer);
      } else if (a.kind() == tir::v1::KernelArgument::SCALAR) {
        if (it == tensors.end()) return Precondition("argument names a tensor the bundle lacks");
        std::array<uint8_t, 8> v{};
        std::memcpy(v.data(), it->second.bytes.data(), 8);
        scalars.push_back(v);
        fields.push_back(scalars.back().data());
      } else {
        arrays.emplace_back();
        for (; i < k.arguments_size(); ++i) {
          const tir::v1::KernelArgument &b = k.arguments(i);
          if (b.kind() != a.kind() || b.tensor().kind() != a.tensor().kind() || b.tensor().index() != a.tensor().index() ||
              b.dim() != arrays.back().size()) {
            break;
          }
          TIR_ASSIGN_OR_RETURN(int64_t v, valueOf(b));
          arrays.back().push_back(v);
        }
        --i;
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
