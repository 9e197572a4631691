#include "compiler/codegen/LaunchContract.h"

#include "compiler/support/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tir::codegen {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

LayoutContract Declared(int64_t alignment, const std::string &strides) {
  LayoutContract c;
  c.alignment = alignment;
  if (!strides.empty()) c.spec = parseStrideSpec(strides, nullptr);
  return c;
}

TEST(LaunchContractTest, LaysDynamicStridesOutPaddedToTheirDivisors) {
  EXPECT_THAT(LayoutStrides({5, 6}, Declared(0, "(?{div=8},1)")), ElementsAre(8, 1));
  EXPECT_THAT(LayoutStrides({5, 6}, Declared(0, "(?,1)")), ElementsAre(6, 1));
  EXPECT_THAT(LayoutStrides({5, 6}, Declared(0, "")), ElementsAre(6, 1));
  EXPECT_THAT(LayoutStrides({4, 8}, Declared(0, "(0,1)")), ElementsAre(0, 1));
  EXPECT_THAT(LayoutStrides({3, 5, 7}, Declared(0, "(?{div=4},?{div=16},1)")), ElementsAre(80, 16, 1));  // 7 -> 16 (div 16) -> 16 x 5 = 80 (div 4)
  // Run-time strides start past every offset the static ones reach (no
  // element of the layout aliases another).
  EXPECT_THAT(LayoutStrides({8, 8, 8}, Declared(0, "(1,8,?)")), ElementsAre(1, 8, 64));
  EXPECT_THAT(LayoutStrides({2, 3, 4}, Declared(0, "(1,?,2)")), ElementsAre(1, 8, 2));
}

TEST(LaunchContractTest, ALaunchThatBreaksADeclarationIsRefused) {
  alignas(256) static char buffer[512];
  const std::vector<int64_t> shape = {4, 6};
  EXPECT_TRUE(CheckLaunchContract(Declared(128, "(?{div=8},1)"), buffer, shape, {8, 1}, false, "input 0").ok());
  absl::Status misaligned = CheckLaunchContract(Declared(128, ""), buffer + 4, shape, {6, 1}, false, "input 0");
  EXPECT_EQ(ReasonOf(misaligned), "LAYOUT_CONTRACT_VIOLATED");
  EXPECT_THAT(misaligned.message(), HasSubstr("input 0 is declared 128-byte aligned (tir.alignment) but is at 4 bytes"));
  absl::Status stride = CheckLaunchContract(Declared(0, "(?{div=8},1)"), buffer, shape, {6, 1}, false, "input 1");
  EXPECT_THAT(stride.message(), HasSubstr("declares its stride in dimension 0 a multiple of 8 ((?{div=8},1)) but is launched with 6"));
  absl::Status fixed = CheckLaunchContract(Declared(0, "(1,4)"), buffer, shape, {6, 1}, false, "input 2");
  EXPECT_THAT(fixed.message(), HasSubstr("declared with stride 1 in dimension 0"));
  absl::Status aliasing = CheckLaunchContract(Declared(0, "(?,1)"), buffer, shape, {0, 1}, true, "output 0");
  EXPECT_THAT(aliasing.message(), HasSubstr("launched with stride 0 in dimension 0 (extent 4)"));
  EXPECT_TRUE(CheckLaunchContract(Declared(0, "(0,1)"), buffer, shape, {0, 1}, true, "output 0").ok())
      << "a declared 0 is what the graph asked for";
}

TEST(LaunchContractTest, OutputsAsStoredKeepIndexZeroOfStrideZeroDims) {
  reference::Tensor t = reference::Tensor::Zeros(tir::v1::DTYPE_F32, {2, 3});
  for (int k = 0; k < 6; ++k) t.SetF(k, k);
  reference::Tensor s = reference::AsStored(t, {0, 1});
  std::vector<double> v;
  for (int k = 0; k < 6; ++k) v.push_back(s.GetF(k));
  EXPECT_THAT(v, ElementsAre(0, 1, 2, 0, 1, 2));
}

}  // namespace
}  // namespace tir::codegen
