// Sizes what its inner source finds for the shape asked (ShapeSizer): a
// dynamic graph's bundle is servable once verified at the shape; until then
// it is found unservable, as stored, for its check.

#ifndef TIR_SERVER_BUNDLES_SHAPE_SOURCE_H_
#define TIR_SERVER_BUNDLES_SHAPE_SOURCE_H_

#include "server/bundles/bundle_source.h"
#include "server/bundles/shape_sizer.h"

namespace tir::bundles {

class ShapeSource : public BundleSource {
 public:
  ShapeSource(BundleSource &inner, ShapeSizer &sizer) : inner_(inner), sizer_(sizer) {}
  absl::StatusOr<std::optional<FoundBundle>> Find(const BundleQuery &query) override;

 private:
  BundleSource &inner_;
  ShapeSizer &sizer_;
};

}  // namespace tir::bundles

#endif  // TIR_SERVER_BUNDLES_SHAPE_SOURCE_H_
