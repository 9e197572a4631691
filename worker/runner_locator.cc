#include "worker/runner_locator.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/support/status.h"

namespace tir::worker {
namespace {

constexpr char kRunner[] = "tir-worker-runner";
constexpr char kWorkspace[] = "tir";

bool IsExecutableFile(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::vector<std::string> RunnerCandidates(const RunnerSearch &search) {
  if (!search.flag.empty()) return {search.flag};
  std::vector<std::string> out;
  auto add = [&](const std::filesystem::path &p) {
    const std::string s = p.lexically_normal().string();
    for (const std::string &o : out) {
      if (o == s) return;
    }
    out.push_back(s);
  };
  for (const std::string &exe : search.exes) {
    if (exe.empty()) continue;
    const std::filesystem::path dir = std::filesystem::path(exe).parent_path();
    add(dir / kRunner);
    add(dir / ".." / "libexec" / "tir" / kRunner);
    add(dir / "runner" / kRunner);
    add(dir / ".." / "worker" / "runner" / kRunner);
    add(std::filesystem::path(exe + ".runfiles") / kWorkspace / "worker" / "runner" / kRunner);
  }
  if (!search.runfiles_dir.empty()) {
    add(std::filesystem::path(search.runfiles_dir) / kWorkspace / "worker" / "runner" / kRunner);
  }
  return out;
}

absl::StatusOr<std::string> FindRunner(const RunnerSearch &search) {
  const std::vector<std::string> tried = RunnerCandidates(search);
  for (const std::string &p : tried) {
    if (IsExecutableFile(p)) return p;
  }
  if (!search.flag.empty()) {
    return MakeError(absl::StatusCode::kNotFound, "RUNNER_UNAVAILABLE",
                     absl::StrCat("--runner=", search.flag, " is not an executable file"));
  }
  return MakeError(absl::StatusCode::kNotFound, "RUNNER_UNAVAILABLE",
                   absl::StrCat("cannot find ", kRunner, "; tried ", absl::StrJoin(tried, ", "),
                                " (install it beside tir-worker or pass --runner=PATH)"));
}

RunnerSearch ThisProcessSearch(const std::string &flag, const char *argv0) {
  RunnerSearch s;
  s.flag = flag;
  if (argv0 != nullptr && std::string(argv0).find('/') != std::string::npos) {
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(argv0, ec);
    s.exes.push_back(ec ? std::string(argv0) : abs.string());
  }
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) s.exes.push_back(self.string());
  if (const char *r = std::getenv("RUNFILES_DIR"); r != nullptr) s.runfiles_dir = r;
  return s;
}

}  // namespace tir::worker
