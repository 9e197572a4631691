// The host backend: a generated kernel built by the system C++ compiler into
// a shared object, loaded with dlopen and run on the CPU.

#ifndef TIR_COMPILER_CODEGEN_HOSTBUILD_H_
#define TIR_COMPILER_CODEGEN_HOSTBUILD_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/codegen/Emitter.h"
#include "compiler/reference/Tensor.h"

namespace tir::codegen {

class HostKernel {
 public:
  using CallFn = void (*)(void **fields, unsigned gx, unsigned gy, unsigned gz);
  HostKernel(void *handle, CallFn call, std::string path) : handle_(handle), call_(call), path_(std::move(path)) {}
  ~HostKernel();
  HostKernel(const HostKernel &) = delete;
  HostKernel &operator=(const HostKernel &) = delete;

  void Call(void **fields, unsigned gx, unsigned gy, unsigned gz) const { call_(fields, gx, gy, gz); }
  const std::string &path() const { return path_; }

 private:
  void *handle_;
  CallFn call_;
  std::string path_;
};

// Compiles `kernel` with the system C++ compiler (`c++`, or $TIR_HOST_CXX) in
// `work_dir` and loads it. Errors: INVALID_ARGUMENT / HOST_COMPILE_FAILED
// with the compiler's output.
absl::StatusOr<std::unique_ptr<HostKernel>> BuildHostKernel(const EmittedKernel &kernel, const std::string &work_dir);

// Runs a host-built kernel graph on `inputs` (dense tensors, one per kernel
// argument): lays inputs out with the graph's strides, poisons the outputs
// (every byte 0xff), resolves dynamic extents from the inputs, and returns the
// outputs read back. Errors: INVALID_ARGUMENT for mismatched inputs.
absl::StatusOr<std::vector<reference::Tensor>> RunOnHost(GraphOp kernel, const EmittedKernel &emitted,
                                                         const HostKernel &built,
                                                         const std::vector<reference::Tensor> &inputs);

}  // namespace tir::codegen

#endif  // TIR_COMPILER_CODEGEN_HOSTBUILD_H_
