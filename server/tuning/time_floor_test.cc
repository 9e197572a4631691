#include "server/tuning/time_floor.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tir::tuning {
namespace {

tir::v1::Candidate WithFigures(double bytes, double flops) {
  tir::v1::Candidate c;
  (*c.mutable_model_inputs())["bytes"] = bytes;
  (*c.mutable_model_inputs())["flops"] = flops;
  return c;
}

// A made-up median (1e-9 s) is under every real kernel's floor; honest
// times (what the host and an H100 take) are over it.
TEST(TimeFloorTest, AMadeUpTimeIsBelowTheFloorAndARealOneAbove) {
  // A 64x64 f32 exp: 32 KiB moved.
  const tir::v1::Candidate exp = WithFigures(32768, 4096 * 8);
  EXPECT_GT(TimeFloorSeconds(exp, "host"), 1e-9);
  EXPECT_GT(TimeFloorSeconds(exp, "sm_90a"), 1e-9);
  EXPECT_LT(TimeFloorSeconds(exp, "host"), 1e-6) << "the host runs it in about a microsecond";
  EXPECT_LT(TimeFloorSeconds(exp, "sm_90a"), 2e-6) << "a GPU launch takes a few microseconds";
  // A 4096^3 bf16 matmul: 137 GFLOP; an H100 takes about 0.2 ms.
  const tir::v1::Candidate matmul = WithFigures(3 * 4096.0 * 4096 * 2, 2.0 * 4096 * 4096 * 4096);
  EXPECT_GT(TimeFloorSeconds(matmul, "sm_90a"), 1e-5);
  EXPECT_LT(TimeFloorSeconds(matmul, "sm_90a"), 1.4e-4);
  // 1 GB through the host: no core streams it in a millisecond.
  EXPECT_GE(TimeFloorSeconds(WithFigures(1e9, 0), "host"), 1e-3);
}

TEST(TimeFloorTest, WithoutFiguresTheMinimumTimeHolds) {
  EXPECT_EQ(TimeFloorSeconds(tir::v1::Candidate(), "host"), kHostMinKernelSeconds);
  EXPECT_EQ(TimeFloorSeconds(tir::v1::Candidate(), "sm_80"), kGpuMinKernelSeconds);
  EXPECT_EQ(TimeFloorSeconds(WithFigures(-1, std::nan("")), "host"), kHostMinKernelSeconds);
  EXPECT_EQ(TimeFloorSeconds(tir::v1::Candidate(), "sm_1"), 0) << "an arch not in the table";
}

}  // namespace
}  // namespace tir::tuning
