// Signs what the coordinator serves (HMAC-SHA256, client/bundle_signature.h)
// when a bundle key is configured; a no-op without one.

#ifndef TIR_SERVER_BUNDLES_SIGNER_H_
#define TIR_SERVER_BUNDLES_SIGNER_H_

#include <string>

#include "tir/v1/kernel.pb.h"

namespace tir::bundles {

class BundleSigner {
 public:
  explicit BundleSigner(std::string key);
  // Signs `bundle` (again, whatever it carried).
  void Sign(tir::v1::KernelBundle &bundle) const;
  // Signs `bundle` unless it is signed with this key already (bundles are
  // signed when stored; one from before the key, or another, is signed as
  // it is served).
  void Served(tir::v1::KernelBundle &bundle) const;

 private:
  const std::string key_;
  const std::string key_id_;
};

}  // namespace tir::bundles

#endif  // TIR_SERVER_BUNDLES_SIGNER_H_
