// The kernel parameter struct, packed once for every launcher.
//
// A generated kernel takes one struct `tir_args` by value (on sm_90a as a
// __grid_constant__ parameter holding the TMA tensor maps). A GPU launch
// passes its bytes as the one kernel parameter; the lane emulator takes the
// same bytes and copies them into its tir_args. Both get them from here:
// the fields in order, each at the next multiple of its alignment (the
// C++ ABI of x86-64 and of the CUDA device agree for these types: 8-byte
// pointers and int64 arrays, scalars aligned to their size, 128-byte
// tensor maps aligned to 64), the struct padded to its largest alignment.
// ParamPackingTest holds this against the offsetof values of the kernel's
// own struct as the host compiler and NVRTC lay it out.

#ifndef TIR_COMPILER_CODEGEN_PARAMPACKING_H_
#define TIR_COMPILER_CODEGEN_PARAMPACKING_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/codegen/HostBuild.h"

namespace tir::codegen {

struct ParamLayout {
  std::vector<size_t> offsets;  // per field of tir_args, in bytes
  size_t bytes = 0;             // sizeof(tir_args)
  size_t align = 1;             // alignof(tir_args)
};

// The layout of a kernel's tir_args from its fields (HostLaunch::Fields).
ParamLayout LayOutParams(const std::vector<HostLaunch::FieldView> &fields);

// Writes a tensor-map field's 128 bytes at `dst` (zeroed): a GPU launcher
// encodes the map with the driver.
using TensorMapWriter = std::function<absl::Status(const HostLaunch::FieldView &field, uint8_t *dst)>;

// The parameter bytes (layout.bytes, padding zero): a buffer field holds
// `address(buffer)` (a host or device address), a value field its bytes, a
// tensor-map field what `tensor_map` writes, by default the emulator's
// encoding the view holds. Errors: INVALID_ARGUMENT when a field does not
// fit the layout; the writer's.
absl::StatusOr<HostLaunch::Bytes> PackParams(const std::vector<HostLaunch::FieldView> &fields,
                                             const ParamLayout &layout, const std::function<uint64_t(int buffer)> &address,
                                             const TensorMapWriter &tensor_map = nullptr);

}  // namespace tir::codegen

#endif  // TIR_COMPILER_CODEGEN_PARAMPACKING_H_
