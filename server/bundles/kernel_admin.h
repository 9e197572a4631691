// The kernel API's admin calls on the store: a bundle by name (served
// signed; metadata only without binaries and sources), a page of bundles,
// and a deletion (which forgets the bundle's shape records too).
//
// Who may delete a bundle. The store is a cache every client shares: a
// bundle two identities asked for serves both, and one of them deleting it
// would take it from under the other. So the identities that asked for a
// bundle (Compile, answered or not; reads do not count) are its requesters,
// recorded in the ledger (owner/<key>/<identity>) so a restart keeps them,
// and:
//  - an identity deletes a bundle only it asked for;
//  - a bundle another identity asked for too is deleted by an admin only;
//  - a bundle with no requester recorded (stored before requesters were
//    kept) counts as the anonymous identity's (""): the one client of a
//    service without credentials (a shared client token, or none) deletes
//    it as before; with credentials, an admin does.
// Refused: PERMISSION_DENIED, reason NOT_OWNER. An admin deletes any.

#ifndef TIR_SERVER_BUNDLES_KERNEL_ADMIN_H_
#define TIR_SERVER_BUNDLES_KERNEL_ADMIN_H_

#include <map>
#include <memory>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/bundles/shape_sizer.h"
#include "server/bundles/signer.h"
#include "server/ledger/ledger.h"
#include "server/store/kernel_store.h"
#include "tir/v1/compiler_service.pb.h"

namespace tir::bundles {

class KernelAdmin {
 public:
  KernelAdmin(std::shared_ptr<store::KernelStore> store, const BundleSigner &signer, ShapeSizer &sizer,
              ledger::Ledger &ledger)
      : store_(std::move(store)), signer_(signer), sizer_(sizer), ledger_(ledger) {}
  // `name` is "kernels/<key>" or the key.
  absl::StatusOr<tir::v1::KernelBundle> Get(const std::string &name, bool metadata_only);
  absl::StatusOr<tir::v1::ListKernelsResponse> List(const tir::v1::ListKernelsRequest &request);
  // Deleted for `identity` ("" anonymous) when it may (above), or for an
  // admin. Errors: PERMISSION_DENIED / NOT_OWNER.
  absl::StatusOr<tir::v1::DeleteKernelResponse> Delete(const std::string &name, const std::string &identity,
                                                       bool admin) ABSL_LOCKS_EXCLUDED(mu_);
  // `identity` asked for the bundle of `key`: recorded once (a posted
  // ledger write the first time this process sees the pair).
  void NoteRequester(const std::string &key, const std::string &identity) ABSL_LOCKS_EXCLUDED(mu_);
  // Keys whose requesters are remembered in memory (then forgotten all at
  // once; the ledger keeps them).
  static constexpr size_t kMaxNotedKeys = 65536;

 private:
  std::shared_ptr<store::KernelStore> store_;
  const BundleSigner &signer_;
  ShapeSizer &sizer_;
  ledger::Ledger &ledger_;
  absl::Mutex mu_;
  // Requesters noted by this process (recorded, or posted to the ledger).
  std::map<std::string, std::set<std::string>> noted_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tir::bundles

#endif  // TIR_SERVER_BUNDLES_KERNEL_ADMIN_H_
