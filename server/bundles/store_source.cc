#include "server/bundles/store_source.h"

namespace tir::bundles {

absl::StatusOr<std::optional<FoundBundle>> StoreSource::Find(const BundleQuery &query) {
  absl::StatusOr<tir::v1::KernelBundle> b = store_->GetKernel(query.key);
  if (absl::IsNotFound(b.status())) return std::nullopt;
  if (!b.ok()) return b.status();
  return FoundBundle{*std::move(b), query.shape == nullptr};
}

}  // namespace tir::bundles
