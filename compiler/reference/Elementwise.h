// Scalar semantics of tir's pointwise ops: the definition generated kernels
// are checked against.
//
// Floats compute in double and are rounded to the result dtype by the caller.
// Integers compute in int64 and wrap to the result dtype; unsigned dtypes
// compare and divide as unsigned. Conventions where IEEE or C leave a choice:
//  - div/rem/mod by integer zero give 0; div truncates toward zero.
//  - rem has the sign of the dividend (C fmod/%); mod the sign of the divisor.
//  - max/min propagate NaN.
//  - add_square(a, b) = a + b*b.
//  - activation backward ops take (x, dy): the forward input and the incoming
//    gradient, and return dx.
//  - softplus(x; beta) = log1p(exp(beta*x)) / beta; swish(x; beta) =
//    x * sigmoid(beta*x); elu(x; beta) = x > 0 ? x : beta * (exp(x) - 1).

#ifndef TIR_COMPILER_REFERENCE_ELEMENTWISE_H_
#define TIR_COMPILER_REFERENCE_ELEMENTWISE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "llvm/ADT/StringRef.h"

namespace tir::reference {

enum class Pointwise {
  kAdd, kSub, kMul, kDiv, kMax, kMin, kMod, kRem, kPow, kAtan2, kAddSquare,
  kReluBwd, kSigmoidBwd, kTanhBwd, kGeluBwd, kGeluApproxTanhBwd, kSoftplusBwd, kSwishBwd, kEluBwd,
  kAnd, kOr,
  kAbs, kCeil, kFloor, kNeg, kSqrt, kRsqrt, kExp, kLog, kSin, kCos, kTan, kErf, kReciprocal,
  kRelu, kSigmoid, kTanh, kGelu, kGeluApproxTanh, kSoftplus, kSwish, kElu, kNot,
};

// The pointwise op of a tir op name ("tir.add"), if it is one.
std::optional<Pointwise> PointwiseOf(llvm::StringRef opName);
bool IsUnaryPointwise(Pointwise op);

double FloatBinary(Pointwise op, double a, double b, double beta);
double FloatUnary(Pointwise op, double x, double beta);
// `isUnsigned` selects unsigned division and comparison.
int64_t IntBinary(Pointwise op, int64_t a, int64_t b, bool isUnsigned);
int64_t IntUnary(Pointwise op, int64_t x);

}  // namespace tir::reference

#endif  // TIR_COMPILER_REFERENCE_ELEMENTWISE_H_
