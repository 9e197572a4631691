// --backend=cuda|host|auto -> a Backend.

#ifndef TIR_WORKER_BACKEND_SELECT_H_
#define TIR_WORKER_BACKEND_SELECT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "worker/backend.h"

namespace tir::worker {

// "cuda": the CUDA backend or its typed error (CUDA_DRIVER_UNAVAILABLE when
// there is no driver or device); "host": the host backend; "auto": cuda when
// it can be created, else host (saying why on stderr). Errors also:
// INVALID_ARGUMENT / UNKNOWN_BACKEND.
absl::StatusOr<std::unique_ptr<Backend>> SelectBackend(const std::string &name, int device, const std::string &work_dir);

}  // namespace tir::worker

#endif  // TIR_WORKER_BACKEND_SELECT_H_
