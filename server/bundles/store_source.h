// The kernel store as a BundleSource: the bundle stored under the key,
// servable as it is for a static graph.

#ifndef TIR_SERVER_BUNDLES_STORE_SOURCE_H_
#define TIR_SERVER_BUNDLES_STORE_SOURCE_H_

#include <memory>

#include "server/bundles/bundle_source.h"
#include "server/store/kernel_store.h"

namespace tir::bundles {

class StoreSource : public BundleSource {
 public:
  explicit StoreSource(std::shared_ptr<store::KernelStore> store) : store_(std::move(store)) {}
  absl::StatusOr<std::optional<FoundBundle>> Find(const BundleQuery &query) override;

 private:
  std::shared_ptr<store::KernelStore> store_;
};

}  // namespace tir::bundles

#endif  // TIR_SERVER_BUNDLES_STORE_SOURCE_H_
