#include "compiler/support/digest.h"

#include <cstdio>
#include <cstdlib>

#include "openssl/rand.h"

#include "absl/strings/escaping.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/SHA256.h"

namespace tir {

std::array<uint8_t, 32> Sha256(absl::string_view data) {
  return llvm::SHA256::hash(llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(data.data()), data.size()));
}

std::string Hex(absl::string_view bytes) { return absl::BytesToHexString(bytes); }

std::string Sha256Hex(absl::string_view data) {
  const std::array<uint8_t, 32> d = Sha256(data);
  return Hex(absl::string_view(reinterpret_cast<const char *>(d.data()), d.size()));
}

std::string RandomHex(size_t bytes) {
  std::string raw(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char *>(raw.data()), static_cast<int>(bytes)) != 1) {
    std::fprintf(stderr, "tir: the system's random generator failed\n");
    std::abort();
  }
  return Hex(raw);
}

}  // namespace tir
