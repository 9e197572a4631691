#include "worker/backend_select.h"

#include <cstdio>

#include "compiler/support/status.h"
#include "worker/cuda/cuda_backend.h"
#include "worker/host/host_backend.h"

namespace tir::worker {

absl::StatusOr<std::unique_ptr<Backend>> SelectBackend(const std::string &name, int device, const std::string &work_dir) {
  if (name == "host") return std::make_unique<HostBackend>(work_dir + "/host");
  if (name == "cuda" || name == "auto") {
    absl::StatusOr<std::unique_ptr<CudaBackend>> cuda = CudaBackend::Create(device, work_dir + "/cuda");
    if (cuda.ok()) return std::unique_ptr<Backend>(std::move(*cuda));
    if (name == "cuda") return cuda.status();
    std::fprintf(stderr, "tir-worker: no CUDA backend (%s: %s); using the host backend\n",
                 ReasonOf(cuda.status()).c_str(), std::string(cuda.status().message()).c_str());
    return std::make_unique<HostBackend>(work_dir + "/host");
  }
  return MakeError(absl::StatusCode::kInvalidArgument, "UNKNOWN_BACKEND",
                   "--backend must be cuda, host or auto, not " + name);
}

}  // namespace tir::worker
