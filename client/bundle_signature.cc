#include "client/bundle_signature.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "compiler/support/status.h"
#include "google/protobuf/io/coded_stream.h"
#include "compiler/support/digest.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace tir {
namespace {

constexpr char kAlgorithm[] = "hmac-sha256";

// The signed bytes: the deterministic serialization (map entries sorted by
// key, as Python's SerializeToString(deterministic=True) writes them).
std::string SignedBytes(const tir::v1::KernelBundle &bundle) {
  tir::v1::KernelBundle copy = bundle;
  copy.clear_signature();
  std::string out;
  {
    google::protobuf::io::StringOutputStream sos(&out);
    google::protobuf::io::CodedOutputStream cos(&sos);
    cos.SetSerializationDeterministic(true);
    copy.SerializeToCodedStream(&cos);
  }
  return out;
}

std::string Mac(const std::string &data, absl::string_view key) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char *>(data.data()),
       data.size(), mac, &len);
  return std::string(reinterpret_cast<const char *>(mac), len);
}

}  // namespace

std::string BundleKeyId(absl::string_view key) { return Sha256Hex(key).substr(0, 16); }

void SignBundle(tir::v1::KernelBundle &bundle, absl::string_view key) {
  const std::string mac = Mac(SignedBytes(bundle), key);
  tir::v1::BundleSignature *s = bundle.mutable_signature();
  s->set_algorithm(kAlgorithm);
  s->set_key_id(BundleKeyId(key));
  s->set_mac(mac);
}

bool SignedWith(const tir::v1::KernelBundle &bundle, absl::string_view key) {
  return CheckBundleSignature(bundle, key).ok();
}

absl::Status CheckBundleSignature(const tir::v1::KernelBundle &bundle, absl::string_view key) {
  const auto fail = [&](const char *reason, const std::string &why) {
    return MakeError(absl::StatusCode::kFailedPrecondition, reason,
                     "bundle " + (bundle.key().empty() ? std::string("(no key)") : bundle.key()) + ": " + why);
  };
  if (!bundle.has_signature() || bundle.signature().mac().empty()) {
    return fail("BUNDLE_UNSIGNED", "it carries no signature; the coordinator has no bundle key, or another served it");
  }
  const tir::v1::BundleSignature &s = bundle.signature();
  if (s.algorithm() != kAlgorithm) return fail("BUNDLE_SIGNATURE_INVALID", "unknown algorithm \"" + s.algorithm() + "\"");
  const std::string id = BundleKeyId(key);
  if (s.key_id() != id) {
    return fail("BUNDLE_KEY_MISMATCH", "signed with key " + s.key_id() + ", this client holds key " + id);
  }
  const std::string want = Mac(SignedBytes(bundle), key);
  if (want.size() != s.mac().size() || CRYPTO_memcmp(want.data(), s.mac().data(), want.size()) != 0) {
    return fail("BUNDLE_SIGNATURE_INVALID", "its signature does not match its contents (altered after signing)");
  }
  return absl::OkStatus();
}

}  // namespace tir
