// Builds are deterministic: one source, arch and option list built twice,
// in separate caches and work directories, gives the same bytes. The
// coordinator relies on it to check what workers measured against what it
// builds and serves.

#include "compiler/codegen/KernelBuild.h"
#include "compiler/codegen/HostBuild.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "compiler/support/digest.h"
#include "compiler/support/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tir::codegen {
namespace {

std::string Tmp(const std::string &name) {
  return std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") + "/" + name;
}

constexpr char kCuda[] = R"(
#include "tir_runtime.h"
extern "C" __global__ void tir_scale(const float *__restrict__ x, float *__restrict__ y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i] + 1.0f;
}
)";

constexpr char kHost[] = R"(
extern "C" int tir_host_call(void **args, const long *grid) {
  float *y = static_cast<float *>(args[1]);
  const float *x = static_cast<const float *>(args[0]);
  for (long i = 0; i < grid[0]; ++i) y[i] = 2.0f * x[i] + 1.0f;
  return 0;
}
)";

TEST(KernelBuild, CubinsAreTheSameBytesFromTwoBuilders) {
  nvrtc::CompileCache a(Tmp("cache_a")), b;
  absl::StatusOr<KernelBinary> first = BuildKernel(kCuda, "sm_90a", {"-lineinfo"}, a, Tmp("host_a"));
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<KernelBinary> second = BuildKernel(kCuda, "sm_90a", {"-lineinfo"}, b, Tmp("host_b"));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(first->format, tir::v1::BINARY_FORMAT_CUBIN);
  EXPECT_EQ(first->binary, second->binary);
  EXPECT_EQ(first->sha256, Sha256Hex(first->binary));
  EXPECT_EQ(first->sha256, second->sha256);
  // Another option list is another binary.
  absl::StatusOr<KernelBinary> plain = BuildKernel(kCuda, "sm_90a", {}, b, Tmp("host_b"));
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_NE(plain->sha256, first->sha256);
  EXPECT_THAT(ToolchainOf("sm_90a"), ::testing::StartsWith("nvrtc "));
}

TEST(KernelBuild, HostObjectsAreTheSameBytesFromTwoWorkDirectories) {
  nvrtc::CompileCache unused;
  absl::StatusOr<KernelBinary> first = BuildKernel(kHost, "host", {}, unused, Tmp("host_one"));
  if (!first.ok() && ReasonOf(first.status()) == "HOST_COMPILER_MISSING") GTEST_SKIP() << first.status();
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<KernelBinary> second = BuildKernel(kHost, "host", {}, unused, Tmp("elsewhere/host_two"));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(first->format, tir::v1::BINARY_FORMAT_HOST_SHARED_OBJECT);
  EXPECT_NE(first->path, second->path);
  EXPECT_EQ(first->binary.substr(0, 4), "\x7f" "ELF");
  EXPECT_EQ(first->sha256, second->sha256) << "the host compiler embeds where it ran";
  EXPECT_FALSE(ToolchainOf("host").empty());
}

// Compiles (emulated form, under `work`) a kernel whose tir_probe returns
// `scale` x the length of ScheduleName(1, 0) (one of tir_lanes.h's outlined
// functions: "high thread ids first"), loads it and calls the probe.
absl::StatusOr<unsigned long> Probe(const std::string &work, const HostBuildOptions &lanes, int scale) {
  const std::string source = "#include \"tir_runtime.h\"\n"
                             "extern \"C\" unsigned long tir_probe() {\n"
                             "  return " + std::to_string(scale) + " * ::tir_lanes::ScheduleName(1, 0).size();\n}\n";
  TIR_ASSIGN_OR_RETURN(std::string so, CompileHostObject(source, work, lanes));
  void *handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return absl::InternalError(dlerror());
  auto probe = reinterpret_cast<unsigned long (*)()>(dlsym(handle, "tir_probe"));
  const unsigned long got = probe != nullptr ? probe() : 0;
  dlclose(handle);
  if (probe == nullptr) return absl::InternalError("no tir_probe in " + so);
  return got;
}

// Emulated kernels of one header set share the emulator's machinery,
// compiled once (tir_lanes_runtime.o, linked into each) and the headers
// precompiled: a kernel built that way resolves the machinery's functions
// and runs them.
TEST(HostBuild, EmulatedKernelsLinkTheEmulatorCompiledOnce) {
  const std::string work = Tmp("shared_emulator");
  HostBuildOptions lanes;
  lanes.form = HostForm::kLanes;
  const int64_t fallbacks = HostLinkFallbacks();
  const size_t name = std::string("high thread ids first").size();
  for (int scale : {1, 2}) {
    absl::StatusOr<unsigned long> got = Probe(work, lanes, scale);
    if (!got.ok() && ReasonOf(got.status()) == "HOST_COMPILER_MISSING") GTEST_SKIP() << got.status();
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, scale * name);
  }
  std::vector<std::filesystem::path> shared;
  for (const auto &entry : std::filesystem::directory_iterator(work)) {
    if (entry.path().filename().string().rfind("headers-", 0) != 0) continue;
    shared.push_back(entry.path());
    EXPECT_TRUE(std::filesystem::exists(entry.path() / "tir_lanes_runtime.o"));
    EXPECT_TRUE(std::filesystem::exists(entry.path() / "tir_runtime.h.gch"));
    EXPECT_TRUE(std::filesystem::exists(entry.path() / "ready"));
  }
  ASSERT_EQ(shared.size(), 1u);
  EXPECT_EQ(HostLinkFallbacks(), fallbacks) << "both kernels linked the shared object";
  // A shared object that no longer links (damaged on disk): the kernel is
  // compiled whole instead, and runs; the directory is marked for a
  // rebuild, which the next kernel gets, and that one links it again.
  std::ofstream(shared[0] / "tir_lanes_runtime.o", std::ios::trunc) << "not an object";
  for (int scale : {3, 4}) {
    SCOPED_TRACE(scale);
    absl::StatusOr<unsigned long> got = Probe(work, lanes, scale);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, scale * name);
    EXPECT_EQ(HostLinkFallbacks(), fallbacks + 1) << "the damaged object fails one link only";
    if (scale == 3) {
      EXPECT_FALSE(std::filesystem::exists(shared[0] / "ready"));
      EXPECT_FALSE(std::filesystem::exists(shared[0] / "tir_lanes_runtime.o"));
    }
  }
  EXPECT_TRUE(std::filesystem::exists(shared[0] / "ready"));
  EXPECT_GT(std::filesystem::file_size(shared[0] / "tir_lanes_runtime.o"), 1000u) << "rebuilt";
}

// Headers whose runtime object does not build: kernels still build (the
// headers compiled whole), the compiler's words are kept, and the directory
// is not marked complete, so a later process tries again.
TEST(HostBuild, ARuntimeObjectThatFailsLeavesTheDirectoryIncomplete) {
  const std::string work = Tmp("failed_runtime");
  HostBuildOptions lanes;
  lanes.form = HostForm::kLanes;
  // Its outlined part does not compile; the part kernels see does.
  lanes.headers = {{"tir_runtime.h",
                    "#if defined(TIR_LANES_RUNTIME)\n#error the runtime half is broken\n#endif\n"
                    "inline int tir_seven() { return 7; }\n"}};
  absl::StatusOr<std::string> so = CompileHostObject(
      "#include \"tir_runtime.h\"\nextern \"C\" int tir_probe() { return tir_seven(); }\n", work, lanes);
  if (!so.ok() && ReasonOf(so.status()) == "HOST_COMPILER_MISSING") GTEST_SKIP() << so.status();
  ASSERT_TRUE(so.ok()) << so.status();
  void *handle = dlopen(so->c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto probe = reinterpret_cast<int (*)()>(dlsym(handle, "tir_probe"));
  ASSERT_NE(probe, nullptr);
  EXPECT_EQ(probe(), 7);
  dlclose(handle);
  int dirs = 0;
  for (const auto &entry : std::filesystem::directory_iterator(work)) {
    if (entry.path().filename().string().rfind("headers-", 0) != 0) continue;
    ++dirs;
    EXPECT_FALSE(std::filesystem::exists(entry.path() / "ready"));
    EXPECT_TRUE(std::filesystem::exists(entry.path() / "failed"));
    EXPECT_FALSE(std::filesystem::exists(entry.path() / "tir_lanes_runtime.o"));
    std::ifstream log(entry.path() / "tir_lanes_runtime.o.log");
    const std::string words((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    EXPECT_NE(words.find("the runtime half is broken"), std::string::npos) << words;
  }
  EXPECT_EQ(dirs, 1);
}

// A work directory another user could write to is never built in, nor is
// anything found there (a planted header directory's `ready`) used; this
// user's own, left open by an older tir, is closed to 0700 and used.
TEST(HostBuild, AWorkDirectoryOthersCanWriteToIsRefused) {
  const std::string shared = Tmp("open_to_all"), work = shared + "/work";
  std::filesystem::create_directories(work);
  auto mode = [](const std::string &path) {
    struct stat st;
    EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
    return st.st_mode & 07777;
  };
  auto objects = [&] {
    int n = 0;
    for (const auto &e : std::filesystem::recursive_directory_iterator(shared)) n += e.path().extension() == ".so";
    return n;
  };
  ASSERT_EQ(::chmod(shared.c_str(), 0777), 0);
  absl::StatusOr<std::string> so = CompileHostObject(kHost, work);
  EXPECT_EQ(ReasonOf(so.status()), "UNSAFE_DIRECTORY") << so.status();
  ASSERT_EQ(::chmod(shared.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(work.c_str(), 0777), 0);
  so = CompileHostObject(kHost, work);
  EXPECT_EQ(ReasonOf(so.status()), "UNSAFE_DIRECTORY") << so.status();
  EXPECT_EQ(objects(), 0);
  ASSERT_EQ(::chmod(work.c_str(), 0755), 0);
  so = CompileHostObject(kHost, work);
  if (!so.ok() && ReasonOf(so.status()) == "HOST_COMPILER_MISSING") GTEST_SKIP() << so.status();
  ASSERT_TRUE(so.ok()) << so.status();
  EXPECT_EQ(mode(work), 0700u);
  EXPECT_EQ(mode(std::filesystem::path(*so).parent_path().string()), 0700u);
  for (const auto &e : std::filesystem::directory_iterator(work)) {
    if (e.is_directory()) EXPECT_EQ(mode(e.path().string()), 0700u) << e.path();
  }
}

TEST(KernelBuild, UnknownArchAndHostOptionsAreRefused) {
  nvrtc::CompileCache unused;
  EXPECT_EQ(ReasonOf(BuildKernel(kHost, "sm_13", {}, unused, Tmp("h")).status()), "UNKNOWN_ARCH");
  EXPECT_EQ(ReasonOf(BuildKernel(kHost, "host", {"-O0"}, unused, Tmp("h")).status()), "INVALID_ARGUMENT");
}

}  // namespace
}  // namespace tir::codegen
