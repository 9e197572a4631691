//===- KernelBuild.cpp - the one build of a generated kernel --------------===//

#include "compiler/codegen/KernelBuild.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "compiler/codegen/Emitter.h"
#include "compiler/codegen/HostBuild.h"
#include "compiler/nvrtc/nvrtc_compiler.h"
#include "compiler/support/digest.h"
#include "compiler/support/status.h"
#include "compiler/target/ArchTable.h"

namespace tir::codegen {

absl::StatusOr<KernelBinary> BuildKernel(const std::string &source, const std::string &arch,
                                         const std::vector<std::string> &compile_options,
                                         nvrtc::CompileCache &cache, const std::string &host_work_dir) {
  TIR_ASSIGN_OR_RETURN(target::ArchInfo info, target::LookupArch(arch));
  KernelBinary out;
  const auto start = std::chrono::steady_clock::now();
  if (info.is_gpu) {
    nvrtc::CompileOptions options;
    options.arch = arch;
    options.headers = RuntimeHeaders();
    for (const std::string &o : compile_options) {
      if (o == "-lineinfo") {
        options.line_info = true;
      } else {
        options.extra_options.push_back(o);
      }
    }
    bool hit = false;
    TIR_ASSIGN_OR_RETURN(nvrtc::CompiledKernel k, cache.Compile(source, options, &hit));
    out.binary = std::move(k.cubin);
    out.format = tir::v1::BINARY_FORMAT_CUBIN;
    out.info.set_registers(k.registers > 0 ? k.registers : 0);
    out.info.set_spill_bytes(k.spill_bytes);
    out.info.set_static_shared_memory_bytes(k.shared_bytes);
    out.info.set_compile_seconds(k.seconds);
    out.info.set_cache_hit(hit);
    out.info.set_log(k.log.substr(0, 4000));
  } else {
    if (!compile_options.empty()) {
      return MakeError(absl::StatusCode::kInvalidArgument, "INVALID_ARGUMENT",
                       absl::StrCat("host builds take no compile options; got ", compile_options.front()));
    }
    TIR_ASSIGN_OR_RETURN(out.path, CompileHostObject(source, host_work_dir));
    std::ifstream in(out.path, std::ios::binary);
    out.binary.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) return MakeError(absl::StatusCode::kInternal, "INTERNAL", "cannot read back " + out.path);
    out.format = tir::v1::BINARY_FORMAT_HOST_SHARED_OBJECT;
    out.info.set_compile_seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  if (out.binary.empty()) {
    return MakeError(absl::StatusCode::kInternal, "INTERNAL", absl::StrCat("the build for ", arch, " made an empty binary"));
  }
  out.sha256 = Sha256Hex(out.binary);
  return out;
}

std::string HostCompilerVersion() {
  const char *cxx = std::getenv("TIR_HOST_CXX");
  const std::string cmd = absl::StrCat(cxx && *cxx ? cxx : "c++", " --version 2>/dev/null");
  FILE *p = popen(cmd.c_str(), "r");
  if (p == nullptr) return "";
  char buf[256] = {0};
  std::string first = fgets(buf, sizeof(buf), p) ? buf : "";
  pclose(p);
  return std::string(absl::StripAsciiWhitespace(first));
}

std::string ToolchainOf(const std::string &arch) {
  absl::StatusOr<target::ArchInfo> info = target::LookupArch(arch);
  if (!info.ok()) return "";
  if (info->is_gpu) return absl::StrCat("nvrtc ", nvrtc::Version());
  static const std::string *host = new std::string(HostCompilerVersion());
  return *host;
}

}  // namespace tir::codegen
