#include "worker/runner_locator.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "compiler/support/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tir::worker {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::filesystem::path Root() {
  const char *t = std::getenv("TEST_TMPDIR");
  return std::filesystem::path(t ? t : "/tmp") / "locator";
}

void MakeFile(const std::filesystem::path &p, bool executable) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << "#!/bin/sh\n";
  chmod(p.c_str(), executable ? 0755 : 0644);
}

TEST(RunnerLocatorTest, TriesEveryLayoutInOrderForEachExecutablePath) {
  RunnerSearch s;
  s.exes = {"/opt/tir/bin/tir-worker", "/x/bazel-out/bin/worker/tir-worker"};
  s.runfiles_dir = "/r";
  EXPECT_THAT(RunnerCandidates(s),
              ElementsAre("/opt/tir/bin/tir-worker-runner", "/opt/tir/libexec/tir/tir-worker-runner",
                          "/opt/tir/bin/runner/tir-worker-runner", "/opt/tir/worker/runner/tir-worker-runner",
                          "/opt/tir/bin/tir-worker.runfiles/tir/worker/runner/tir-worker-runner",
                          "/x/bazel-out/bin/worker/tir-worker-runner", "/x/bazel-out/bin/libexec/tir/tir-worker-runner",
                          "/x/bazel-out/bin/worker/runner/tir-worker-runner",
                          "/x/bazel-out/bin/worker/tir-worker.runfiles/tir/worker/runner/tir-worker-runner",
                          "/r/tir/worker/runner/tir-worker-runner"));
}

TEST(RunnerLocatorTest, AnExplicitFlagIsTheOnlyCandidate) {
  RunnerSearch s;
  s.flag = "/somewhere/runner";
  s.exes = {"/opt/tir/bin/tir-worker"};
  EXPECT_THAT(RunnerCandidates(s), ElementsAre("/somewhere/runner"));
  auto found = FindRunner(s);
  EXPECT_EQ(found.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ReasonOf(found.status()), "RUNNER_UNAVAILABLE");
  EXPECT_THAT(found.status().message(), HasSubstr("--runner=/somewhere/runner is not an executable file"));
}

TEST(RunnerLocatorTest, FindsTheInstalledLayoutAndTheBazelTree) {
  const std::filesystem::path root = Root();
  std::filesystem::remove_all(root);
  MakeFile(root / "opt/bin/tir-worker", true);
  MakeFile(root / "opt/libexec/tir/tir-worker-runner", true);
  RunnerSearch installed;
  installed.exes = {(root / "opt/bin/tir-worker").string()};
  auto found = FindRunner(installed);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(*found, (root / "opt/libexec/tir/tir-worker-runner").string());

  MakeFile(root / "bazel-bin/worker/tir-worker", true);
  MakeFile(root / "bazel-bin/worker/runner/tir-worker-runner", true);
  RunnerSearch bazel;
  bazel.exes = {(root / "bazel-bin/worker/tir-worker").string()};
  found = FindRunner(bazel);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(*found, (root / "bazel-bin/worker/runner/tir-worker-runner").string());

  // tirctl's embedded worker, from another package of the same tree.
  RunnerSearch tirctl;
  tirctl.exes = {(root / "bazel-bin/client/tirctl").string()};
  found = FindRunner(tirctl);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(*found, (root / "bazel-bin/client/../worker/runner/tir-worker-runner").lexically_normal().string());
}

TEST(RunnerLocatorTest, SkipsFilesThatAreNotExecutableAndNamesEveryPathTried) {
  const std::filesystem::path root = Root() / "bad";
  std::filesystem::remove_all(root);
  MakeFile(root / "bin/tir-worker", true);
  MakeFile(root / "bin/tir-worker-runner", false);  // not executable
  std::filesystem::create_directories(root / "libexec/tir/tir-worker-runner");  // a directory
  RunnerSearch s;
  s.exes = {(root / "bin/tir-worker").string()};
  auto found = FindRunner(s);
  EXPECT_EQ(ReasonOf(found.status()), "RUNNER_UNAVAILABLE");
  EXPECT_THAT(found.status().message(), HasSubstr("cannot find tir-worker-runner; tried " +
                                                  (root / "bin/tir-worker-runner").string() + ", " +
                                                  (root / "libexec/tir/tir-worker-runner").string()));
  EXPECT_THAT(found.status().message(), HasSubstr("--runner=PATH"));
}

}  // namespace
}  // namespace tir::worker
