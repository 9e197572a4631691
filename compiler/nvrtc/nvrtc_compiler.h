// CUDA C++ -> cubin with NVRTC, on the CPU (no GPU or driver needed).

#ifndef TIR_COMPILER_NVRTC_NVRTC_COMPILER_H_
#define TIR_COMPILER_NVRTC_NVRTC_COMPILER_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tir::nvrtc {

// The architectures tir generates code for, in ascending order.
const std::vector<std::string>& SupportedArchs();

// Whether `arch` (e.g. "sm_90a") is one of SupportedArchs().
bool IsSupportedArch(absl::string_view arch);

// NVRTC's version as "MAJOR.MINOR".
std::string Version();

// What to compile and how.
struct CompileOptions {
  // Target architecture, e.g. "sm_90a"; must satisfy IsSupportedArch.
  std::string arch;
  // Emit line information for profilers.
  bool line_info = false;
  // Extra NVRTC options, passed as given.
  std::vector<std::string> extra_options;
  // In-memory headers: (include name, contents).
  std::vector<std::pair<std::string, std::string>> headers;
  // Name of the translation unit in diagnostics.
  std::string program_name = "tir_kernel.cu";
};

// A compiled cubin and what ptxas reported about it.
struct CompiledKernel {
  // ELF cubin bytes.
  std::string cubin;
  // The PTX NVRTC generated (what the cubin was assembled from).
  std::string ptx;
  // The full NVRTC/ptxas log.
  std::string log;
  // Registers per thread of the heaviest kernel in the unit (-1 if unreported).
  int registers = -1;
  // Spill stores + loads in bytes, summed over kernels.
  int spill_bytes = 0;
  // Static shared memory in bytes of the heaviest kernel.
  int shared_bytes = 0;
  // Wall time of the compile in seconds.
  double seconds = 0;
};

// Compiles `source` to a cubin. Errors: INVALID_ARGUMENT/UNKNOWN_ARCH for an
// unsupported arch; INVALID_ARGUMENT/NVRTC_COMPILE_FAILED with the log when the
// source does not compile; INTERNAL for NVRTC failures unrelated to the source.
absl::StatusOr<CompiledKernel> CompileToCubin(absl::string_view source,
                                              const CompileOptions& options);

}  // namespace tir::nvrtc

#endif  // TIR_COMPILER_NVRTC_NVRTC_COMPILER_H_
