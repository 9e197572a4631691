#include "client/doctor.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "absl/strings/str_format.h"
#include "client/local_service.h"
#include "compiler/support/cli.h"
#include "compiler/nvrtc/nvrtc_compiler.h"
#include "server/store/rocksdb_kernel_store.h"
#include "worker/cuda/cuda_driver.h"

namespace tir::client {
namespace {

constexpr char kProbeKernel[] = R"(
extern "C" __global__ void tir_probe(const float* x, float* y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * 2.0f + 1.0f;
}
)";

Check NvrtcCheck() {
  Check c{"nvrtc", false, ""};
  nvrtc::CompileOptions options;
  options.arch = "sm_90a";
  auto compiled = nvrtc::CompileToCubin(kProbeKernel, options);
  if (!compiled.ok()) {
    c.detail = std::string(compiled.status().message());
    return c;
  }
  c.ok = true;
  c.detail = absl::StrFormat("NVRTC %s compiled a probe kernel to a %zu-byte sm_90a cubin in %.0f ms (%d registers)",
                             nvrtc::Version(), compiled->cubin.size(), compiled->seconds * 1e3,
                             compiled->registers);
  return c;
}

Check CudaCheck() {
  Check c{"cuda", false, ""};
  auto driver = cuda::CudaDriver::Load();
  if (!driver.ok()) {
    c.detail = absl::StrCat(driver.status().message(), "; the host backend will be used");
    return c;
  }
  auto info = (*driver)->Device(0);
  if (!info.ok()) {
    c.detail = std::string(info.status().message());
    return c;
  }
  c.ok = true;
  c.detail = absl::StrFormat("driver %s, device 0: %s (%s, %d SMs, %.1f GiB)",
                             (*driver)->Version(), info->name, info->Arch(), info->sm_count,
                             info->memory_bytes / double(1 << 30));
  return c;
}

Check StoreCheck(const std::string& cache_dir) {
  Check c{"store", false, ""};
  std::error_code ec;
  const std::string path = (std::filesystem::path(cache_dir) / "store").string();
  std::filesystem::create_directories(path, ec);
  if (ec) {
    c.detail = absl::StrCat("cannot create ", path, ": ", ec.message());
    return c;
  }
  // Read beside the local service, which holds the store open while it runs.
  auto store = std::filesystem::exists(path + "/CURRENT") ? store::RocksDbKernelStore::OpenReadOnly(path)
                                                          : store::RocksDbKernelStore::Open(path);
  if (!store.ok()) {
    c.detail = std::string(store.status().message());
    return c;
  }
  auto stats = (*store)->KernelStats();
  if (!stats.ok()) {
    c.detail = std::string(stats.status().message());
    return c;
  }
  c.ok = true;
  c.detail = absl::StrFormat("RocksDB at %s: %d kernels, %d bytes", path, stats->first,
                             stats->second);
  return c;
}

// The local service: running and answering, or not running (it starts on
// first use); one that holds its lock and does not answer is a finding.
Check ServiceCheck(const std::string& cache_dir) {
  Check c{"service", false, ""};
  absl::StatusOr<tir::v1::LocalService> found = FindLocalService(cache_dir, absl::Now() + absl::Seconds(5));
  if (found.ok()) {
    c.ok = true;
    c.detail = absl::StrFormat("local service pid %d at %s (%s worker)", found->pid(), found->address(), found->arch());
  } else if (found.status().code() == absl::StatusCode::kNotFound) {
    c.ok = true;
    c.detail = absl::StrCat("no local service runs (one starts on first use; ", LocalServiceDir(cache_dir), ")");
  } else {
    c.detail = std::string(found.status().message());
  }
  return c;
}

Check HostCompilerCheck() {
  Check c{"host-compiler", false, ""};
  FILE* p = popen("c++ --version 2>&1", "r");
  if (p == nullptr) {
    c.detail = "cannot run c++";
    return c;
  }
  char line[256] = {};
  const bool got = std::fgets(line, sizeof(line), p) != nullptr;
  const int rc = pclose(p);
  if (!got || rc != 0) {
    c.detail = "no system C++ compiler (c++) on PATH; the host backend needs one";
    return c;
  }
  std::string s(line);
  while (!s.empty() && s.back() == '\n') s.pop_back();
  c.ok = true;
  c.detail = s;
  return c;
}


}  // namespace

std::string DefaultCacheDir() { return tir::CacheDir(); }

std::vector<Check> RunDoctor(const std::string& cache_dir) {
  return {NvrtcCheck(), CudaCheck(), HostCompilerCheck(), StoreCheck(cache_dir), ServiceCheck(cache_dir)};
}

std::string FormatChecks(const std::vector<Check>& checks, bool json) {
  std::string out;
  if (json) {
    llvm::json::Array list;
    for (const Check& c : checks) list.push_back(llvm::json::Object{{"name", c.name}, {"ok", c.ok}, {"detail", c.detail}});
    return llvm::formatv("{0}\n", llvm::json::Value(llvm::json::Object{{"checks", std::move(list)}})).str();
  }
  for (const Check& c : checks) {
    absl::StrAppendFormat(&out, "%-14s %-4s %s\n", c.name, c.ok ? "ok" : "no", c.detail);
  }
  return out;
}

}  // namespace tir::client
