// Bundle signatures: a coordinator configured with a bundle key signs every
// bundle it serves (HMAC-SHA256 over the bundle's deterministic serialization
// with `signature` cleared); a client given the same key checks the signature
// before it hands out or loads a binary. The Python client computes the same
// MAC (client/python/tir/client.py).

#ifndef TIR_CLIENT_BUNDLE_SIGNATURE_H_
#define TIR_CLIENT_BUNDLE_SIGNATURE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
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

// OK when every kernel's binary is the one the bundle names by hash
// (KernelEntry.binary_sha256, set by the coordinator that built it).
// Errors (FAILED_PRECONDITION): BINARY_UNCHECKED (a binary without a hash,
// or a hash that is not 64 hex digits), BINARY_HASH_MISMATCH.
absl::Status CheckBinaryHashes(const tir::v1::KernelBundle &bundle);

// Makes `path` (and its parents) a directory only this user may use: created
// 0700, then checked to be a directory (not a link), owned by this user,
// without group or other access. Errors: UNSAFE_DIRECTORY, INTERNAL.
absl::Status PrivateDirectory(const std::string &path);

// Writes `bytes` to a new file (a unique name, O_EXCL, 0600, every write
// checked, synced) in private directory `dir` and reads it back through the
// same descriptor to check its SHA-256 is `sha256`; its path, for dlopen
// (which matches libraries by name, so each load needs a name of its own;
// the caller removes it once loaded). Errors: INTERNAL (a failed write),
// BINARY_HASH_MISMATCH.
absl::StatusOr<std::string> WriteCheckedBinary(const std::string &dir, absl::string_view name,
                                               absl::string_view bytes, absl::string_view sha256);

}  // namespace tir

#endif  // TIR_CLIENT_BUNDLE_SIGNATURE_H_
