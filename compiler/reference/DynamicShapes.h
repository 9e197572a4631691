// Dynamic shapes: the sizes a compile request gives for a graph's dynamic
// dims, checked against the graph, and the bucket of sizes they fall in.
//
// A graph's dynamic dims are the `?` dims of its tensor arguments and the
// values of its index arguments (the operands of `dynamic_dims(...)`). A
// request names sizes with ShapeHints: the full shape of a tensor argument,
// or for an index argument its value as a one-element shape.
//
// BindShapes checks the hints and infers every value's shape from them
// (ShapeSolver's rules: elementwise operands agree, a reshape keeps the
// element count, a concatenation sums, ...). An index argument the tensors
// determine (a reshape's `dynamic_dims(%n)` of a static input) needs no
// hint: its value is inferred.
//
// A bucket is a range of sizes per dynamic dim that one tuned bundle serves;
// by default a size n falls in (2^(k-1), 2^k] for the power of two 2^k >= n.
// The policy (config `shapeBuckets`):
//   "pow2"        powers of two (the default);
//   "multiple:N"  multiples of N: n falls in (N*(j-1), N*j];
//   "bound"       a dim with a declared bound (tir.bounds) has one bucket,
//                 [1, bound]; others: powers of two.
// Under every policy a bucket never reaches past the dim's bound. A bundle
// is tuned at its bucket's upper ends (its representative) when those sizes
// satisfy the graph, else at the sizes asked.

#ifndef TIR_COMPILER_REFERENCE_DYNAMICSHAPES_H_
#define TIR_COMPILER_REFERENCE_DYNAMICSHAPES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compiler/ir/TirDialect.h"
#include "google/protobuf/repeated_field.h"
#include "tir/v1/graph.pb.h"

namespace tir::reference {

// One dynamic dim of a graph's signature.
struct DynamicDim {
  uint32_t input = 0;  // graph argument
  uint32_t dim = 0;    // 0 for an index argument
  bool index = false;  // an index argument's value
  int64_t bound = 0;   // declared upper bound (tir.bounds); 0: none
};

// The graph's dynamic dims in argument, then dim order.
std::vector<DynamicDim> DynamicDimsOf(GraphOp graph);

struct BucketPolicy {
  enum Kind { kPowerOfTwo, kMultiple, kBound } kind = kPowerOfTwo;
  int64_t multiple = 0;  // kMultiple's N
  // "pow2", "multiple:N" (N >= 1), "bound"; "" is pow2. Errors:
  // INVALID_ARGUMENT (INVALID_CONFIG).
  static absl::StatusOr<BucketPolicy> Parse(absl::string_view text);
  std::string Name() const;
};

// Per graph argument: a tensor's shape, an index argument's value as {v},
// {} for another scalar.
using ArgShapes = std::vector<std::vector<int64_t>>;

struct DimRange {
  int64_t lower = 0, upper = 0;  // sizes lower..upper, both included
};

struct BoundShapes {
  ArgShapes args;              // every argument's shape (index: its value)
  std::vector<int64_t> sizes;  // per DynamicDim
};

// The hints checked against `graph` (whose dynamic dims are `dims`) and the
// shapes they give. Errors, all INVALID_ARGUMENT:
//  - SHAPE_HINT_MISSING: a dynamic dim without a size (naming every one);
//  - INVALID_SHAPE_HINT: a hint for no argument or a non-index scalar, twice
//    for one argument, of the wrong rank, a static dim given another size,
//    or sizes the graph's ops contradict (naming the argument and dim);
//  - LIMIT_EXCEEDED: a size of 0, above 2^40, a tensor past 2^48 elements;
//  - SHAPE_OVER_BOUND: a size above its tir.bounds bound.
absl::StatusOr<BoundShapes> BindShapes(GraphOp graph, const std::vector<DynamicDim> &dims,
                                       const google::protobuf::RepeatedPtrField<tir::v1::ShapeHint> &hints);

// The bucket of each dim's size under `policy`.
std::vector<DimRange> BucketOf(const std::vector<DynamicDim> &dims, const std::vector<int64_t> &sizes,
                               const BucketPolicy &policy);

// The shapes a bucket's bundle is tuned at: every dim at its bucket's upper
// end when the graph accepts that, else `asked`.
BoundShapes Representative(GraphOp graph, const std::vector<DynamicDim> &dims, const std::vector<DimRange> &bucket,
                           const BoundShapes &asked);

// The shapes as hints: one per tensor or index argument, in order.
std::vector<tir::v1::ShapeHint> AsHints(GraphOp graph, const ArgShapes &args);

// "0=8x512 1=512x64 2=7": canonical (a hint per line of AsHints), used in
// keys and shown to users. A rank-0 tensor is "i=".
std::string FormatShapes(const std::vector<tir::v1::ShapeHint> &hints);
// "0=8x512" -> the hint (also "0=8,512"). Errors: INVALID_ARGUMENT
// (INVALID_SHAPE_HINT).
absl::StatusOr<tir::v1::ShapeHint> ParseShapeHint(absl::string_view text);
// The bucket as DimBuckets (with each dim's bound).
google::protobuf::RepeatedPtrField<tir::v1::DimBucket> BucketProtos(const std::vector<DynamicDim> &dims,
                                                                   const std::vector<DimRange> &bucket);
// "0:1=257..512 2=1..6": the bucket, per dim "input:dim=lower..upper" (an
// index input: "input=lower..upper"; one size alone: "input:dim=N").
std::string FormatBucket(const std::vector<DynamicDim> &dims, const std::vector<DimRange> &bucket);
std::string FormatBucket(const google::protobuf::RepeatedPtrField<tir::v1::DimBucket> &buckets);

}  // namespace tir::reference

#endif  // TIR_COMPILER_REFERENCE_DYNAMICSHAPES_H_
