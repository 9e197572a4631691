#include "client/bundle_signature.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "compiler/support/digest.h"

#include "compiler/support/status.h"
#include "gtest/gtest.h"

namespace tir {
namespace {

tir::v1::KernelBundle Bundle() {
  tir::v1::KernelBundle b;
  b.set_key("abc");
  b.set_arch("host");
  tir::v1::KernelEntry *e = b.add_kernels();
  e->set_entry_symbol("k0");
  e->set_binary(std::string("\x7f" "ELF\0\1\2", 7));
  // Map entries: the signed bytes must not depend on their insertion order.
  for (const char *p : {"tile_n", "tile_m", "vector_width", "block_k", "stages"}) {
    (*e->mutable_candidate()->mutable_params())[p] = static_cast<int64_t>(std::string(p).size());
  }
  return b;
}

TEST(BundleSignatureTest, ASignedBundleChecksWithItsKeyOnly) {
  tir::v1::KernelBundle b = Bundle();
  SignBundle(b, "secret-1");
  EXPECT_EQ(b.signature().algorithm(), "hmac-sha256");
  EXPECT_EQ(b.signature().key_id(), BundleKeyId("secret-1"));
  EXPECT_EQ(b.signature().mac().size(), 32u);
  EXPECT_TRUE(CheckBundleSignature(b, "secret-1").ok());
  EXPECT_EQ(ReasonOf(CheckBundleSignature(b, "secret-2")), "BUNDLE_KEY_MISMATCH");
  // Through the wire and back (a parsed map has its own order).
  tir::v1::KernelBundle parsed;
  ASSERT_TRUE(parsed.ParseFromString(b.SerializeAsString()));
  EXPECT_TRUE(CheckBundleSignature(parsed, "secret-1").ok());
  // Signing again replaces the signature rather than signing it.
  SignBundle(parsed, "secret-1");
  EXPECT_EQ(parsed.signature().mac(), b.signature().mac());
}

TEST(BundleSignatureTest, AnyChangeAfterSigningIsRefused) {
  tir::v1::KernelBundle b = Bundle();
  SignBundle(b, "k");
  tir::v1::KernelBundle binary = b;
  (*binary.mutable_kernels(0)->mutable_binary())[1] ^= 1;
  EXPECT_EQ(ReasonOf(CheckBundleSignature(binary, "k")), "BUNDLE_SIGNATURE_INVALID");
  tir::v1::KernelBundle launch = b;
  launch.mutable_kernels(0)->mutable_launch()->add_block(1024);
  EXPECT_EQ(ReasonOf(CheckBundleSignature(launch, "k")), "BUNDLE_SIGNATURE_INVALID");
  tir::v1::KernelBundle param = b;
  (*param.mutable_kernels(0)->mutable_candidate()->mutable_params())["tile_m"] = 7;
  EXPECT_EQ(ReasonOf(CheckBundleSignature(param, "k")), "BUNDLE_SIGNATURE_INVALID");
  tir::v1::KernelBundle forged = b;
  forged.mutable_signature()->set_algorithm("none");
  EXPECT_EQ(ReasonOf(CheckBundleSignature(forged, "k")), "BUNDLE_SIGNATURE_INVALID");
  tir::v1::KernelBundle unsigned_ = Bundle();
  EXPECT_EQ(ReasonOf(CheckBundleSignature(unsigned_, "k")), "BUNDLE_UNSIGNED");
}

TEST(BinaryHashes, EachBinaryMustBeTheOneItsBundleNames) {
  tir::v1::KernelBundle b = Bundle();
  EXPECT_EQ(ReasonOf(CheckBinaryHashes(b)), "BINARY_UNCHECKED");
  b.mutable_kernels(0)->set_binary_sha256(Sha256Hex(b.kernels(0).binary()));
  EXPECT_TRUE(CheckBinaryHashes(b).ok());
  (*b.mutable_kernels(0)->mutable_binary())[0] ^= 1;
  EXPECT_EQ(ReasonOf(CheckBinaryHashes(b)), "BINARY_HASH_MISMATCH");
  b.mutable_kernels(0)->set_binary_sha256("../../etc/passwd");
  EXPECT_EQ(ReasonOf(CheckBinaryHashes(b)), "BINARY_UNCHECKED");
}

TEST(PrivateDirectory, MadeOnlyForThisUserAndCheckedWhenItExists) {
  const std::string root = std::string(std::getenv("TEST_TMPDIR")) + "/private";
  ASSERT_TRUE(PrivateDirectory(root + "/a/b").ok());
  struct stat st;
  ASSERT_EQ(::lstat((root + "/a/b").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // This user's own open directory is closed again; one of another user,
  // or a link, is refused.
  ASSERT_EQ(::mkdir((root + "/open").c_str(), 0777), 0);
  ASSERT_EQ(::chmod((root + "/open").c_str(), 0777), 0);
  ASSERT_TRUE(PrivateDirectory(root + "/open").ok());
  ASSERT_EQ(::lstat((root + "/open").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::symlink((root + "/a/b").c_str(), (root + "/link").c_str()), 0);
  EXPECT_EQ(ReasonOf(PrivateDirectory(root + "/link")), "UNSAFE_DIRECTORY");
  // Another user's directory: made here only where chown works (root
  // outside a user-namespace sandbox).
  ASSERT_EQ(::mkdir((root + "/theirs").c_str(), 0700), 0);
  if (::chown((root + "/theirs").c_str(), 65534, 65534) == 0) {
    EXPECT_EQ(ReasonOf(PrivateDirectory(root + "/theirs")), "UNSAFE_DIRECTORY");
  } else {
    std::printf("not checked here: another user's directory (chown is not allowed)\n");
  }
}

TEST(WriteCheckedBinary, WritesANewFileAndChecksWhatItHolds) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/binaries";
  const std::string bytes = "\x7f" "ELF-bytes";
  absl::StatusOr<std::string> path = WriteCheckedBinary(dir, "k0", bytes, Sha256Hex(bytes));
  ASSERT_TRUE(path.ok()) << path.status();
  struct stat st;
  ASSERT_EQ(::stat(path->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(static_cast<size_t>(st.st_size), bytes.size());
  absl::StatusOr<std::string> other = WriteCheckedBinary(dir, "k0", bytes, Sha256Hex(bytes));
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*other, *path) << "a new name each time (dlopen matches libraries by name)";
  EXPECT_EQ(ReasonOf(WriteCheckedBinary(dir, "k0", bytes, Sha256Hex("other")).status()), "BINARY_HASH_MISMATCH");
}

}  // namespace
}  // namespace tir
