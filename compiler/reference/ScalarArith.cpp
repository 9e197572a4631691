#include "compiler/reference/ScalarArith.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "compiler/conversion/DTypes.h"
#include "compiler/ir/ReduceBody.h"
#include "compiler/reference/Tensor.h"
#include "compiler/support/status.h"
#include "mlir/Dialect/Arith/IR/Arith.h"

namespace tir::reference {
namespace {

unsigned WidthOf(mlir::Type t) { return t.getIntOrFloatBitWidth(); }

uint64_t Mask(uint64_t v, unsigned w) { return w >= 64 ? v : v & ((uint64_t{1} << w) - 1); }

bool CmpF(mlir::arith::CmpFPredicate p, double a, double b) {
  using P = mlir::arith::CmpFPredicate;
  const bool unordered = std::isnan(a) || std::isnan(b);
  switch (p) {
    case P::AlwaysFalse: return false;
    case P::OEQ: return !unordered && a == b;
    case P::OGT: return !unordered && a > b;
    case P::OGE: return !unordered && a >= b;
    case P::OLT: return !unordered && a < b;
    case P::OLE: return !unordered && a <= b;
    case P::ONE: return !unordered && a != b;
    case P::ORD: return !unordered;
    case P::UEQ: return unordered || a == b;
    case P::UGT: return unordered || a > b;
    case P::UGE: return unordered || a >= b;
    case P::ULT: return unordered || a < b;
    case P::ULE: return unordered || a <= b;
    case P::UNE: return unordered || a != b;
    case P::UNO: return unordered;
    case P::AlwaysTrue: return true;
  }
  return false;
}

bool CmpI(mlir::arith::CmpIPredicate p, uint64_t a, uint64_t b, unsigned w) {
  using P = mlir::arith::CmpIPredicate;
  const int64_t sa = SignedValue(a, w), sb = SignedValue(b, w);
  switch (p) {
    case P::eq: return a == b;
    case P::ne: return a != b;
    case P::slt: return sa < sb;
    case P::sle: return sa <= sb;
    case P::sgt: return sa > sb;
    case P::sge: return sa >= sb;
    case P::ult: return a < b;
    case P::ule: return a <= b;
    case P::ugt: return a > b;
    case P::uge: return a >= b;
  }
  return false;
}

// Float to integer: NaN is 0, truncate toward zero, saturate to the range.
uint64_t FloatToInt(double v, unsigned w, bool isSigned) {
  if (std::isnan(v)) return 0;
  const double t = std::trunc(v);
  if (isSigned) {
    const double lo = -std::ldexp(1.0, w - 1), hi = std::ldexp(1.0, w - 1);
    if (t <= lo) return Mask(static_cast<uint64_t>(int64_t{-1} << (w - 1)), w);
    if (t >= hi) return Mask((uint64_t{1} << (w - 1)) - 1, w);
    return Mask(static_cast<uint64_t>(static_cast<int64_t>(t)), w);
  }
  if (t <= 0) return 0;
  if (t >= std::ldexp(1.0, w)) return Mask(~uint64_t{0}, w);
  return static_cast<uint64_t>(t);
}

}  // namespace

int64_t SignedValue(uint64_t bits, unsigned w) {
  if (w >= 64) return static_cast<int64_t>(bits);
  if (w == 0) return 0;
  const uint64_t m = Mask(bits, w);
  return (m >> (w - 1)) & 1 ? static_cast<int64_t>(m | ~((uint64_t{1} << w) - 1)) : static_cast<int64_t>(m);
}

ScalarValue IntScalar(int64_t v, unsigned width) {
  ScalarValue s;
  s.bits = Mask(static_cast<uint64_t>(v), width);
  return s;
}

double RoundToType(double v, mlir::Type t) {
  std::optional<DType> d = ToDType(t);
  return d ? RoundToFloat(v, *d) : v;
}

absl::StatusOr<ScalarValue> EvalBodyOp(mlir::Operation &op, llvm::ArrayRef<ScalarValue> in) {
  std::optional<BodyOp> kind = classifyBodyOp(op);
  if (!kind) {
    return MakeError(absl::StatusCode::kUnimplemented, "UNSUPPORTED_OP",
                     absl::StrCat(op.getName().getStringRef().str(), " is not supported in a reduce_ud body"));
  }
  mlir::Type rt = op.getResult(0).getType();
  ScalarValue out;
  auto f = [&](double v) {
    out.f = RoundToType(v, rt);
    return out;
  };
  auto i = [&](uint64_t v) {
    out.bits = Mask(v, WidthOf(rt));
    return out;
  };
  // Operand width for integer ops (the result's for most; the source's for
  // casts and comparisons).
  const unsigned w = op.getNumOperands() > 0 && op.getOperand(0).getType().isIntOrIndex()
                         ? WidthOf(op.getOperand(0).getType())
                         : 64;
  auto s = [&](int k) { return SignedValue(in[k].bits, w); };
  auto u = [&](int k) { return in[k].bits; };
  const int64_t smin = w >= 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (w - 1));
  switch (*kind) {
    case BodyOp::kConstant: {
      mlir::Attribute a = llvm::cast<mlir::arith::ConstantOp>(op).getValue();
      if (auto fa = a.dyn_cast<mlir::FloatAttr>()) return f(fa.getValueAsDouble());
      return i(a.cast<mlir::IntegerAttr>().getValue().getZExtValue());
    }
    case BodyOp::kAddF: return f(in[0].f + in[1].f);
    case BodyOp::kSubF: return f(in[0].f - in[1].f);
    case BodyOp::kMulF: return f(in[0].f * in[1].f);
    case BodyOp::kDivF: return f(in[0].f / in[1].f);
    case BodyOp::kRemF: return f(std::fmod(in[0].f, in[1].f));
    case BodyOp::kNegF: return f(-in[0].f);
    case BodyOp::kMaxF:
      return f(std::isnan(in[0].f) || std::isnan(in[1].f) ? NAN : in[0].f > in[1].f ? in[0].f : in[1].f);
    case BodyOp::kMinF:
      return f(std::isnan(in[0].f) || std::isnan(in[1].f) ? NAN : in[0].f < in[1].f ? in[0].f : in[1].f);
    case BodyOp::kCmpF:
      return i(CmpF(llvm::cast<mlir::arith::CmpFOp>(op).getPredicate(), in[0].f, in[1].f));
    case BodyOp::kExtF: case BodyOp::kTruncF: return f(in[0].f);
    case BodyOp::kAddI: return i(u(0) + u(1));
    case BodyOp::kSubI: return i(u(0) - u(1));
    case BodyOp::kMulI: return i(u(0) * u(1));
    case BodyOp::kDivSI:
      if (s(1) == 0) return i(0);
      if (s(1) == -1) return i(uint64_t{0} - u(0));  // INT_MIN / -1 wraps
      return i(static_cast<uint64_t>(s(0) / s(1)));
    case BodyOp::kDivUI: return i(u(1) == 0 ? 0 : u(0) / u(1));
    case BodyOp::kCeilDivSI: case BodyOp::kFloorDivSI: {
      if (s(1) == 0) return i(0);
      if (s(1) == -1) return i(uint64_t{0} - u(0));
      const int64_t q = s(0) / s(1), r = s(0) % s(1);
      const bool inexact = r != 0, negative = (r < 0) != (s(1) < 0);
      if (*kind == BodyOp::kCeilDivSI) return i(static_cast<uint64_t>(q + (inexact && !negative ? 1 : 0)));
      return i(static_cast<uint64_t>(q - (inexact && negative ? 1 : 0)));
    }
    case BodyOp::kCeilDivUI: return i(u(1) == 0 ? 0 : u(0) / u(1) + (u(0) % u(1) != 0));
    case BodyOp::kRemSI:
      if (s(1) == 0 || (s(1) == -1 && s(0) == smin)) return i(0);
      return i(static_cast<uint64_t>(s(0) % s(1)));
    case BodyOp::kRemUI: return i(u(1) == 0 ? 0 : u(0) % u(1));
    case BodyOp::kMaxSI: return i(s(0) > s(1) ? u(0) : u(1));
    case BodyOp::kMaxUI: return i(u(0) > u(1) ? u(0) : u(1));
    case BodyOp::kMinSI: return i(s(0) < s(1) ? u(0) : u(1));
    case BodyOp::kMinUI: return i(u(0) < u(1) ? u(0) : u(1));
    case BodyOp::kAndI: return i(u(0) & u(1));
    case BodyOp::kOrI: return i(u(0) | u(1));
    case BodyOp::kXOrI: return i(u(0) ^ u(1));
    case BodyOp::kShLI: return i(u(1) >= w ? 0 : u(0) << u(1));
    case BodyOp::kShRUI: return i(u(1) >= w ? 0 : u(0) >> u(1));
    case BodyOp::kShRSI: return i(static_cast<uint64_t>(s(0) >> (u(1) >= w ? w - 1 : u(1))));
    case BodyOp::kCmpI: return i(CmpI(llvm::cast<mlir::arith::CmpIOp>(op).getPredicate(), u(0), u(1), w));
    case BodyOp::kExtSI: return i(static_cast<uint64_t>(s(0)));
    case BodyOp::kExtUI: case BodyOp::kTruncI: return i(u(0));
    case BodyOp::kSIToFP: return f(static_cast<double>(s(0)));
    case BodyOp::kUIToFP: return f(static_cast<double>(u(0)));
    case BodyOp::kFPToSI: return i(FloatToInt(in[0].f, WidthOf(rt), true));
    case BodyOp::kFPToUI: return i(FloatToInt(in[0].f, WidthOf(rt), false));
    case BodyOp::kSelect: return (in[0].bits & 1) ? in[1] : in[2];
  }
  return out;
}

}  // namespace tir::reference
