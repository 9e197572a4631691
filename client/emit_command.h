// `tirctl emit FILE --arch ARCH [--candidate default|N] [-o DIR] [--verify]`:
// plans a graph and writes, per kernel, its generated source, launch rule and
// binary (a cubin from NVRTC, or the host shared object for --arch host);
// --verify (host) runs every kernel on random inputs against the reference
// interpreter and reports the error per output.

#ifndef TIR_CLIENT_EMIT_COMMAND_H_
#define TIR_CLIENT_EMIT_COMMAND_H_

#include <string>

#include "absl/status/statusor.h"

namespace tir::client {

struct EmitOptions {
  std::string arch = "sm_90a";
  std::string candidate = "default";  // "default" or a rank ("0" = best predicted)
  std::string out_dir;                // where files go (created)
  bool verify = false;
  // NVRTC compile cache directory ("" for none); tirctl uses
  // $XDG_CACHE_HOME/tir/nvrtc (else ~/.cache/tir/nvrtc).
  std::string compile_cache_dir;
};

// Returns the report printed on stdout; errors carry a reason
// (INVALID_GRAPH, UNKNOWN_ARCH, NVRTC_COMPILE_FAILED, KERNEL_WRONG, ...).
absl::StatusOr<std::string> EmitCommand(const std::string &text, const EmitOptions &options);

}  // namespace tir::client

#endif  // TIR_CLIENT_EMIT_COMMAND_H_
