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
#include "compiler/codegen/HostBuild.h"
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

HostBackend::HostBackend(std::string work_dir) : work_dir_(std::move(work_dir)) {
  capabilities_.set_backend("host");
  capabilities_.set_arch("host");
  capabilities_.set_device_name(CpuModel());
  capabilities_.set_sm_count(std::max(1u, std::thread::hardware_concurrency()));
  capabilities_.set_memory_bytes(static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE));
  capabilities_.set_host_compiler(HostCompilerVersion());
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  capabilities_.set_hostname(host);
}

absl::StatusOr<CompiledCandidate> HostBackend::Compile(const tir::v1::CandidateWork &work, const std::string &arch) {
  if (arch != "host") {
    return MakeError(absl::StatusCode::kInvalidArgument, "UNKNOWN_ARCH",
                     absl::StrCat("the host backend builds for arch host, not ", arch));
  }
  const auto start = std::chrono::steady_clock::now();
  CompiledCandidate out;
  TIR_ASSIGN_OR_RETURN(std::string so, codegen::CompileHostObject(work.source(), work_dir_));
  out.info.set_compile_seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  out.path = so;
  out.format = tir::v1::BINARY_FORMAT_HOST_SHARED_OBJECT;
  std::ifstream in(so, std::ios::binary);
  out.binary.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (out.binary.empty()) return MakeError(absl::StatusCode::kInternal, "INTERNAL", "cannot read back " + so);
  return out;
}

}  // namespace tir::worker
