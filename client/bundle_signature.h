// Bundle signatures: a coordinator configured with a bundle key signs every
// bundle it serves (HMAC-SHA256 over the bundle's deterministic serialization
// with `signature` cleared); a client given the same key checks the signature
// before it hands out or loads a binary. The Python client computes the same
// MAC (client/python/tir/client.py).

#ifndef TIR_CLIENT_BUNDLE_SIGNATURE_H_
#define TIR_CLIENT_BUNDLE_SIGNATURE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "tir/v1/kernel.pb.h"

namespace tir {

// The first 16 hex digits of SHA-256(key): names a key without revealing it.
std::string BundleKeyId(absl::string_view key);

// Sets `bundle.signature` for `key` (replacing any signature it had).
void SignBundle(tir::v1::KernelBundle &bundle, absl::string_view key);

// True when `bundle` carries a signature made with `key`.
bool SignedWith(const tir::v1::KernelBundle &bundle, absl::string_view key);

// OK when `bundle` is signed with `key`. Errors (FAILED_PRECONDITION):
// BUNDLE_UNSIGNED (no signature), BUNDLE_KEY_MISMATCH (another key signed it),
// BUNDLE_SIGNATURE_INVALID (the bytes are not what was signed).
absl::Status CheckBundleSignature(const tir::v1::KernelBundle &bundle, absl::string_view key);

}  // namespace tir

#endif  // TIR_CLIENT_BUNDLE_SIGNATURE_H_
