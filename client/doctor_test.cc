#include "client/doctor.h"

#include <cstdlib>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tir::client {
namespace {

using ::testing::HasSubstr;

TEST(Doctor, ReportsEveryCheckAndTheToolchainWorks) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/cache";
  std::vector<Check> checks = RunDoctor(dir);
  ASSERT_EQ(checks.size(), 5u);
  EXPECT_EQ(checks[0].name, "nvrtc");
  EXPECT_TRUE(checks[0].ok) << checks[0].detail;
  EXPECT_THAT(checks[0].detail, HasSubstr("sm_90a cubin"));
  EXPECT_EQ(checks[1].name, "cuda");
  if (!checks[1].ok) EXPECT_THAT(checks[1].detail, HasSubstr("host backend"));
  EXPECT_TRUE(checks[3].ok) << checks[3].detail;
  EXPECT_THAT(checks[3].detail, HasSubstr("0 kernels"));
  EXPECT_EQ(checks[4].name, "service");
  EXPECT_TRUE(checks[4].ok) << checks[4].detail;
  EXPECT_THAT(checks[4].detail, HasSubstr("no local service runs"));
}

TEST(Doctor, JsonEscapesDetails) {
  std::string json = FormatChecks({{"x", false, "a \"quoted\"\nline"}}, /*json=*/true);
  EXPECT_EQ(json, "{\"checks\":[{\"detail\":\"a \\\"quoted\\\"\\nline\",\"name\":\"x\",\"ok\":false}]}\n");
}

TEST(Doctor, CacheDirFollowsXdg) {
  setenv("XDG_CACHE_HOME", "/x/y", 1);
  EXPECT_EQ(DefaultCacheDir(), "/x/y/tir");
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(DefaultCacheDir(), "/home/u/.cache/tir");
}

}  // namespace
}  // namespace tir::client
