// `tirctl doctor`: checks what this machine can do for tir.

#ifndef TIR_CLIENT_DOCTOR_H_
#define TIR_CLIENT_DOCTOR_H_

#include <string>
#include <vector>

namespace tir::client {

// One finding.
struct Check {
  std::string name;    // "nvrtc", "cuda", "store", "host-compiler"
  bool ok = false;     // usable
  std::string detail;  // what was found, or why it is unusable
};

// Runs every check. `cache_dir` holds the embedded store.
std::vector<Check> RunDoctor(const std::string& cache_dir);

// The embedded default's cache directory: $XDG_CACHE_HOME/tir, else ~/.cache/tir.
std::string DefaultCacheDir();

// Renders findings as aligned text or as a JSON object.
std::string FormatChecks(const std::vector<Check>& checks, bool json);

}  // namespace tir::client

#endif  // TIR_CLIENT_DOCTOR_H_
