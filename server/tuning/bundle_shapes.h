// A dynamic graph's bundle at one shape of its bucket.
//
// A bundle tuned for a bucket keeps dynamic (-1) extents: its kernels take
// sizes and strides at launch. Served for one shape, it is sized: every
// tensor's and iteration domain's extents are worked out from the graph
// inputs' shape, kernel by kernel (each kernel graph, KernelEntry.kernel_mlir,
// infers its results' shapes from its inputs' and resolves its iteration
// domain as a launcher does), so the copy launches like a static bundle.
// The same walk gives each kernel's check at that shape: a work item with
// the bundle's chosen candidate, verified against the reference there.

#ifndef TIR_SERVER_TUNING_BUNDLE_SHAPES_H_
#define TIR_SERVER_TUNING_BUNDLE_SHAPES_H_

#include <vector>

#include "absl/status/statusor.h"
#include "tir/v1/kernel.pb.h"
#include "tir/v1/worker_service.pb.h"

namespace tir::tuning {

struct BundleAtShape {
  tir::v1::KernelBundle bundle;           // sized; served_shape not set
  std::vector<tir::v1::WorkItem> checks;  // per kernel: verify, one candidate
};

// `shape`: a hint for every tensor or index input with dynamic extents
// (others may be given too). Errors: INVALID_ARGUMENT (INVALID_SHAPE_HINT)
// for a shape the bundle's inputs do not take; FAILED_PRECONDITION
// (BUNDLE_NOT_SIZABLE) for a bundle without kernel graphs (stored before
// they were kept: compile with force_retune); INTERNAL when a kernel's
// extents cannot be resolved.
absl::StatusOr<BundleAtShape> SizeBundle(const tir::v1::KernelBundle &stored,
                                         const std::vector<tir::v1::ShapeHint> &shape);

// Whether any of the bundle's tensors or domains has a dynamic extent.
bool HasDynamicExtents(const tir::v1::KernelBundle &bundle);

}  // namespace tir::tuning

#endif  // TIR_SERVER_TUNING_BUNDLE_SHAPES_H_
