#include "compiler/ir/DimBounds.h"

#include "compiler/ir/TirDialect.h"
#include "llvm/ADT/StringExtras.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace tir {

std::optional<std::vector<int64_t>> parseDimBounds(mlir::Attribute value, mlir::RankedTensorType type,
                                                   std::string *why) {
  // Entries as given: a bound (>= 1) or -1 for none.
  std::vector<int64_t> entries;
  if (auto array = value.dyn_cast<mlir::DenseI64ArrayAttr>()) {
    entries.assign(array.asArrayRef().begin(), array.asArrayRef().end());
  } else if (auto text = value.dyn_cast<mlir::StringAttr>()) {
    llvm::StringRef s = text.getValue().trim();
    if (s.consume_front("[") && !s.consume_back("]")) {
      *why = "an opening [ without its ]";
      return std::nullopt;
    }
    llvm::SmallVector<llvm::StringRef> parts;
    s.split(parts, ',');
    for (llvm::StringRef part : parts) {
      part = part.trim();
      if (part.empty() && parts.size() == 1) break;  // "[]": rank 0
      if (part == "?") {
        entries.push_back(-1);
        continue;
      }
      part.consume_front("<=");
      part = part.trim();
      int64_t v = 0;
      if (part.getAsInteger(10, v)) {
        *why = "entry \"" + part.str() + "\" is not `<=N`, N or `?`";
        return std::nullopt;
      }
      entries.push_back(v);
    }
  } else {
    *why = "neither a string nor an array<i64>";
    return std::nullopt;
  }
  if (static_cast<int64_t>(entries.size()) != type.getRank()) {
    *why = std::to_string(entries.size()) + " entries for rank " + std::to_string(type.getRank());
    return std::nullopt;
  }
  std::vector<int64_t> out(entries.size());
  for (size_t d = 0; d < entries.size(); ++d) {
    const int64_t e = entries[d];
    if (e < -1 || e == 0 || e > kMaxDimension) {
      *why = "the entry of dim " + std::to_string(d) + " is " + std::to_string(e) +
             "; a bound is at least 1 and at most 2^40 (-1 or `?`: none)";
      return std::nullopt;
    }
    if (!type.isDynamicDim(d)) {
      if (e != -1 && e != type.getDimSize(d)) {
        *why = "dim " + std::to_string(d) + " is static (" + std::to_string(type.getDimSize(d)) +
               "); its entry must be its size or `?`, not " + std::to_string(e);
        return std::nullopt;
      }
      out[d] = type.getDimSize(d);
    } else {
      out[d] = e == -1 ? 0 : e;
    }
  }
  return out;
}

}  // namespace tir
