#include "server/bundles/shape_source.h"

#include "compiler/support/status.h"

namespace tir::bundles {

absl::StatusOr<std::optional<FoundBundle>> ShapeSource::Find(const BundleQuery &query) {
  // A static graph's bundle is served as found (handed on as it is: no copy).
  if (query.shape == nullptr) return inner_.Find(query);
  TIR_ASSIGN_OR_RETURN(std::optional<FoundBundle> found, inner_.Find(query));
  if (!found) return found;
  TIR_ASSIGN_OR_RETURN(std::optional<tir::v1::KernelBundle> at, sizer_.AtShape(found->bundle, *query.shape));
  if (!at) {
    found->servable = false;
    return found;
  }
  return FoundBundle{*std::move(at), true};
}

}  // namespace tir::bundles
