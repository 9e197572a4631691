// What a graph promises about the memory of its inputs and outputs, and the
// check a launcher makes before running a kernel that relies on it.
//
// A graph may declare, per argument or result, `tir.alignment = A` (the base
// pointer is a multiple of A bytes) and strides with divisibility hints
// (`"(?{div=8},1)"`: the run-time stride is a multiple of 8). Kernels take
// wide accesses without run-time tests when these prove them safe
// (Emitter.cpp, ProvenRun), so a launch that breaks a declaration is refused
// with LAYOUT_CONTRACT_VIOLATED instead of computing a wrong result.

#ifndef TIR_COMPILER_CODEGEN_LAUNCHCONTRACT_H_
#define TIR_COMPILER_CODEGEN_LAUNCHCONTRACT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "compiler/ir/StrideAttr.h"
#include "compiler/ir/TirDialect.h"
#include "compiler/reference/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "tir/v1/graph.pb.h"

namespace tir::codegen {

struct LayoutContract {
  int64_t alignment = 0;           // bytes; 0: no promise
  std::optional<StrideSpec> spec;  // declared strides; none: row-major
};

// From a graph's signature attributes (tir.alignment, tir.stride).
LayoutContract ContractOf(mlir::DictionaryAttr attrs);
// From a bundle's tensor type (strides, stride_divisors, alignment).
LayoutContract ContractOf(const tir::v1::TensorType &type);

// The strides a launcher lays a tensor of `shape` out with: the declared
// static ones, and for a `?` the row-major stride rounded up to its `div`
// hint (padding), so the layout keeps every promise.
std::vector<int64_t> LayoutStrides(const std::vector<int64_t> &shape, const LayoutContract &contract);

// Whether a launch of a tensor of `shape` at `pointer` with `strides` keeps
// `contract`. An output's run-time (`?`) stride must not be 0 where the
// extent is above 1: a kernel stores through it from every index (declare
// the 0 statically to store one element). Errors: INVALID_ARGUMENT with
// reason LAYOUT_CONTRACT_VIOLATED naming `what`, the promise and what the
// launch gave.
absl::Status CheckLaunchContract(const LayoutContract &contract, const void *pointer,
                                 const std::vector<int64_t> &shape, const std::vector<int64_t> &strides,
                                 bool output, const std::string &what);

// The reference outputs of `kernel` as its output buffers hold them: along
// a dimension the graph declares with stride 0 only index 0 is stored (also
// their rounding scales; reference::NoRounding() entries stay as they are).
std::vector<reference::Tensor> AsStoredOutputs(GraphOp kernel, std::vector<reference::Tensor> outputs);

}  // namespace tir::codegen

#endif  // TIR_COMPILER_CODEGEN_LAUNCHCONTRACT_H_
