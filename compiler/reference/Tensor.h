// Host tensors for the reference interpreter.
//
// Values are kept dense and row-major. Float dtypes (and i1) are stored as
// doubles already rounded to the dtype (f32, f16, bf16 and f8 rounding is
// emulated on every store); integer and index dtypes as int64 with the
// dtype's wrap-around applied (ui64 keeps its bit pattern).

#ifndef TIR_COMPILER_REFERENCE_TENSOR_H_
#define TIR_COMPILER_REFERENCE_TENSOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tir/v1/graph.pb.h"

namespace tir::reference {

using DType = tir::v1::DType;

bool IsFloat(DType d);
bool IsInteger(DType d);   // si*, ui*, index
bool IsUnsigned(DType d);  // ui*
int BitWidth(DType d);     // i1 -> 1, index -> 64
int StorageBytes(DType d); // bytes per element in a buffer (i1 -> 1)

// Rounds `v` to the nearest value of float dtype `d` (ties to even).
double RoundToFloat(double v, DType d);
// Wraps `v` to integer dtype `d` (two's complement truncation).
int64_t WrapToInteger(int64_t v, DType d);

struct Tensor {
  DType dtype = tir::v1::DTYPE_F32;
  std::vector<int64_t> shape;
  bool scalar = false;       // a scalar value, not a rank-0 tensor
  std::vector<double> f;     // float and i1 dtypes
  std::vector<int64_t> i;    // integer and index dtypes

  static Tensor Zeros(DType dtype, std::vector<int64_t> shape);
  static Tensor Scalar(DType dtype, double value);
  static Tensor ScalarInt(DType dtype, int64_t value);

  int64_t NumElements() const;
  bool UsesInts() const { return IsInteger(dtype); }

  // Element `k` (row-major) as a double / as an int64.
  double GetF(int64_t k) const { return UsesInts() ? AsDouble(k) : f[k]; }
  int64_t GetI(int64_t k) const;
  // Stores `v` at `k` with the dtype's rounding or wrap.
  void SetF(int64_t k, double v);
  void SetI(int64_t k, int64_t v);

  std::string ShapeString() const;

 private:
  double AsDouble(int64_t k) const;
};

// Reads a tensor of `shape` from a buffer laid out with element `strides`
// (empty: row-major), elements stored natively (f16/bf16/f8 as raw bits,
// i1 as one byte).
Tensor FromBuffer(DType dtype, const std::vector<int64_t> &shape,
                  const std::vector<int64_t> &strides, const void *data);

// Writes `t` into a buffer laid out with `strides` (empty: row-major).
void ToBuffer(const Tensor &t, const std::vector<int64_t> &strides, void *data);

// `t` as it reads back after being written through `strides`: where strides
// make elements share an address (0, or overlapping), the last write wins.
Tensor ThroughLayout(const Tensor &t, const std::vector<int64_t> &strides);

// What a buffer laid out with `strides` holds of `t`: along a dimension of
// stride 0 only the element at index 0 is stored (tir's definition of a
// result with a stride-0 dimension), so every element there reads as it.
// This is what verification compares a kernel's output with.
Tensor AsStored(const Tensor &t, const std::vector<int64_t> &strides);

// Size in bytes a buffer with `shape` and `strides` spans.
int64_t BufferBytes(DType dtype, const std::vector<int64_t> &shape,
                    const std::vector<int64_t> &strides);

// Element strides of a dense row-major tensor of `shape`.
std::vector<int64_t> RowMajorStrides(const std::vector<int64_t> &shape);

// Deterministic random values: floats uniform in [-1, 1) (never all zero),
// integers in a small range that avoids overflow in typical graphs, i1 0/1.
Tensor RandomTensor(DType dtype, const std::vector<int64_t> &shape, uint64_t seed);

// The verification bound on RelativeL2Error for outputs of `dtype` computed
// by generated kernels: f64 1e-12, f32 1e-5, bf16/f16 1e-2, f8 1e-1, exact
// for integers and i1.
// The relative L2 error a kernel's output of `dtype` may have against the
// interpreter: the dtype's rounding, and for a value reduced over
// `reduction_length` elements the accumulator's: kernels accumulate
// f32/bf16/f16/f8 data in f32 (unit roundoff u = 2^-24) and f64 in f64
// (2^-53), in blocked order, whose error grows about as u * sqrt(length):
// the bound is max(dtype bound, 4 u sqrt(length)). Integers: exact (0).
// `tf32_operands`: the products' operands were rounded to tf32 (u = 2^-11
// each), so floats are held to at least 4 * 2^-11 (about 2e-3).
double RelativeL2Bound(DType dtype, int64_t reduction_length = 1, bool tf32_operands = false);

// Relative L2 error ||got - want|| / max(||want||, tiny); infinity when the
// shapes differ or any NaN appears in `got` where `want` has none.
double RelativeL2Error(const Tensor &got, const Tensor &want);

// How far from the rounding scale a correct kernel's error can reach: the
// confidence factor lambda of the bound below.
inline constexpr double kRoundingConfidence = 4;

// One output's verification: its relative L2 error and the bound it must
// stay under (NaN never passes).
struct OutputCheck {
  double error = 0;
  double bound = 0;
  bool passed() const { return error <= bound; }
};
// Checks `got` against `want`. The bound is RelativeL2Bound(dtype,
// reduction_length, tf32_operands), and for an output a sum reaches
// (`rounding` from EvaluateWithRounding; NoRounding() for none) at least
// the dtype's bound plus kRoundingConfidence * ||rounding|| / ||want||:
// the error of a float sum of n terms x_i is, with rounding errors taken as
// independent and of mean zero, at most about lambda sqrt(n) u sum |x_i|
// with a probability that nears 1 quickly as lambda grows: Higham and Mary,
// "A New Approach to Probabilistic Rounding Error Analysis", SIAM J. Sci.
// Comput. 41(5), 2019, replace gamma_{n-1} = (n-1) u / (1 - (n-1) u) in the
// worst-case summation bound |s^ - s| <= gamma_{n-1} sum |x_i| (Higham,
// "Accuracy and Stability of Numerical Algorithms", 2nd ed., section 4.2) by
// gamma~_{n-1}(lambda) = exp(lambda sqrt(n-1) u + (n-1) u^2 / (1 - u)) - 1,
// about lambda sqrt(n) u. It holds whatever the order of summation
// (sequential, blocked, split, tree): every partial sum is at most
// sum |x_i|, and no term passes through more than n - 1 additions. Against the result
// alone (the dtype's bound, 4 u sqrt(n) ||want||) a mean near 0 of terms
// near 1 fails a correct kernel: there the rounding is of the terms' size
// and the result is small by cancellation.
OutputCheck CheckOutput(const Tensor &got, const Tensor &want, const Tensor &rounding, int64_t reduction_length = 1,
                        bool tf32_operands = false);

}  // namespace tir::reference

#endif  // TIR_COMPILER_REFERENCE_TENSOR_H_
