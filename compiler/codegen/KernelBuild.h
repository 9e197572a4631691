//===- KernelBuild.h - the one build of a generated kernel ------*- C++ -*-===//
//
// Every binary of a generated kernel is built here: a worker's (to measure)
// and the coordinator's (to serve). NVRTC and the host compiler are
// deterministic for one source, arch, option list and toolchain version, so
// a worker's report names what it ran by the SHA-256 of these bytes and the
// coordinator, building the winner itself, compares (DESIGN.md, "Who builds
// what clients run").
//
//===----------------------------------------------------------------------===//

#ifndef TIR_COMPILER_CODEGEN_KERNELBUILD_H_
#define TIR_COMPILER_CODEGEN_KERNELBUILD_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/nvrtc/compile_cache.h"
#include "tir/v1/kernel.pb.h"

namespace tir::codegen {

struct KernelBinary {
  std::string binary;
  tir::v1::BinaryFormat format = tir::v1::BINARY_FORMAT_UNSPECIFIED;
  // Registers, spills, shared memory, compile time, cache hit, log.
  tir::v1::CompileInfo info;
  // A host object's file (what the runner loads); "" for a cubin.
  std::string path;
  // Hex SHA-256 of `binary`.
  std::string sha256;
};

// Builds `source` for `arch`: a cubin with NVRTC (through `cache`) for a
// GPU arch, a shared object with the host compiler under `host_work_dir`
// for "host". `compile_options` as a work item carries them ("-lineinfo"
// and NVRTC options). Errors: UNKNOWN_ARCH, the compilers' reasons.
absl::StatusOr<KernelBinary> BuildKernel(const std::string &source, const std::string &arch,
                                         const std::vector<std::string> &compile_options,
                                         nvrtc::CompileCache &cache, const std::string &host_work_dir);

// The toolchain BuildKernel uses for `arch`: "nvrtc <version>" for a GPU
// arch, the host compiler's first --version line for "host". Two builders
// with the same toolchain build the same bytes.
std::string ToolchainOf(const std::string &arch);

// The host compiler's first --version line (TIR_HOST_CXX or c++; "" when
// it does not run).
std::string HostCompilerVersion();

}  // namespace tir::codegen

#endif  // TIR_COMPILER_CODEGEN_KERNELBUILD_H_
