#include "compiler/codegen/ParamPacking.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "compiler/support/status.h"

namespace tir::codegen {
namespace {

// A field's bytes in the struct.
size_t SizeOf(const HostLaunch::FieldView &f) { return f.map ? 128 : f.buffer >= 0 ? sizeof(uint64_t) : f.bytes; }

size_t AlignOf(const HostLaunch::FieldView &f) {
  const size_t a = f.map ? 64 : f.buffer >= 0 ? sizeof(uint64_t) : f.align;
  return a == 0 ? 1 : a;
}

}  // namespace

ParamLayout LayOutParams(const std::vector<HostLaunch::FieldView> &fields) {
  ParamLayout layout;
  size_t at = 0;
  for (const HostLaunch::FieldView &f : fields) {
    const size_t align = AlignOf(f);
    at = (at + align - 1) / align * align;
    layout.offsets.push_back(at);
    at += SizeOf(f);
    layout.align = std::max(layout.align, align);
  }
  layout.bytes = std::max<size_t>(1, (at + layout.align - 1) / layout.align * layout.align);
  return layout;
}

absl::StatusOr<HostLaunch::Bytes> PackParams(const std::vector<HostLaunch::FieldView> &fields,
                                             const ParamLayout &layout, const std::function<uint64_t(int buffer)> &address,
                                             const TensorMapWriter &tensor_map) {
  if (layout.offsets.size() != fields.size()) {
    return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_ARGUMENT",
                     absl::StrCat("a layout of ", layout.offsets.size(), " fields for ", fields.size()));
  }
  HostLaunch::Bytes out(layout.bytes, 0);
  for (size_t i = 0; i < fields.size(); ++i) {
    const HostLaunch::FieldView &f = fields[i];
    const size_t at = layout.offsets[i], n = SizeOf(f);
    if (at + n > out.size()) {
      return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_ARGUMENT",
                       absl::StrCat("field ", i, " (", n, " bytes at ", at, ") is outside the ", out.size(),
                                    "-byte parameter struct"));
    }
    if (f.map && tensor_map) {
      TIR_RETURN_IF_ERROR(tensor_map(f, out.data() + at));
    } else if (f.buffer >= 0) {
      const uint64_t p = address(f.buffer);
      std::memcpy(out.data() + at, &p, sizeof(p));
    } else if (f.value != nullptr) {
      std::memcpy(out.data() + at, f.value, n);
    }
  }
  return out;
}

}  // namespace tir::codegen
