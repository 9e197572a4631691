#include "server/bundles/signer.h"

#include "client/bundle_signature.h"

namespace tir::bundles {

BundleSigner::BundleSigner(std::string key) : key_(std::move(key)), key_id_(key_.empty() ? "" : BundleKeyId(key_)) {}

void BundleSigner::Sign(tir::v1::KernelBundle &bundle) const {
  if (!key_.empty()) SignBundle(bundle, key_);
}

void BundleSigner::Served(tir::v1::KernelBundle &bundle) const {
  if (!key_.empty() && bundle.signature().key_id() != key_id_) Sign(bundle);
}

}  // namespace tir::bundles
