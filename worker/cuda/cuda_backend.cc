#include "worker/cuda/cuda_backend.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "compiler/codegen/KernelBuild.h"
#include "compiler/nvrtc/nvrtc_compiler.h"
#include "compiler/support/status.h"

namespace tir::worker {

absl::StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::Create(int device, const std::string &work_dir) {
  TIR_ASSIGN_OR_RETURN(std::unique_ptr<cuda::CudaDriver> driver, cuda::CudaDriver::Load());
  TIR_ASSIGN_OR_RETURN(int count, driver->DeviceCount());
  if (device < 0 || device >= count) {
    return MakeError(absl::StatusCode::kInvalidArgument, "NO_SUCH_DEVICE",
                     absl::StrCat("--device ", device, " but the driver sees ", count, " device(s)"));
  }
  TIR_ASSIGN_OR_RETURN(cuda::DeviceInfo info, driver->Device(device));
  tir::v1::WorkerCapabilities caps;
  caps.set_backend("cuda");
  caps.set_arch(info.Arch());
  caps.set_device_name(info.name);
  caps.set_sm_count(info.sm_count);
  caps.set_memory_bytes(info.memory_bytes);
  caps.set_sm_clock_mhz(info.sm_clock_khz / 1000);
  caps.set_memory_clock_mhz(info.memory_clock_khz / 1000);
  caps.set_driver_version(driver->Version());
  caps.set_nvrtc_version(nvrtc::Version());
  caps.set_device_index(device);
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  caps.set_hostname(host);
  return std::unique_ptr<CudaBackend>(new CudaBackend(device, work_dir, caps));
}

CudaBackend::CudaBackend(int device, std::string work_dir, tir::v1::WorkerCapabilities caps)
    : device_(device), work_dir_(std::move(work_dir)), capabilities_(std::move(caps)), cache_(work_dir_ + "/nvrtc") {}

std::vector<std::string> CudaBackend::RunnerFlags() const {
  return {"--backend=cuda", absl::StrCat("--device=", device_)};
}

absl::StatusOr<CompiledCandidate> CudaBackend::Compile(const tir::v1::CandidateWork &work, const std::string &arch) {
  const std::vector<std::string> options(work.compile_options().begin(), work.compile_options().end());
  TIR_ASSIGN_OR_RETURN(codegen::KernelBinary k, codegen::BuildKernel(work.source(), arch, options, cache_, work_dir_ + "/host"));
  CompiledCandidate out;
  out.binary = std::move(k.binary);
  out.sha256 = std::move(k.sha256);
  out.format = k.format;
  out.info = std::move(k.info);
  // The runner loads the cubin from disk.
  const std::filesystem::path dir = std::filesystem::path(work_dir_) / "cubins";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  out.path = (dir / (out.sha256 + ".cubin")).string();
  if (!std::filesystem::exists(out.path)) {
    const std::string tmp = absl::StrCat(out.path, ".", getpid(), ".", std::hash<std::thread::id>()(std::this_thread::get_id()));
    std::ofstream(tmp, std::ios::binary) << out.binary;
    std::filesystem::rename(tmp, out.path, ec);
    if (ec) return MakeError(absl::StatusCode::kInternal, "INTERNAL", "cannot write " + out.path + ": " + ec.message());
  }
  return out;
}

}  // namespace tir::worker
