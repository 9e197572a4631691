// Process helpers for tests that run tir's binaries: runfiles, spawning,
// signals.

#ifndef TIR_TESTS_TESTING_PROCESS_H_
#define TIR_TESTS_TESTING_PROCESS_H_

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstdlib>
#include <string>
#include <vector>

extern char **environ;

namespace tir::testing {

// A file of the test's runfiles by its workspace path.
inline std::string Runfile(const std::string &path) {
  return std::string(std::getenv("TEST_SRCDIR")) + "/" + std::getenv("TEST_WORKSPACE") + "/" + path;
}

inline std::string TempDir() { return std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp"; }

// Starts argv[0] with `argv`; -1 when it cannot be started.
inline pid_t Spawn(std::vector<std::string> argv) {
  std::vector<char *> args;
  for (auto &a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, args[0], nullptr, nullptr, args.data(), environ) != 0) return -1;
  return pid;
}

// Sends `sig` and reaps the process.
inline void Stop(pid_t pid, int sig = SIGTERM) {
  if (pid <= 0) return;
  kill(pid, sig);
  int status = 0;
  waitpid(pid, &status, 0);
}

// True while `pid` (a child) has not exited.
inline bool Alive(pid_t pid) {
  int status = 0;
  return pid > 0 && waitpid(pid, &status, WNOHANG) == 0;
}

}  // namespace tir::testing

#endif  // TIR_TESTS_TESTING_PROCESS_H_
