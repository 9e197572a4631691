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
// Lowercase hex of any bytes.
std::string Hex(absl::string_view bytes);

}  // namespace tir

#endif  // TIR_COMPILER_SUPPORT_DIGEST_H_
