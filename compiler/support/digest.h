// SHA-256 as the project names things by it (cache keys, fingerprints,
// content-addressed files): lowercase hex of the digest.

#ifndef TIR_COMPILER_SUPPORT_DIGEST_H_
#define TIR_COMPILER_SUPPORT_DIGEST_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace tir {

std::array<uint8_t, 32> Sha256(absl::string_view data);
// Lowercase hex of Sha256(data).
std::string Sha256Hex(absl::string_view data);

// `bytes` bytes from the operating system's CSPRNG (OpenSSL RAND_bytes), as
// hex: names and ids that must not be guessed (lease ids, worker names,
// sessions). Aborts when the generator fails (it cannot, once seeded).
std::string RandomHex(size_t bytes);
// Lowercase hex of any bytes.
std::string Hex(absl::string_view bytes);

}  // namespace tir

#endif  // TIR_COMPILER_SUPPORT_DIGEST_H_
