// `tirctl emit FILE --arch ARCH [--candidate default|N|KEY=VALUE,...] [-o DIR] [--verify]`:
// plans a graph and writes, per kernel, its generated source, launch rule and
// binary (a cubin from NVRTC, or the host shared object for --arch host);
// --verify (host) runs every kernel on random inputs against the reference
// interpreter and reports the error per output.

#ifndef TIR_CLIENT_EMIT_COMMAND_H_
#define TIR_CLIENT_EMIT_COMMAND_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/codegen/HostBuild.h"
#include "compiler/ir/TirDialect.h"

namespace tir::client {

struct EmitOptions {
  std::string arch = "sm_90a";
  // "default", a rank ("0" = best predicted), or KEY=VALUE[,KEY=VALUE...]:
  // the best-ranked candidate with those tile parameters (an absent one
  // matches 0; NO_SUCH_CANDIDATE when none has them).
  std::string candidate = "default";
  std::string out_dir;                // where files go (created)
  bool verify = false;
  // NVRTC compile cache directory ("" for none); tirctl uses
  // $XDG_CACHE_HOME/tir/nvrtc (else ~/.cache/tir/nvrtc).
  std::string compile_cache_dir;
  // CompileOptions.precision: "" / "ieee", or "tf32".
  std::string precision;
  // --report: each kernel's performance report (compiler/perf/Report.h) for
  // `device` (a device key or driver name; "" the arch's representative
  // part), as text after the kernel's lines or, with report_json, the whole
  // answer as JSON.
  bool report = false;
  bool report_json = false;
  std::string device;
};

// Returns the report printed on stdout; errors carry a reason
// (INVALID_GRAPH, UNKNOWN_ARCH, NVRTC_COMPILE_FAILED, KERNEL_WRONG, ...).
// With --verify for a GPU arch, the kernel NVRTC compiled (the same source,
// candidate and launch rule) runs lane by lane on the CPU (tir_lanes.h); for
// --arch host, the plain host form runs.
absl::StatusOr<std::string> EmitCommand(const std::string &text, const EmitOptions &options);

// `tirctl verify DIR [--arch A]`: re-runs every kernel `tirctl emit -o DIR`
// wrote, from its .cu, .mlir (the kernel graph) and .launch.json as they are
// on disk now, with the runtime headers found in DIR, against the reference
// interpreter; the report is emit --verify's. The arch defaults to the one
// the kernel was emitted for: a GPU arch runs the GPU form emulated lane by
// lane, host the plain host form. Errors: NOT_FOUND, HOST_COMPILE_FAILED
// (per kernel, in the report), KERNEL_WRONG with the report.
struct VerifyOptions {
  std::string arch;  // "" = the arch in each .launch.json
};
absl::StatusOr<std::string> VerifyCommand(const std::string &dir, const VerifyOptions &options);

// Runs `built` once on sampled inputs (dynamic extents 8) against the
// reference and returns one line per output (or the emulator's error);
// clears `allPassed` when it is wrong.
absl::StatusOr<std::string> VerifyKernel(GraphOp kernel, const std::vector<std::string> &field_names,
                                         const tir::v1::LaunchRule &launch, const codegen::HostKernel &built,
                                         bool &allPassed, bool tf32_operands = false);

}  // namespace tir::client

#endif  // TIR_CLIENT_EMIT_COMMAND_H_
