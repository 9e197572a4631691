#include "compiler/support/status.h"
#include "gtest/gtest.h"
#include "worker/cuda/cuda_driver.h"
#include "worker/cuda/nvml_sampler.h"

namespace tir::cuda {
namespace {

TEST(NvmlSampler, WithoutTheDriverSaysSoWithItsReason) {
  if (CudaDriver::Load().ok()) GTEST_SKIP() << "a CUDA driver is present here";
  auto s = NvmlSampler::Open("0000:00:00.0");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(ReasonOf(s.status()), "NVML_UNAVAILABLE");
}

}  // namespace
}  // namespace tir::cuda
