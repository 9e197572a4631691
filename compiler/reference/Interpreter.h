// The reference interpreter: evaluates a verified tir.graph on the CPU.
//
// Used to verify generated kernels, so it favours clarity over speed: every
// op is evaluated element by element in f64 (integers in int64 with wrap-around)
// and rounded to its result dtype on store (Tensor.h). Shapes come from the
// actual inputs; dynamic extents are resolved per op (dynamic_dims operands
// when given). Scalar semantics are in Elementwise.h.

#ifndef TIR_COMPILER_REFERENCE_INTERPRETER_H_
#define TIR_COMPILER_REFERENCE_INTERPRETER_H_

#include <vector>

#include "absl/status/statusor.h"
#include "compiler/ir/TirDialect.h"
#include "compiler/reference/Tensor.h"

namespace tir::reference {

// Evaluates `graph` on `inputs` (one per argument, dense row-major; scalars
// for scalar and index arguments). Errors: INVALID_ARGUMENT for inputs that do
// not match the signature or shapes that conflict at run time.
absl::StatusOr<std::vector<Tensor>> Evaluate(GraphOp graph, const std::vector<Tensor> &inputs);

// The reference outputs with, for each output that a sum reaches, the size
// of the rounding a correct kernel adds to each element beyond its dtype's:
// where a sum cancels (a mean of values of both signs is much smaller than
// its terms), a kernel's error scales with the terms, not with the result.
// A sum or mean of n terms x_i (reduce add/avg; a matmul's K products)
// contributes u sqrt(n) sum |x_i| (divided by n for a mean), u the unit
// roundoff of the accumulator kernels use (2^-24: f32 for every float but
// f64; 2^-53 for f64); views move the scales with their elements, pointwise
// ops carry them to first order (how far the op moves when an operand moves
// by its scale), max/min/norms carry their inputs'. CheckOutput (Tensor.h)
// turns them into a bound.
struct Reference {
  std::vector<Tensor> outputs;
  // Per output: an f64 tensor of its shape, or NoRounding() where no sum
  // reaches it (then the dtype's bound alone applies).
  std::vector<Tensor> rounding;
};
absl::StatusOr<Reference> EvaluateWithRounding(GraphOp graph, const std::vector<Tensor> &inputs);

// What Reference::rounding holds for an output no sum reaches: dtype
// DTYPE_UNSPECIFIED, no elements.
Tensor NoRounding();
inline bool HasRounding(const Tensor &t) { return t.dtype != tir::v1::DTYPE_UNSPECIFIED; }

// Random inputs for `graph`: every dynamic tensor extent is `extent`, float
// scalars 0.75, index arguments `extent` unless they give a reshape's
// dynamic_dims, which get values that keep its element count (the leading
// ones as close to the square root of what is left as a divisor allows, so
// the reshape regroups). Tensors are seeded from `seed` upwards.
// Gather indices read from an argument (directly or through converts and
// views) are drawn in range (FitGatherIndices).
std::vector<Tensor> SampleInputs(GraphOp graph, int64_t extent, uint64_t seed);

// Redraws, from `seed`, every integer argument of `inputs` that a gather
// reads as its indices (directly or through converts and views) uniformly
// in [0, extent) of the data's axis (at the inputs' shapes; the smallest
// extent where several gathers read it): random integers would pick rows
// outside the data, which a gather refuses.
void FitGatherIndices(GraphOp graph, std::vector<Tensor> &inputs, uint64_t seed);

// Whether evaluating `graph` on inputs from SampleInputs(graph, extent, ...)
// fits this machine: every value the interpreter holds (8 bytes an element)
// and the buffers a launch needs, against TIR_VERIFY_MEMORY_BYTES or, when
// unset, half the physical memory. Errors: RESOURCE_EXHAUSTED with reason
// LIMIT_EXCEEDED naming the element count, the bytes and the limit, so a
// graph too large to verify here is refused at once.
absl::Status CheckVerificationFits(GraphOp graph, int64_t extent);
// The same at given argument shapes (ShapeSolver's form: a tensor's shape,
// an index argument's value as {v}), e.g. a dynamic graph's shape hints.
absl::Status CheckVerificationFitsAt(GraphOp graph, const std::vector<std::vector<int64_t>> &arguments);

// The dtype of an MLIR element type (must be a tir element type or index).
DType DTypeOf(mlir::Type elementOrScalar);

}  // namespace tir::reference

#endif  // TIR_COMPILER_REFERENCE_INTERPRETER_H_
