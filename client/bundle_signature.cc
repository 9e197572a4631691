#include "client/bundle_signature.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

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

absl::Status CheckBinaryHashes(const tir::v1::KernelBundle &bundle) {
  for (const tir::v1::KernelEntry &k : bundle.kernels()) {
    if (k.binary().empty()) continue;
    const std::string &want = k.binary_sha256();
    if (want.size() != 64 || want.find_first_not_of("0123456789abcdef") != std::string::npos) {
      return MakeError(absl::StatusCode::kFailedPrecondition, "BINARY_UNCHECKED",
                       absl::StrCat("kernel ", k.partition(), " of bundle ", bundle.key().substr(0, 16),
                                    " names no binary hash: it was not built by a coordinator that checks what it serves"));
    }
    if (Sha256Hex(k.binary()) != want) {
      return MakeError(absl::StatusCode::kFailedPrecondition, "BINARY_HASH_MISMATCH",
                       absl::StrCat("kernel ", k.partition(), " of bundle ", bundle.key().substr(0, 16),
                                    " is not the binary its bundle names"));
    }
  }
  return absl::OkStatus();
}

absl::Status PrivateDirectory(const std::string &path) {
  if (path.empty()) return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_ARGUMENT", "no directory given");
  // Parents as mkdir -p would make them (0700 for the ones made here).
  for (size_t at = path.find('/', 1); at != std::string::npos; at = path.find('/', at + 1)) {
    const std::string parent = path.substr(0, at);
    if (::mkdir(parent.c_str(), 0700) != 0 && errno != EEXIST) {
      return MakeError(absl::StatusCode::kInternal, "INTERNAL", absl::StrCat("cannot create ", parent, ": ", std::strerror(errno)));
    }
  }
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    return MakeError(absl::StatusCode::kInternal, "INTERNAL", absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
  }
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    return MakeError(absl::StatusCode::kInternal, "INTERNAL", absl::StrCat("cannot stat ", path, ": ", std::strerror(errno)));
  }
  // This user's own directory made open by an older tir: closed again.
  if (S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() && (st.st_mode & 077) != 0 && ::chmod(path.c_str(), 0700) == 0) {
    st.st_mode &= ~static_cast<mode_t>(077);
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    return MakeError(absl::StatusCode::kFailedPrecondition, "UNSAFE_DIRECTORY",
                     absl::StrCat(path, " must be a directory owned by this user with mode 0700 (binaries are loaded from it)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> WriteCheckedBinary(const std::string &dir, absl::string_view name, absl::string_view bytes,
                                               absl::string_view sha256) {
  TIR_RETURN_IF_ERROR(PrivateDirectory(dir));
  std::string path = absl::StrCat(dir, "/", name, ".XXXXXX");
  const int fd = ::mkostemp(path.data(), O_CLOEXEC);
  if (fd < 0) {
    return MakeError(absl::StatusCode::kInternal, "INTERNAL", absl::StrCat("cannot create a file in ", dir, ": ", std::strerror(errno)));
  }
  auto fail = [&](const std::string &what) {
    const std::string message = absl::StrCat(what, " ", path, ": ", std::strerror(errno));
    ::close(fd);
    ::unlink(path.c_str());
    return MakeError(absl::StatusCode::kInternal, "INTERNAL", message);
  };
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("cannot write");
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return fail("cannot sync");
  // Read back through the same descriptor: what will be loaded.
  std::string back(bytes.size(), '\0');
  for (size_t done = 0; done < back.size();) {
    const ssize_t n = ::pread(fd, back.data() + done, back.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("cannot read back");
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    ::unlink(path.c_str());
    return MakeError(absl::StatusCode::kInternal, "INTERNAL", absl::StrCat("cannot close ", path, ": ", std::strerror(errno)));
  }
  if (Sha256Hex(back) != sha256) {
    ::unlink(path.c_str());
    return MakeError(absl::StatusCode::kFailedPrecondition, "BINARY_HASH_MISMATCH",
                     absl::StrCat(path, " does not hold the binary its bundle names"));
  }
  return path;
}

}  // namespace tir
