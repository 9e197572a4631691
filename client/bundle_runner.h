// Runs a host bundle (BINARY_FORMAT_HOST_SHARED_OBJECT) on the CPU from what
// the bundle itself says: its input/output/intermediate types, each kernel's
// argument records, iteration domain and launch rule. What a framework's
// launcher does with a cubin bundle, on the host backend; also how tests
// check that a returned bundle computes the graph.

#ifndef TIR_CLIENT_BUNDLE_RUNNER_H_
#define TIR_CLIENT_BUNDLE_RUNNER_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/reference/Tensor.h"
#include "tir/v1/kernel.pb.h"

namespace tir::client {

// One field of a kernel's parameter struct, from its KernelArgument records:
// a run of SIZE or STRIDE records of one tensor is one int64 array field.
struct LaunchField {
  enum Kind { kPointer, kArray, kScalar, kWorkspace, kTensorMap };
  Kind kind = kPointer;
  tir::v1::TensorRef::Kind tensor_kind = tir::v1::TensorRef::KIND_UNSPECIFIED;
  uint32_t tensor_index = 0;
  std::vector<int64_t> values;  // kArray
  size_t bytes = 8;             // pointer 8, array 8 per value, scalar its dtype's, tensor map 128
  std::vector<uint32_t> box;    // kTensorMap (inner first)
};

// Shape and strides (elements) of a bundle tensor at one launch.
struct LaunchTensor {
  tir::v1::DType dtype = tir::v1::DTYPE_UNSPECIFIED;
  std::vector<int64_t> shape, strides;
};
using LaunchTensors = std::map<std::pair<int, uint32_t>, LaunchTensor>;

// The fields of `kernel` with sizes and strides read from `tensors` (keyed
// by TensorRef kind and index) and the kernel's iteration domain.
// Errors: FAILED_PRECONDITION for records naming what the bundle lacks.
absl::StatusOr<std::vector<LaunchField>> KernelFields(const tir::v1::KernelEntry &kernel, const LaunchTensors &tensors);

// Where each field sits in the CUDA parameter struct (every field at its
// natural alignment: pointers, sizes and strides 8 bytes, a scalar its own
// size, a tensor map 128 bytes at 64) and the struct's size, rounded to its
// alignment. The Python runner lays the struct out the same way.
struct ParamLayout {
  std::vector<size_t> offsets;
  size_t bytes = 0;
  size_t align = 8;
};
ParamLayout CudaParamLayout(const std::vector<LaunchField> &fields);

// Runs every kernel of `bundle` in order on `inputs` (dense, one per graph
// input) and returns the graph outputs. Outputs and intermediates are
// poisoned (0xff) first. `work_dir` holds the loaded shared objects.
// With `bundle_key`, the bundle's signature is checked before anything is
// loaded (client/bundle_signature.h).
// Errors: FAILED_PRECONDITION for a bundle that is not a host bundle or has
// dynamic extents, or whose signature does not check (BUNDLE_UNSIGNED,
// BUNDLE_KEY_MISMATCH, BUNDLE_SIGNATURE_INVALID); INVALID_ARGUMENT for inputs
// that do not match it.
absl::StatusOr<std::vector<reference::Tensor>> RunHostBundle(const tir::v1::KernelBundle &bundle,
                                                             const std::vector<reference::Tensor> &inputs,
                                                             const std::string &work_dir,
                                                             const std::string &bundle_key = "");

}  // namespace tir::client

#endif  // TIR_CLIENT_BUNDLE_RUNNER_H_
