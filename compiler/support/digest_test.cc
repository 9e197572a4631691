#include "compiler/support/digest.h"

#include "gtest/gtest.h"

namespace tir {
namespace {

TEST(DigestTest, Sha256HexIsTheStandardDigestInLowercase) {
  // FIPS 180-2's test vectors.
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(DigestTest, HexWritesEveryByte) {
  EXPECT_EQ(Hex(std::string("\x00\x0f\xf0\xff", 4)), "000ff0ff");
}

}  // namespace
}  // namespace tir
