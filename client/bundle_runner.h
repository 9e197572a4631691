// Runs a host bundle (BINARY_FORMAT_HOST_SHARED_OBJECT) on the CPU from what
// the bundle itself says: its input/output/intermediate types, each kernel's
// argument records, iteration domain and launch rule. What a framework's
// launcher does with a cubin bundle, on the host backend; also how tests
// check that a returned bundle computes the graph.

#ifndef TIR_CLIENT_BUNDLE_RUNNER_H_
#define TIR_CLIENT_BUNDLE_RUNNER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/reference/Tensor.h"
#include "tir/v1/kernel.pb.h"

namespace tir::client {

// Runs every kernel of `bundle` in order on `inputs` (dense, one per graph
// input) and returns the graph outputs. Outputs and intermediates are
// poisoned (0xff) first. `work_dir` holds the loaded shared objects.
// With `bundle_key`, the bundle's signature is checked before anything is
// loaded (client/bundle_signature.h).
// Errors: FAILED_PRECONDITION for a bundle that is not a host bundle or has
// dynamic extents, or whose signature does not check (BUNDLE_UNSIGNED,
// BUNDLE_KEY_MISMATCH, BUNDLE_SIGNATURE_INVALID); INVALID_ARGUMENT for inputs
// that do not match it.
absl::StatusOr<std::vector<reference::Tensor>> RunHostBundle(const tir::v1::KernelBundle &bundle,
                                                             const std::vector<reference::Tensor> &inputs,
                                                             const std::string &work_dir,
                                                             const std::string &bundle_key = "");

}  // namespace tir::client

#endif  // TIR_CLIENT_BUNDLE_RUNNER_H_
