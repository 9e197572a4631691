#include "worker/backend_select.h"

#include "compiler/support/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/cuda/cuda_driver.h"

namespace tir::worker {
namespace {

using ::testing::HasSubstr;

std::string Dir() { return std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp"; }

TEST(SelectBackend, HostIsAlwaysThere) {
  auto b = SelectBackend("host", 0, Dir());
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ((*b)->name(), "host");
  EXPECT_EQ((*b)->Capabilities().arch(), "host");
}

TEST(SelectBackend, CudaWithoutADriverIsATypedErrorAndAutoFallsBackToHost) {
  if (cuda::CudaDriver::Load().ok()) GTEST_SKIP() << "a CUDA driver and device are present here";
  auto cuda = SelectBackend("cuda", 0, Dir());
  ASSERT_FALSE(cuda.ok());
  EXPECT_EQ(cuda.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ReasonOf(cuda.status()), "CUDA_DRIVER_UNAVAILABLE");
  auto fallback = SelectBackend("auto", 0, Dir());
  ASSERT_TRUE(fallback.ok()) << fallback.status();
  EXPECT_EQ((*fallback)->name(), "host");
}

TEST(SelectBackend, UnknownNameIsRefused) {
  auto b = SelectBackend("tpu", 0, Dir());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(ReasonOf(b.status()), "UNKNOWN_BACKEND");
  EXPECT_THAT(b.status().message(), HasSubstr("cuda, host or auto"));
}

}  // namespace
}  // namespace tir::worker
