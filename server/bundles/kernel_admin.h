// The kernel API's admin calls on the store: a bundle by name (served
// signed; metadata only without binaries and sources), a page of bundles,
// and a deletion (which forgets the bundle's shape records too).

#ifndef TIR_SERVER_BUNDLES_KERNEL_ADMIN_H_
#define TIR_SERVER_BUNDLES_KERNEL_ADMIN_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/bundles/shape_sizer.h"
#include "server/bundles/signer.h"
#include "server/store/kernel_store.h"
#include "tir/v1/compiler_service.pb.h"

namespace tir::bundles {

class KernelAdmin {
 public:
  KernelAdmin(std::shared_ptr<store::KernelStore> store, const BundleSigner &signer, ShapeSizer &sizer)
      : store_(std::move(store)), signer_(signer), sizer_(sizer) {}
  // `name` is "kernels/<key>" or the key.
  absl::StatusOr<tir::v1::KernelBundle> Get(const std::string &name, bool metadata_only);
  absl::StatusOr<tir::v1::ListKernelsResponse> List(const tir::v1::ListKernelsRequest &request);
  absl::StatusOr<tir::v1::DeleteKernelResponse> Delete(const std::string &name);

 private:
  std::shared_ptr<store::KernelStore> store_;
  const BundleSigner &signer_;
  ShapeSizer &sizer_;
};

}  // namespace tir::bundles

#endif  // TIR_SERVER_BUNDLES_KERNEL_ADMIN_H_
