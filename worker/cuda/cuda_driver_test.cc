#include "worker/cuda/cuda_driver.h"

#include <cstdio>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "compiler/support/status.h"

namespace tir::cuda {
namespace {

using ::testing::HasSubstr;

TEST(CudaDriver, MissingLibraryIsTypedError) {
  auto driver = CudaDriver::Load("libcuda-does-not-exist.so.1");
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ReasonOf(driver.status()), "CUDA_DRIVER_UNAVAILABLE");
  EXPECT_THAT(driver.status().message(), HasSubstr("no CUDA driver"));
}

TEST(CudaDriver, ToolkitStubIsRecognisedAsNoDriver) {
  // The toolkit ships a stub libcuda whose cuInit always fails: loading it must
  // give the same typed error, naming the stub, and never crash.
  auto driver = CudaDriver::Load("/usr/local/cuda/lib64/stubs/libcuda.so");
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(ReasonOf(driver.status()), "CUDA_DRIVER_UNAVAILABLE");
  EXPECT_THAT(driver.status().message(), HasSubstr("stub"));
}

TEST(CudaDriver, SystemDriverLoadsOrSaysWhyNot) {
  auto driver = CudaDriver::Load();
  if (!driver.ok()) {
    EXPECT_EQ(ReasonOf(driver.status()), "CUDA_DRIVER_UNAVAILABLE");
    GTEST_SKIP() << "no GPU here: " << driver.status().message();
  }
  absl::StatusOr<int> n = (*driver)->DeviceCount();
  ASSERT_TRUE(n.ok()) << n.status();
  ASSERT_GT(*n, 0);
  absl::StatusOr<DeviceInfo> info = (*driver)->Device(0);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_GE(info->compute_major, 7);
  EXPECT_GT(info->sm_count, 0);
  std::printf("device 0: %s (%s), %d SMs, driver %s\n", info->name.c_str(),
              info->Arch().c_str(), info->sm_count, (*driver)->Version().c_str());
}

TEST(DeviceInfo, ArchNamesHopperAndLaterWithArchSpecificSuffix) {
  DeviceInfo a100;
  a100.compute_major = 8;
  a100.compute_minor = 0;
  EXPECT_EQ(a100.Arch(), "sm_80");
  DeviceInfo h200;
  h200.compute_major = 9;
  h200.compute_minor = 0;
  EXPECT_EQ(h200.Arch(), "sm_90a");
}

}  // namespace
}  // namespace tir::cuda
