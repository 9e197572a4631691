// What tir's daemons share at their entry points: flags spelled with dashes,
// the cache directory, and draining on SIGTERM / SIGINT.

#ifndef TIR_COMPILER_SUPPORT_CLI_H_
#define TIR_COMPILER_SUPPORT_CLI_H_

#include <functional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace tir {

// Parses absl flags given as --flag-name or --flag_name (names are rewritten
// to underscores before parsing; values are untouched).
void ParseDashedFlags(int argc, char **argv);

// The user's cache directory: $XDG_CACHE_HOME/tir (an absolute path; a
// relative one is ignored, as the XDG spec says), else $HOME/.cache/tir,
// else the home directory of the user's passwd entry + /.cache/tir. Never a
// shared place such as /tmp: "" when the user has no home at all.
std::string CacheDir();

// CacheDir(), or NO_CACHE_DIRECTORY (FAILED_PRECONDITION) when there is
// none: set XDG_CACHE_HOME or HOME, or pass a cache directory.
absl::StatusOr<std::string> UserCacheDir();

// Calls `on_signal` on its own thread at the first SIGTERM or SIGINT (the
// handler itself only writes to a pipe). Destroying it without a signal ends
// the thread without calling `on_signal`. One per process.
class SignalWatcher {
 public:
  explicit SignalWatcher(std::function<void()> on_signal);
  ~SignalWatcher();
  SignalWatcher(const SignalWatcher &) = delete;
  SignalWatcher &operator=(const SignalWatcher &) = delete;

 private:
  std::thread thread_;
};

}  // namespace tir

#endif  // TIR_COMPILER_SUPPORT_CLI_H_
