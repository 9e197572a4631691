#include "compiler/nvrtc/nvrtc_compiler.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "compiler/support/status.h"

namespace tir::nvrtc {
namespace {

using ::testing::HasSubstr;

constexpr char kSaxpy[] = R"(
#include "tir_scale.h"
extern "C" __global__ void saxpy(float a, const float* x, float* y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = tir_scale(a, x[i]) + y[i];
}
)";

CompileOptions Sm90() {
  CompileOptions o;
  o.arch = "sm_90";
  o.headers = {{"tir_scale.h", "__device__ inline float tir_scale(float a, float x) { return a * x; }"}};
  return o;
}

TEST(NvrtcCompiler, CompilesKernelToSm90ElfCubin) {
  absl::StatusOr<CompiledKernel> k = CompileToCubin(kSaxpy, Sm90());
  ASSERT_TRUE(k.ok()) << k.status();
  ASSERT_GE(k->cubin.size(), 64u);
  EXPECT_EQ(k->cubin.substr(0, 4), std::string("\x7f" "ELF", 4));
  EXPECT_EQ(k->cubin[4], 2) << "cubins are 64-bit ELF";
  // The symbol is in the string table of the ELF.
  EXPECT_THAT(k->cubin, HasSubstr("saxpy"));
  EXPECT_GT(k->registers, 0) << k->log;
  EXPECT_GT(k->seconds, 0);
}

TEST(NvrtcCompiler, CompilesForEverySupportedArch) {
  for (const std::string& arch : SupportedArchs()) {
    CompileOptions o = Sm90();
    o.arch = arch;
    absl::StatusOr<CompiledKernel> k = CompileToCubin(kSaxpy, o);
    ASSERT_TRUE(k.ok()) << arch << ": " << k.status();
    EXPECT_EQ(k->cubin.substr(1, 3), "ELF") << arch;
  }
}

TEST(NvrtcCompiler, SyntaxErrorIsTypedWithLog) {
  absl::StatusOr<CompiledKernel> k =
      CompileToCubin("extern \"C\" __global__ void f() { undefined_thing(); }", Sm90());
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReasonOf(k.status()), "NVRTC_COMPILE_FAILED");
  EXPECT_THAT(k.status().message(), HasSubstr("undefined_thing"));
}

TEST(NvrtcCompiler, UnknownArchIsRejectedBeforeCompiling) {
  CompileOptions o = Sm90();
  o.arch = "sm_61";
  absl::StatusOr<CompiledKernel> k = CompileToCubin(kSaxpy, o);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(ReasonOf(k.status()), "UNKNOWN_ARCH");
  EXPECT_THAT(k.status().message(), HasSubstr("sm_61"));
}

TEST(NvrtcCompiler, ReportsVersion) { EXPECT_THAT(Version(), ::testing::MatchesRegex("[0-9]+\\.[0-9]+")); }

}  // namespace
}  // namespace tir::nvrtc
