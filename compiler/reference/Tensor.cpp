#include "compiler/reference/Tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "absl/strings/str_join.h"
#include "llvm/ADT/APFloat.h"

namespace tir::reference {
namespace {

const llvm::fltSemantics *Semantics(DType d) {
  switch (d) {
    case tir::v1::DTYPE_F16: return &llvm::APFloat::IEEEhalf();
    case tir::v1::DTYPE_BF16: return &llvm::APFloat::BFloat();
    case tir::v1::DTYPE_F8E4M3FN: return &llvm::APFloat::Float8E4M3FN();
    case tir::v1::DTYPE_F8E5M2: return &llvm::APFloat::Float8E5M2();
    default: return nullptr;
  }
}

uint64_t LoadBits(const uint8_t *p, int bytes) {
  uint64_t v = 0;
  std::memcpy(&v, p, bytes);  // little-endian host
  return v;
}

void StoreBits(uint8_t *p, uint64_t v, int bytes) { std::memcpy(p, &v, bytes); }

// Calls fn(linear row-major index, buffer element offset) for every element.
template <typename Fn>
void ForEachStrided(const std::vector<int64_t> &shape, const std::vector<int64_t> &strides, Fn fn) {
  const int64_t rank = shape.size();
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (n == 0) return;
  std::vector<int64_t> idx(rank, 0);
  int64_t offset = 0;
  for (int64_t k = 0; k < n; ++k) {
    fn(k, offset);
    for (int64_t d = rank - 1; d >= 0; --d) {
      ++idx[d];
      offset += strides[d];
      if (idx[d] < shape[d]) break;
      offset -= strides[d] * shape[d];
      idx[d] = 0;
    }
  }
}

}  // namespace

bool IsFloat(DType d) {
  return d == tir::v1::DTYPE_F16 || d == tir::v1::DTYPE_BF16 || d == tir::v1::DTYPE_F32 ||
         d == tir::v1::DTYPE_F64 || d == tir::v1::DTYPE_F8E4M3FN || d == tir::v1::DTYPE_F8E5M2;
}
bool IsUnsigned(DType d) {
  return d == tir::v1::DTYPE_UI8 || d == tir::v1::DTYPE_UI16 || d == tir::v1::DTYPE_UI32 ||
         d == tir::v1::DTYPE_UI64;
}
bool IsInteger(DType d) {
  return IsUnsigned(d) || d == tir::v1::DTYPE_SI8 || d == tir::v1::DTYPE_SI16 ||
         d == tir::v1::DTYPE_SI32 || d == tir::v1::DTYPE_SI64 || d == tir::v1::DTYPE_INDEX;
}
int BitWidth(DType d) {
  switch (d) {
    case tir::v1::DTYPE_I1: return 1;
    case tir::v1::DTYPE_SI8: case tir::v1::DTYPE_UI8: case tir::v1::DTYPE_F8E4M3FN:
    case tir::v1::DTYPE_F8E5M2: return 8;
    case tir::v1::DTYPE_SI16: case tir::v1::DTYPE_UI16: case tir::v1::DTYPE_F16:
    case tir::v1::DTYPE_BF16: return 16;
    case tir::v1::DTYPE_SI32: case tir::v1::DTYPE_UI32: case tir::v1::DTYPE_F32: return 32;
    default: return 64;
  }
}
int StorageBytes(DType d) { return d == tir::v1::DTYPE_I1 ? 1 : BitWidth(d) / 8; }

double RoundToFloat(double v, DType d) {
  if (d == tir::v1::DTYPE_F64) return v;
  if (d == tir::v1::DTYPE_F32) return static_cast<double>(static_cast<float>(v));
  const llvm::fltSemantics *sem = Semantics(d);
  if (sem == nullptr) return v;
  llvm::APFloat x(v);
  bool lost = false;
  x.convert(*sem, llvm::APFloat::rmNearestTiesToEven, &lost);
  if (d == tir::v1::DTYPE_F8E4M3FN || d == tir::v1::DTYPE_F8E5M2) {
    // 8-bit floats saturate, as PTX's cvt.rn.satfinite does: past the largest
    // finite value (infinity included) is the largest finite value; NaN stays.
    if (std::isnan(v)) return std::numeric_limits<double>::quiet_NaN();
    if (x.isInfinity() || x.isNaN()) {
      return std::copysign(d == tir::v1::DTYPE_F8E4M3FN ? 448.0 : 57344.0, v);
    }
  }
  x.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven, &lost);
  return x.convertToDouble();
}

int64_t WrapToInteger(int64_t v, DType d) {
  const int bits = BitWidth(d);
  if (bits >= 64) return v;
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  uint64_t u = static_cast<uint64_t>(v) & mask;
  if (!IsUnsigned(d) && (u >> (bits - 1)) & 1) u |= ~mask;  // sign-extend
  return static_cast<int64_t>(u);
}

Tensor Tensor::Zeros(DType dtype, std::vector<int64_t> shape) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  const int64_t n = t.NumElements();
  if (t.UsesInts()) t.i.assign(n, 0); else t.f.assign(n, 0.0);
  return t;
}

Tensor Tensor::Scalar(DType dtype, double value) {
  Tensor t = Zeros(dtype, {});
  t.scalar = true;
  t.SetF(0, value);
  return t;
}

Tensor Tensor::ScalarInt(DType dtype, int64_t value) {
  Tensor t = Zeros(dtype, {});
  t.scalar = true;
  t.SetI(0, value);
  return t;
}

int64_t Tensor::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t Tensor::GetI(int64_t k) const {
  if (UsesInts()) return i[k];
  const double v = f[k];
  return std::isnan(v) ? 0 : static_cast<int64_t>(v);
}

double Tensor::AsDouble(int64_t k) const {
  return IsUnsigned(dtype) ? static_cast<double>(static_cast<uint64_t>(i[k]))
                           : static_cast<double>(i[k]);
}

void Tensor::SetF(int64_t k, double v) {
  if (UsesInts()) {
    // Float -> integer: NaN is 0, truncate toward zero, saturate.
    if (std::isnan(v)) { i[k] = 0; return; }
    const int bits = BitWidth(dtype);
    if (IsUnsigned(dtype)) {
      const double hi = bits >= 64 ? 18446744073709549568.0 : std::ldexp(1.0, bits) - 1;
      const double c = std::min(std::max(std::trunc(v), 0.0), hi);
      i[k] = WrapToInteger(static_cast<int64_t>(static_cast<uint64_t>(c)), dtype);
    } else {
      const double lim = std::ldexp(1.0, bits - 1);
      const double c = std::min(std::max(std::trunc(v), -lim), lim - (bits >= 64 ? 1024 : 1));
      i[k] = WrapToInteger(static_cast<int64_t>(c), dtype);
    }
    return;
  }
  // To i1: non-zero is true, and so is NaN (it is not zero).
  if (dtype == tir::v1::DTYPE_I1) { f[k] = v != 0 ? 1.0 : 0.0; return; }
  f[k] = RoundToFloat(v, dtype);
}

void Tensor::SetI(int64_t k, int64_t v) {
  if (UsesInts()) { i[k] = WrapToInteger(v, dtype); return; }
  SetF(k, static_cast<double>(v));
}

std::string Tensor::ShapeString() const { return "[" + absl::StrJoin(shape, ", ") + "]"; }

Tensor FromBuffer(DType dtype, const std::vector<int64_t> &shape,
                  const std::vector<int64_t> &strides, const void *data) {
  Tensor t = Tensor::Zeros(dtype, shape);
  const std::vector<int64_t> s = strides.empty() ? RowMajorStrides(shape) : strides;
  const int bytes = StorageBytes(dtype);
  const uint8_t *base = static_cast<const uint8_t *>(data);
  const llvm::fltSemantics *sem = Semantics(dtype);
  ForEachStrided(shape, s, [&](int64_t k, int64_t off) {
    const uint64_t bits = LoadBits(base + off * bytes, bytes);
    if (t.UsesInts()) {
      t.i[k] = WrapToInteger(static_cast<int64_t>(bits), dtype);
    } else if (dtype == tir::v1::DTYPE_F32) {
      float x;
      std::memcpy(&x, &bits, 4);
      t.f[k] = x;
    } else if (dtype == tir::v1::DTYPE_F64) {
      double x;
      std::memcpy(&x, &bits, 8);
      t.f[k] = x;
    } else if (dtype == tir::v1::DTYPE_I1) {
      t.f[k] = bits != 0 ? 1.0 : 0.0;
    } else {
      llvm::APFloat x(*sem, llvm::APInt(BitWidth(dtype), bits));
      bool lost = false;
      x.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven, &lost);
      t.f[k] = x.convertToDouble();
    }
  });
  return t;
}

void ToBuffer(const Tensor &t, const std::vector<int64_t> &strides, void *data) {
  const std::vector<int64_t> s = strides.empty() ? RowMajorStrides(t.shape) : strides;
  const int bytes = StorageBytes(t.dtype);
  uint8_t *base = static_cast<uint8_t *>(data);
  const llvm::fltSemantics *sem = Semantics(t.dtype);
  ForEachStrided(t.shape, s, [&](int64_t k, int64_t off) {
    uint64_t bits = 0;
    if (t.UsesInts()) {
      bits = static_cast<uint64_t>(t.i[k]);
    } else if (t.dtype == tir::v1::DTYPE_F32) {
      float x = static_cast<float>(t.f[k]);
      std::memcpy(&bits, &x, 4);
    } else if (t.dtype == tir::v1::DTYPE_F64) {
      std::memcpy(&bits, &t.f[k], 8);
    } else if (t.dtype == tir::v1::DTYPE_I1) {
      bits = t.f[k] != 0 ? 1 : 0;
    } else {
      llvm::APFloat x(t.f[k]);
      bool lost = false;
      x.convert(*sem, llvm::APFloat::rmNearestTiesToEven, &lost);
      bits = x.bitcastToAPInt().getZExtValue();
    }
    StoreBits(base + off * bytes, bits, bytes);
  });
}

Tensor ThroughLayout(const Tensor &t, const std::vector<int64_t> &strides) {
  std::vector<uint8_t> buffer(std::max<int64_t>(1, BufferBytes(t.dtype, t.shape, strides)), 0);
  ToBuffer(t, strides, buffer.data());
  Tensor out = FromBuffer(t.dtype, t.shape, strides, buffer.data());
  out.scalar = t.scalar;
  return out;
}

Tensor AsStored(const Tensor &t, const std::vector<int64_t> &strides) {
  if (strides.size() != t.shape.size() || std::none_of(strides.begin(), strides.end(), [](int64_t s) { return s == 0; })) {
    return t;
  }
  Tensor out = t;
  const std::vector<int64_t> dense = RowMajorStrides(t.shape);
  const int64_t n = t.NumElements();
  for (int64_t k = 0; k < n; ++k) {
    // k's index with every stride-0 dimension set to 0.
    int64_t rem = k, src = 0;
    for (size_t d = 0; d < t.shape.size(); ++d) {
      const int64_t i = dense[d] ? rem / dense[d] : 0;
      rem -= i * dense[d];
      if (strides[d] != 0) src += i * dense[d];
    }
    if (out.UsesInts()) out.SetI(k, t.GetI(src)); else out.SetF(k, t.GetF(src));
  }
  return out;
}

int64_t BufferBytes(DType dtype, const std::vector<int64_t> &shape,
                    const std::vector<int64_t> &strides) {
  const std::vector<int64_t> s = strides.empty() ? RowMajorStrides(shape) : strides;
  int64_t last = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return 0;
    last += (shape[d] - 1) * s[d];
  }
  return (last + 1) * StorageBytes(dtype);
}

Tensor RandomTensor(DType dtype, const std::vector<int64_t> &shape, uint64_t seed) {
  Tensor t = Tensor::Zeros(dtype, shape);
  std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ull + 1);
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  const int64_t n = t.NumElements();
  for (int64_t k = 0; k < n; ++k) {
    if (t.UsesInts()) {
      const int64_t lo = IsUnsigned(dtype) ? 0 : -8;
      t.SetI(k, lo + static_cast<int64_t>(rng() % 17));
    } else if (dtype == tir::v1::DTYPE_I1) {
      t.f[k] = static_cast<double>(rng() & 1);
    } else {
      double v = uni(rng);
      if (v == 0.0) v = 0.5;
      t.SetF(k, v);
    }
  }
  return t;
}

static double RelativeL2BoundOfDType(DType dtype);

double RelativeL2Bound(DType dtype, int64_t reduction_length, bool tf32_operands) {
  if (tf32_operands && dtype != tir::v1::DTYPE_F64 && RelativeL2Bound(dtype, reduction_length) > 0) {
    return std::max(RelativeL2Bound(dtype, reduction_length), 4 * std::ldexp(1.0, -11));
  }
  const double n = std::sqrt(static_cast<double>(std::max<int64_t>(1, reduction_length)));
  switch (dtype) {
    case tir::v1::DTYPE_F64: return std::max(1e-12, 4 * std::ldexp(1.0, -53) * n);
    case tir::v1::DTYPE_F32: return std::max(1e-5, 4 * std::ldexp(1.0, -24) * n);
    default: break;
  }
  return std::max(RelativeL2BoundOfDType(dtype), dtype == tir::v1::DTYPE_F16 || dtype == tir::v1::DTYPE_BF16 ||
                                                         dtype == tir::v1::DTYPE_F8E4M3FN || dtype == tir::v1::DTYPE_F8E5M2
                                                     ? 4 * std::ldexp(1.0, -24) * n
                                                     : 0.0);
}

static double RelativeL2BoundOfDType(DType dtype) {
  switch (dtype) {
    case tir::v1::DTYPE_F64: return 1e-12;
    case tir::v1::DTYPE_F32: return 1e-5;
    case tir::v1::DTYPE_F16:
    case tir::v1::DTYPE_BF16: return 1e-2;
    case tir::v1::DTYPE_F8E4M3FN:
    case tir::v1::DTYPE_F8E5M2: return 1e-1;
    default: return 0;
  }
}

double RelativeL2Error(const Tensor &got, const Tensor &want) {
  if (got.shape != want.shape) return std::numeric_limits<double>::infinity();
  double num = 0, den = 0;
  const int64_t n = want.NumElements();
  for (int64_t k = 0; k < n; ++k) {
    const double g = got.GetF(k), w = want.GetF(k);
    if (std::isnan(w) && std::isnan(g)) continue;
    if (std::isnan(g) || std::isnan(w)) return std::numeric_limits<double>::infinity();
    if (std::isinf(w) || std::isinf(g)) {
      if (g != w) return std::numeric_limits<double>::infinity();
      continue;
    }
    num += (g - w) * (g - w);
    den += w * w;
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
}

OutputCheck CheckOutput(const Tensor &got, const Tensor &want, const Tensor &rounding, int64_t reduction_length,
                        bool tf32_operands) {
  OutputCheck c;
  c.error = RelativeL2Error(got, want);
  c.bound = RelativeL2Bound(want.dtype, reduction_length, tf32_operands);
  if (rounding.dtype == tir::v1::DTYPE_UNSPECIFIED || rounding.f.size() != want.f.size() || !IsFloat(want.dtype)) {
    return c;
  }
  double scale = 0, norm = 0;
  for (size_t k = 0; k < rounding.f.size(); ++k) {
    if (std::isfinite(rounding.f[k])) scale += rounding.f[k] * rounding.f[k];
    if (std::isfinite(want.f[k])) norm += want.f[k] * want.f[k];
  }
  // On the scale RelativeL2Error divides by.
  const double conditioned =
      RelativeL2BoundOfDType(want.dtype) + kRoundingConfidence * std::sqrt(scale) / std::max(std::sqrt(norm), 1e-30);
  c.bound = std::max(c.bound, conditioned);
  return c;
}

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * shape[d + 1];
  return s;
}

}  // namespace tir::reference
