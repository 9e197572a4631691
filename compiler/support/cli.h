// What tir's daemons share at their entry points: flags spelled with dashes,
// the cache directory, and draining on SIGTERM / SIGINT.

#ifndef TIR_COMPILER_SUPPORT_CLI_H_
#define TIR_COMPILER_SUPPORT_CLI_H_

#include <functional>
#include <string>
#include <thread>

namespace tir {

// Parses absl flags given as --flag-name or --flag_name (names are rewritten
// to underscores before parsing; values are untouched).
void ParseDashedFlags(int argc, char **argv);

// $XDG_CACHE_HOME/tir, else $HOME/.cache/tir (else /tmp/.cache/tir).
std::string CacheDir();

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
