#include "worker/host/host_backend.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "compiler/codegen/KernelBuild.h"
#include "compiler/support/status.h"

namespace tir::worker {
namespace {

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, "model name")) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
    }
  }
  return "unknown CPU";
}

}  // namespace

HostBackend::HostBackend(std::string work_dir) : work_dir_(std::move(work_dir)) {
  capabilities_.set_backend("host");
  capabilities_.set_arch("host");
  capabilities_.set_device_name(CpuModel());
  capabilities_.set_sm_count(std::max(1u, std::thread::hardware_concurrency()));
  capabilities_.set_memory_bytes(static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE));
  capabilities_.set_host_compiler(codegen::HostCompilerVersion());
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  capabilities_.set_hostname(host);
}

absl::StatusOr<CompiledCandidate> HostBackend::Compile(const tir::v1::CandidateWork &work, const std::string &arch) {
  if (arch != "host") {
    return MakeError(absl::StatusCode::kInvalidArgument, "UNKNOWN_ARCH",
                     absl::StrCat("the host backend builds for arch host, not ", arch));
  }
  nvrtc::CompileCache unused;
  TIR_ASSIGN_OR_RETURN(codegen::KernelBinary k, codegen::BuildKernel(work.source(), arch, {}, unused, work_dir_));
  CompiledCandidate out;
  out.path = std::move(k.path);
  out.binary = std::move(k.binary);
  out.sha256 = std::move(k.sha256);
  out.format = k.format;
  out.info = std::move(k.info);
  return out;
}

}  // namespace tir::worker
