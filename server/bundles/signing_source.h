// Signs the servable bundles its inner source finds (BundleSigner::Served).

#ifndef TIR_SERVER_BUNDLES_SIGNING_SOURCE_H_
#define TIR_SERVER_BUNDLES_SIGNING_SOURCE_H_

#include "server/bundles/bundle_source.h"
#include "server/bundles/signer.h"

namespace tir::bundles {

class SigningSource : public BundleSource {
 public:
  SigningSource(BundleSource &inner, const BundleSigner &signer) : inner_(inner), signer_(signer) {}
  absl::StatusOr<std::optional<FoundBundle>> Find(const BundleQuery &query) override;

 private:
  BundleSource &inner_;
  const BundleSigner &signer_;
};

}  // namespace tir::bundles

#endif  // TIR_SERVER_BUNDLES_SIGNING_SOURCE_H_
