#include "compiler/support/cli.h"

#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "absl/flags/parse.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "compiler/support/status.h"

namespace tir {
namespace {

int g_pipe[2] = {-1, -1};

void OnSignal(int) {
  const char c = 1;
  (void)!write(g_pipe[1], &c, 1);
}

}  // namespace

void ParseDashedFlags(int argc, char **argv) {
  std::vector<std::string> spelled(argv, argv + argc);
  std::vector<char *> args;
  for (std::string &a : spelled) {
    if (a.rfind("--", 0) == 0) {
      const size_t end = std::min(a.find('='), a.size());
      std::replace(a.begin() + 2, a.begin() + end, '-', '_');
    }
    args.push_back(a.data());
  }
  // --help lists the program's own flags (absl's default lists only those
  // of a file named after the binary, which none of tir's are).
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) { return !absl::StrContains(file, "absl/"); };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  absl::SetFlagsUsageConfig(usage);
  absl::ParseCommandLine(static_cast<int>(args.size()), args.data());
}

std::string CacheDir() {
  const char *xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && xdg[0] == '/') return std::string(xdg) + "/tir";
  const char *home = std::getenv("HOME");
  if (home && home[0] == '/') return std::string(home) + "/.cache/tir";
  // No HOME: the passwd entry's home (never a shared directory instead).
  std::vector<char> buf(16384);
  struct passwd pw, *found = nullptr;
  if (getpwuid_r(geteuid(), &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr && found->pw_dir != nullptr &&
      found->pw_dir[0] == '/') {
    return std::string(found->pw_dir) + "/.cache/tir";
  }
  return "";
}

absl::StatusOr<std::string> UserCacheDir() {
  std::string dir = CacheDir();
  if (dir.empty()) {
    return MakeError(absl::StatusCode::kFailedPrecondition, "NO_CACHE_DIRECTORY",
                     "this user has no cache directory: XDG_CACHE_HOME and HOME are unset and the user has no home "
                     "directory; set one of them or pass --cache-dir");
  }
  return dir;
}

SignalWatcher::SignalWatcher(std::function<void()> on_signal) {
  if (pipe(g_pipe) != 0) std::abort();  // no descriptors left at startup: nothing sensible to do
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  thread_ = std::thread([on_signal = std::move(on_signal)] {
    char c = 0;
    while (read(g_pipe[0], &c, 1) < 0 && errno == EINTR) {
    }
    if (c == 1) on_signal();
  });
}

SignalWatcher::~SignalWatcher() {
  const char c = 0;  // wakes the thread without a signal
  (void)!write(g_pipe[1], &c, 1);
  thread_.join();
}

}  // namespace tir
