// Where served bundles come from: a BundleSource answers a key (and, for a
// dynamic graph, a shape) with the bundle to serve. Sources stack as
// decorators, each in its own file:
//   StoreSource    the kernel store (store_source.h);
//   ShapeSource    sizes a dynamic bundle for the shape asked, once verified
//                  there (shape_source.h);
//   SigningSource  signs what is served (signing_source.h).
// The coordinator's cache hit is Signing(Shape(Store)).

#ifndef TIR_SERVER_BUNDLES_BUNDLE_SOURCE_H_
#define TIR_SERVER_BUNDLES_BUNDLE_SOURCE_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "server/common/shape.h"
#include "tir/v1/kernel.pb.h"

namespace tir::bundles {

struct BundleQuery {
  std::string key;
  // A dynamic graph's shape (null for a static graph).
  const common::Shape *shape = nullptr;
};

struct FoundBundle {
  tir::v1::KernelBundle bundle;
  // False for a dynamic graph's bundle not verified at the shape asked yet:
  // `bundle` is then the stored one, unsized and not to be served.
  bool servable = true;
};

class BundleSource {
 public:
  virtual ~BundleSource() = default;
  // nullopt when no bundle is stored under the key. Errors: the store's;
  // WRONG_AT_SHAPE when the bundle failed its check at the shape.
  virtual absl::StatusOr<std::optional<FoundBundle>> Find(const BundleQuery &query) = 0;
};

}  // namespace tir::bundles

#endif  // TIR_SERVER_BUNDLES_BUNDLE_SOURCE_H_
