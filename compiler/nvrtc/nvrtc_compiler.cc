#include "compiler/nvrtc/nvrtc_compiler.h"

#include <nvrtc.h>

#include <algorithm>
#include <chrono>
#include <regex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/support/status.h"

namespace tir::nvrtc {
namespace {

// The one adapter from nvrtcResult to absl::Status.
absl::Status FromNvrtc(nvrtcResult result, absl::string_view what) {
  if (result == NVRTC_SUCCESS) return absl::OkStatus();
  return MakeError(absl::StatusCode::kInternal, "INTERNAL",
                   absl::StrCat(what, ": ", nvrtcGetErrorString(result)));
}

// RAII owner of an nvrtcProgram.
class Program {
 public:
  explicit Program(nvrtcProgram p) : p_(p) {}
  ~Program() {
    if (p_ != nullptr) nvrtcDestroyProgram(&p_);
  }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  nvrtcProgram get() const { return p_; }

 private:
  nvrtcProgram p_;
};

// Pulls register/spill/shared-memory figures out of ptxas' verbose output.
void ParsePtxasInfo(CompiledKernel& out) {
  static const std::regex kRegs(R"(Used (\d+) registers)");
  static const std::regex kSpill(R"((\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex kSmem(R"((\d+) bytes smem)");
  for (auto it = std::sregex_iterator(out.log.begin(), out.log.end(), kRegs);
       it != std::sregex_iterator(); ++it) {
    out.registers = std::max(out.registers, std::stoi((*it)[1]));
  }
  for (auto it = std::sregex_iterator(out.log.begin(), out.log.end(), kSpill);
       it != std::sregex_iterator(); ++it) {
    out.spill_bytes += std::stoi((*it)[1]) + std::stoi((*it)[2]);
  }
  for (auto it = std::sregex_iterator(out.log.begin(), out.log.end(), kSmem);
       it != std::sregex_iterator(); ++it) {
    out.shared_bytes = std::max(out.shared_bytes, std::stoi((*it)[1]));
  }
}

}  // namespace

const std::vector<std::string>& SupportedArchs() {
  static const auto* archs = new std::vector<std::string>{
      "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100a", "sm_120", "sm_120a"};
  return *archs;
}

bool IsSupportedArch(absl::string_view arch) {
  const auto& archs = SupportedArchs();
  return std::find(archs.begin(), archs.end(), arch) != archs.end();
}

std::string Version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return absl::StrCat(major, ".", minor);
}

absl::StatusOr<CompiledKernel> CompileToCubin(absl::string_view source,
                                              const CompileOptions& options) {
  if (!IsSupportedArch(options.arch)) {
    return MakeError(absl::StatusCode::kInvalidArgument, "UNKNOWN_ARCH",
                     absl::StrCat("unsupported arch '", options.arch, "'; expected one of ",
                                  absl::StrJoin(SupportedArchs(), ", ")));
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<const char*> header_sources, header_names;
  for (const auto& [name, text] : options.headers) {
    header_names.push_back(name.c_str());
    header_sources.push_back(text.c_str());
  }
  const std::string src(source);
  nvrtcProgram raw = nullptr;
  TIR_RETURN_IF_ERROR(FromNvrtc(
      nvrtcCreateProgram(&raw, src.c_str(), options.program_name.c_str(),
                         static_cast<int>(header_sources.size()), header_sources.data(),
                         header_names.data()),
      "nvrtcCreateProgram"));
  Program program(raw);

  std::vector<std::string> opts = {
      absl::StrCat("--gpu-architecture=", options.arch),
      "--std=c++17",
      "--ptxas-options=-v",
      "-default-device",
  };
  if (options.line_info) opts.push_back("--generate-line-info");
  opts.insert(opts.end(), options.extra_options.begin(), options.extra_options.end());
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());

  const nvrtcResult compiled =
      nvrtcCompileProgram(program.get(), static_cast<int>(argv.size()), argv.data());
  CompiledKernel out;
  size_t log_size = 0;
  TIR_RETURN_IF_ERROR(FromNvrtc(nvrtcGetProgramLogSize(program.get(), &log_size),
                                "nvrtcGetProgramLogSize"));
  out.log.resize(log_size);
  TIR_RETURN_IF_ERROR(
      FromNvrtc(nvrtcGetProgramLog(program.get(), out.log.data()), "nvrtcGetProgramLog"));
  while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n')) {
    out.log.pop_back();
  }
  if (compiled == NVRTC_ERROR_COMPILATION) {
    return MakeError(absl::StatusCode::kInvalidArgument, "NVRTC_COMPILE_FAILED",
                     absl::StrCat("NVRTC failed to compile ", options.program_name, " for ",
                                  options.arch, ":\n", out.log));
  }
  TIR_RETURN_IF_ERROR(FromNvrtc(compiled, "nvrtcCompileProgram"));

  size_t cubin_size = 0;
  TIR_RETURN_IF_ERROR(
      FromNvrtc(nvrtcGetCUBINSize(program.get(), &cubin_size), "nvrtcGetCUBINSize"));
  out.cubin.resize(cubin_size);
  TIR_RETURN_IF_ERROR(FromNvrtc(nvrtcGetCUBIN(program.get(), out.cubin.data()), "nvrtcGetCUBIN"));
  size_t ptx_size = 0;
  TIR_RETURN_IF_ERROR(FromNvrtc(nvrtcGetPTXSize(program.get(), &ptx_size), "nvrtcGetPTXSize"));
  out.ptx.resize(ptx_size);
  TIR_RETURN_IF_ERROR(FromNvrtc(nvrtcGetPTX(program.get(), out.ptx.data()), "nvrtcGetPTX"));
  while (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  ParsePtxasInfo(out);
  out.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace tir::nvrtc
