#include "compiler/reference/Elementwise.h"

#include <cmath>

#include "llvm/ADT/StringSwitch.h"

namespace tir::reference {
namespace {

constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kGeluCoeff = 0.044715;

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double NormalCdf(double x) { return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))); }
double NormalPdf(double x) { return std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI); }

double Softplus(double x, double beta) {
  const double bx = beta * x;
  return bx > 20.0 ? x : std::log1p(std::exp(bx)) / beta;
}

double FloorMod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

}  // namespace

std::optional<Pointwise> PointwiseOf(llvm::StringRef name) {
  if (!name.consume_front("tir.")) return std::nullopt;
  auto r = llvm::StringSwitch<std::optional<Pointwise>>(name)
               .Case("add", Pointwise::kAdd).Case("sub", Pointwise::kSub)
               .Case("mul", Pointwise::kMul).Case("div", Pointwise::kDiv)
               .Case("max", Pointwise::kMax).Case("min", Pointwise::kMin)
               .Case("mod", Pointwise::kMod).Case("rem", Pointwise::kRem)
               .Case("pow", Pointwise::kPow).Case("atan2", Pointwise::kAtan2)
               .Case("add_square", Pointwise::kAddSquare)
               .Case("relu_bwd", Pointwise::kReluBwd).Case("sigmoid_bwd", Pointwise::kSigmoidBwd)
               .Case("tanh_bwd", Pointwise::kTanhBwd).Case("gelu_bwd", Pointwise::kGeluBwd)
               .Case("gelu_approx_tanh_bwd", Pointwise::kGeluApproxTanhBwd)
               .Case("softplus_bwd", Pointwise::kSoftplusBwd).Case("swish_bwd", Pointwise::kSwishBwd)
               .Case("elu_bwd", Pointwise::kEluBwd).Case("and", Pointwise::kAnd)
               .Case("or", Pointwise::kOr).Case("abs", Pointwise::kAbs)
               .Case("ceil", Pointwise::kCeil).Case("floor", Pointwise::kFloor)
               .Case("neg", Pointwise::kNeg).Case("sqrt", Pointwise::kSqrt)
               .Case("rsqrt", Pointwise::kRsqrt).Case("exp", Pointwise::kExp)
               .Case("log", Pointwise::kLog).Case("sin", Pointwise::kSin)
               .Case("cos", Pointwise::kCos).Case("tan", Pointwise::kTan)
               .Case("erf", Pointwise::kErf).Case("reciprocal", Pointwise::kReciprocal)
               .Case("relu_fwd", Pointwise::kRelu).Case("sigmoid_fwd", Pointwise::kSigmoid)
               .Case("tanh_fwd", Pointwise::kTanh).Case("gelu_fwd", Pointwise::kGelu)
               .Case("gelu_approx_tanh_fwd", Pointwise::kGeluApproxTanh)
               .Case("softplus_fwd", Pointwise::kSoftplus).Case("swish_fwd", Pointwise::kSwish)
               .Case("elu_fwd", Pointwise::kElu).Case("not", Pointwise::kNot)
               .Default(std::nullopt);
  return r;
}

bool IsUnaryPointwise(Pointwise op) { return op >= Pointwise::kAbs; }

double FloatBinary(Pointwise op, double a, double b, double beta) {
  switch (op) {
    case Pointwise::kAdd: return a + b;
    case Pointwise::kSub: return a - b;
    case Pointwise::kMul: return a * b;
    case Pointwise::kDiv: return a / b;
    case Pointwise::kMax: return (std::isnan(a) || std::isnan(b)) ? NAN : std::max(a, b);
    case Pointwise::kMin: return (std::isnan(a) || std::isnan(b)) ? NAN : std::min(a, b);
    case Pointwise::kMod: return FloorMod(a, b);
    case Pointwise::kRem: return std::fmod(a, b);
    case Pointwise::kPow: return std::pow(a, b);
    case Pointwise::kAtan2: return std::atan2(a, b);
    case Pointwise::kAddSquare: return a + b * b;
    case Pointwise::kReluBwd: return a > 0 ? b : 0.0;
    case Pointwise::kSigmoidBwd: { const double s = Sigmoid(a); return b * s * (1 - s); }
    case Pointwise::kTanhBwd: { const double t = std::tanh(a); return b * (1 - t * t); }
    case Pointwise::kGeluBwd: return b * (NormalCdf(a) + a * NormalPdf(a));
    case Pointwise::kGeluApproxTanhBwd: {
      const double u = kSqrt2OverPi * (a + kGeluCoeff * a * a * a);
      const double t = std::tanh(u);
      const double du = kSqrt2OverPi * (1 + 3 * kGeluCoeff * a * a);
      return b * (0.5 * (1 + t) + 0.5 * a * (1 - t * t) * du);
    }
    case Pointwise::kSoftplusBwd: return b * Sigmoid(beta * a);
    case Pointwise::kSwishBwd: { const double s = Sigmoid(beta * a); return b * (s + beta * a * s * (1 - s)); }
    case Pointwise::kEluBwd: return a > 0 ? b : b * beta * std::exp(a);
    case Pointwise::kAnd: return (a != 0 && b != 0) ? 1 : 0;
    case Pointwise::kOr: return (a != 0 || b != 0) ? 1 : 0;
    default: return NAN;
  }
}

double FloatUnary(Pointwise op, double x, double beta) {
  switch (op) {
    case Pointwise::kAbs: return std::fabs(x);
    case Pointwise::kCeil: return std::ceil(x);
    case Pointwise::kFloor: return std::floor(x);
    case Pointwise::kNeg: return -x;
    case Pointwise::kSqrt: return std::sqrt(x);
    case Pointwise::kRsqrt: return 1.0 / std::sqrt(x);
    case Pointwise::kExp: return std::exp(x);
    case Pointwise::kLog: return std::log(x);
    case Pointwise::kSin: return std::sin(x);
    case Pointwise::kCos: return std::cos(x);
    case Pointwise::kTan: return std::tan(x);
    case Pointwise::kErf: return std::erf(x);
    case Pointwise::kReciprocal: return 1.0 / x;
    case Pointwise::kRelu: return x > 0 ? x : 0.0;
    case Pointwise::kSigmoid: return Sigmoid(x);
    case Pointwise::kTanh: return std::tanh(x);
    case Pointwise::kGelu: return x * NormalCdf(x);
    case Pointwise::kGeluApproxTanh:
      return 0.5 * x * (1 + std::tanh(kSqrt2OverPi * (x + kGeluCoeff * x * x * x)));
    case Pointwise::kSoftplus: return Softplus(x, beta);
    case Pointwise::kSwish: return x * Sigmoid(beta * x);
    case Pointwise::kElu: return x > 0 ? x : beta * (std::exp(x) - 1);
    case Pointwise::kNot: return x != 0 ? 0.0 : 1.0;
    default: return NAN;
  }
}

int64_t IntBinary(Pointwise op, int64_t a, int64_t b, bool isUnsigned) {
  const uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (op) {
    case Pointwise::kAdd: return static_cast<int64_t>(ua + ub);
    case Pointwise::kSub: return static_cast<int64_t>(ua - ub);
    case Pointwise::kMul: return static_cast<int64_t>(ua * ub);
    case Pointwise::kAddSquare: return static_cast<int64_t>(ua + ub * ub);
    case Pointwise::kMax: return isUnsigned ? static_cast<int64_t>(std::max(ua, ub)) : std::max(a, b);
    case Pointwise::kMin: return isUnsigned ? static_cast<int64_t>(std::min(ua, ub)) : std::min(a, b);
    case Pointwise::kDiv:
      if (b == 0) return 0;
      if (isUnsigned) return static_cast<int64_t>(ua / ub);
      if (a == INT64_MIN && b == -1) return a;
      return a / b;
    case Pointwise::kRem:
      if (b == 0) return 0;
      if (isUnsigned) return static_cast<int64_t>(ua % ub);
      if (b == -1) return 0;
      return a % b;
    case Pointwise::kMod: {
      if (b == 0) return 0;
      if (isUnsigned) return static_cast<int64_t>(ua % ub);
      if (b == -1) return 0;
      int64_t r = a % b;
      if (r != 0 && ((r < 0) != (b < 0))) r += b;
      return r;
    }
    case Pointwise::kPow: {
      if (!isUnsigned && b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);
      uint64_t base = ua, result = 1, e = ub;
      while (e) {
        if (e & 1) result *= base;
        base *= base;
        e >>= 1;
      }
      return static_cast<int64_t>(result);
    }
    case Pointwise::kAnd: return (a != 0 && b != 0) ? 1 : 0;
    case Pointwise::kOr: return (a != 0 || b != 0) ? 1 : 0;
    default: return 0;
  }
}

int64_t IntUnary(Pointwise op, int64_t x) {
  switch (op) {
    case Pointwise::kAbs: return x < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(x)) : x;
    case Pointwise::kNot: return x != 0 ? 0 : 1;
    default: return 0;
  }
}

}  // namespace tir::reference
