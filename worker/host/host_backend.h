// The host backend: candidates built by the system C++ compiler into shared
// objects and run on the CPU by the runner (steady-clock timing).

#ifndef TIR_WORKER_HOST_HOST_BACKEND_H_
#define TIR_WORKER_HOST_HOST_BACKEND_H_

#include "worker/backend.h"

namespace tir::worker {

class HostBackend : public Backend {
 public:
  // Shared objects go under `work_dir` (one directory per source hash).
  explicit HostBackend(std::string work_dir);
  std::string name() const override { return "host"; }
  tir::v1::WorkerCapabilities Capabilities() const override { return capabilities_; }
  absl::StatusOr<CompiledCandidate> Compile(const tir::v1::CandidateWork &work, const std::string &arch) override;
  std::vector<std::string> RunnerFlags() const override { return {"--backend=host"}; }

 private:
  std::string work_dir_;
  tir::v1::WorkerCapabilities capabilities_;
};


}  // namespace tir::worker

#endif  // TIR_WORKER_HOST_HOST_BACKEND_H_
