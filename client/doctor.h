// `tirctl doctor`: checks what this machine can do for tir.

#ifndef TIR_CLIENT_DOCTOR_H_
#define TIR_CLIENT_DOCTOR_H_

#include <string>
#include <vector>

namespace tir::client {

// One finding.
struct Check {
  std::string name;    // "nvrtc", "cuda", "host-compiler", "store", "service"
  bool ok = false;     // usable
  std::string detail;  // what was found, or why it is unusable
};

// Runs every check. `cache_dir` holds the local service's store (read beside
// a running service) and its directory.
std::vector<Check> RunDoctor(const std::string& cache_dir);

// The local service's cache directory: $XDG_CACHE_HOME/tir, else ~/.cache/tir.
std::string DefaultCacheDir();

// Renders findings as aligned text or as a JSON object.
std::string FormatChecks(const std::vector<Check>& checks, bool json);

}  // namespace tir::client

#endif  // TIR_CLIENT_DOCTOR_H_
