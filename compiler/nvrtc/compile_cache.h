// A content-addressed NVRTC compile cache: source + headers + options + NVRTC
// version -> cubin, in memory and optionally in a directory, so no candidate
// compiles twice, even across processes. Identical compiles in flight at the
// same time run once. CompileAll compiles many sources on a fixed number of
// threads.

#ifndef TIR_COMPILER_NVRTC_COMPILE_CACHE_H_
#define TIR_COMPILER_NVRTC_COMPILE_CACHE_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "compiler/nvrtc/nvrtc_compiler.h"

namespace tir::nvrtc {

class CompileCache {
 public:
  // `directory` (optional) persists cubins as <key>.cubin and their logs.
  explicit CompileCache(std::string directory = "");

  // The cubin for `source` under `options`; `hit` says whether it was cached.
  absl::StatusOr<CompiledKernel> Compile(const std::string &source, const CompileOptions &options, bool *hit = nullptr);

  // Compiles every (source, options) pair on `threads` threads; results in order.
  std::vector<absl::StatusOr<CompiledKernel>> CompileAll(
      const std::vector<std::pair<std::string, CompileOptions>> &jobs, int threads);

  // The cache key (hex SHA-256) of a compile.
  static std::string Key(const std::string &source, const CompileOptions &options);

  struct Stats {
    int hits = 0, misses = 0;
  };
  Stats stats() const;

 private:
  struct Entry {
    bool done = false;
    absl::StatusOr<CompiledKernel> result = absl::UnknownError("pending");
  };
  std::string directory_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
  Stats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tir::nvrtc

#endif  // TIR_COMPILER_NVRTC_COMPILE_CACHE_H_
