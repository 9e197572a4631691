#include "server/bundles/signing_source.h"

namespace tir::bundles {

absl::StatusOr<std::optional<FoundBundle>> SigningSource::Find(const BundleQuery &query) {
  absl::StatusOr<std::optional<FoundBundle>> found = inner_.Find(query);
  if (found.ok() && *found && (*found)->servable) signer_.Served((*found)->bundle);
  return found;
}

}  // namespace tir::bundles
