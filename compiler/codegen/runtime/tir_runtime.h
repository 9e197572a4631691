// tir's kernel runtime: included by every generated kernel, compiled by NVRTC
// for a GPU or by the system C++ compiler for the host, in one of two forms.
//
// The same kernel source runs in three places:
//  - on a GPU (TIR_DEVICE): a block has blockDim.x threads;
//  - emulated on the host (TIR_EMULATE, tir_lanes.h): the GPU form, lane by
//    lane, with the block size of the launch, barriers, warp collectives,
//    cp.async groups and a shared-memory race check;
//  - the plain host form: a block is one thread (blockDim.x == 1), so every
//    strided loop over a block's work covers it all and block collectives
//    reduce nothing.
// TIR_LANES is 1 in the first two: kernels take their GPU paths under
// `#if TIR_LANES`. The tile library (tir_tiles.h) gives each GPU piece its
// device, emulated and plain-host implementation. Scalar semantics match compiler/reference/Elementwise.h:
// bf16/f16 compute in f32 and round (to nearest even) on every op; integers
// wrap; div/rem/mod by integer zero give 0; max/min propagate NaN.

#ifndef TIR_RUNTIME_H_
#define TIR_RUNTIME_H_

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define TIR_DEVICE 1
#define TIR_FN __device__ __forceinline__
#define TIR_FN_MEMBER __device__ __forceinline__
#define TIR_KERNEL extern "C" __global__
// The block size a kernel is compiled for (registers are allocated for it).
#define TIR_BOUNDS(threads) __launch_bounds__(threads)
// With a minimum of resident blocks (1 caps registers at entry, which
// setmaxnreg needs).
#define TIR_BOUNDS_MIN(threads, blocks) __launch_bounds__(threads, blocks)
// A kernel parameter in the constant bank that may be addressed (TMA reads
// its tensor maps there).
#define TIR_GRID_CONSTANT const __grid_constant__
#define TIR_SHARED __shared__
typedef long long tir_i64;
typedef unsigned long long tir_u64;
typedef unsigned int tir_u32;
typedef unsigned short tir_u16;
typedef unsigned char tir_u8;
typedef signed char tir_i8;
typedef short tir_i16;
typedef int tir_i32;
#define TIR_INF __int_as_float(0x7f800000)
#define TIR_NAN __int_as_float(0x7fc00000)
#define TIR_SYNC() __syncthreads()
#define TIR_EMULATE 0
#define TIR_LANES 1
#else
#include <cmath>
#include <cstdint>
#include <cstring>
#define TIR_DEVICE 0
#define TIR_FN static inline
#define TIR_FN_MEMBER inline
#define TIR_KERNEL extern "C"
#define TIR_BOUNDS(threads)
#define TIR_BOUNDS_MIN(threads, blocks)
#define TIR_GRID_CONSTANT const
#define TIR_SHARED static thread_local
typedef int64_t tir_i64;
typedef uint64_t tir_u64;
typedef uint32_t tir_u32;
typedef uint16_t tir_u16;
typedef uint8_t tir_u8;
typedef int8_t tir_i8;
typedef int16_t tir_i16;
typedef int32_t tir_i32;
#define TIR_INF INFINITY
#define TIR_NAN NAN
#ifndef TIR_EMULATE
#define TIR_EMULATE 0
#endif
struct tir_dim3 { unsigned x, y, z; };
// Set by the host launcher around each block.
static thread_local tir_dim3 blockIdx = {0, 0, 0};
static thread_local tir_dim3 blockDim = {1, 1, 1};
static thread_local tir_dim3 gridDim = {1, 1, 1};
#if TIR_EMULATE
#include "tir_lanes.h"
// Each emulated thread has its own index; barriers park it.
#define threadIdx (::tir_lanes::Current().tid)
#define TIR_SYNC() ::tir_lanes::Barrier()
#define TIR_LANES 1
#else
static thread_local tir_dim3 threadIdx = {0, 0, 0};
#define TIR_SYNC() ((void)0)
#define TIR_LANES 0
#endif
using std::sqrt; using std::exp; using std::log; using std::sin; using std::cos; using std::tan;
using std::erf; using std::tanh; using std::atan2; using std::pow; using std::floor; using std::ceil;
using std::fabs; using std::fmod; using std::log1p; using std::isnan; using std::isinf;
using std::rint; using std::frexp; using std::ldexp; using std::signbit;
#endif

// ---- notes in the PTX ------------------------------------------------------

// A comment in the kernel's PTX, "// tir: <text>", for tools that read it
// (ptxas ignores it): on a GPU only.
#if TIR_DEVICE
#define TIR_PTX_NOTE(text) asm volatile("// tir: " text)
#else
#define TIR_PTX_NOTE(text) ((void)0)
#endif

// ---- gather indices --------------------------------------------------------

// A gather's index, checked against the extent it picks along: an index
// outside [0, extent) stops the kernel before it reads outside the data
// (tir.gather's contract: never clamped, never wrapped). On a GPU `trap`
// ends the launch with an illegal-instruction error (PTX ISA, "Miscellaneous
// Instructions: trap"); the plain host form traps its process; the emulator
// reports INDEX_OUT_OF_RANGE for the thread.
TIR_FN tir_i64 tir_gather_index(tir_i64 index, tir_i64 extent) {
  if ((tir_u64)index >= (tir_u64)extent) {
#if TIR_DEVICE
    __trap();
#elif TIR_EMULATE
    ::tir_lanes::Fault("INDEX_OUT_OF_RANGE", "thread " + ::tir_lanes::Tid(::tir_lanes::Current()) +
                                                 " gathers at index " + std::to_string((long long)index) +
                                                 ", outside [0, " + std::to_string((long long)extent) + ")");
#else
    __builtin_trap();
#endif
  }
  return index;
}

// ---- storage types ---------------------------------------------------------

struct tir_bf16 { tir_u16 bits; };
struct tir_f16 { tir_u16 bits; };

TIR_FN tir_u32 tir_float_bits(float f) {
#if TIR_DEVICE
  return __float_as_uint(f);
#else
  tir_u32 u; std::memcpy(&u, &f, 4); return u;
#endif
}
TIR_FN float tir_bits_float(tir_u32 u) {
#if TIR_DEVICE
  return __uint_as_float(u);
#else
  float f; std::memcpy(&f, &u, 4); return f;
#endif
}

// bf16 and f16 conversions. From f32 they round to nearest even; NaN
// becomes the canonical NaN (0x7fff), as cvt.rn.bf16.f32 / cvt.rn.f16.f32 give
// it (PTX ISA, "Data Movement and Conversion Instructions: cvt"; CUDA's
// cuda_bf16.hpp / cuda_fp16.hpp host paths model the same bits). On sm_80
// and later a kernel converts with those instructions (TIR_SM80); the
// host and the lanes emulator compute the same bits in software, on the
// integer pattern (subnormals and overflow to infinity included), so every
// form of a kernel stores bit-identical results.
#if TIR_DEVICE && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define TIR_SM80 1
#else
#define TIR_SM80 0
#endif

TIR_FN float tir_from_bf16(tir_bf16 v) { return tir_bits_float(((tir_u32)v.bits) << 16); }
TIR_FN tir_bf16 tir_to_bf16(float f) {
  tir_bf16 r;
#if TIR_SM80
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r.bits) : "f"(f));
#else
  tir_u32 u = tir_float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) { r.bits = 0x7fffu; return r; }  // canonical NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  r.bits = (tir_u16)(u >> 16);
#endif
  return r;
}
// Two conversions in one: `lo` to the low half of the result, `hi` to the
// high half (cvt.rn.bf16x2.f32 d, a, b puts a in the high half, b in the low).
TIR_FN tir_u32 tir_to_bf16x2(float lo, float hi) {
#if TIR_SM80
  tir_u32 d;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
  return d;
#else
  return (tir_u32)tir_to_bf16(lo).bits | ((tir_u32)tir_to_bf16(hi).bits << 16);
#endif
}

TIR_FN float tir_from_f16(tir_f16 v) {
#if TIR_SM80
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.bits));
  return f;
#else
  const tir_u32 sign = ((tir_u32)v.bits & 0x8000u) << 16;
  const tir_u32 exp = (v.bits >> 10) & 0x1f, man = v.bits & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: man * 2^-24
    const float mag = (float)man * 5.9604644775390625e-8f;
    return sign ? -mag : mag;
  }
  if (exp == 31) return tir_bits_float(sign | 0x7f800000u | (man << 13));
  return tir_bits_float(sign | ((exp + 112) << 23) | (man << 13));
#endif
}
TIR_FN tir_f16 tir_to_f16(float f) {
  tir_f16 r;
#if TIR_SM80
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r.bits) : "f"(f));
  return r;
#else
  tir_u32 u = tir_float_bits(f);
  const tir_u32 sign = (u >> 16) & 0x8000u;
  u &= 0x7fffffffu;
  if (u > 0x7f800000u) { r.bits = 0x7fffu; return r; }                             // canonical NaN
  if (u >= 0x477ff000u) { r.bits = (tir_u16)(sign | 0x7c00u); return r; }          // overflow -> inf
  if (u < 0x38800000u) {                                                            // subnormal or zero
    const float mag = tir_bits_float(u);
    // Round mag / 2^-24 to nearest even integer.
    float q = mag * 16777216.0f;
    float fl = floor(q);
    float diff = q - fl;
    tir_u32 m = (tir_u32)fl;
    if (diff > 0.5f || (diff == 0.5f && (m & 1u))) ++m;
    r.bits = (tir_u16)(sign | m);
    return r;
  }
  tir_u32 man = u & 0x7fffffu, exp = (u >> 23) - 112;
  tir_u32 bits = (exp << 10) | (man >> 13);
  const tir_u32 rest = man & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (bits & 1u))) ++bits;
  r.bits = (tir_u16)(sign | bits);
  return r;
#endif
}

// On the GPU one cvt.rn.bf16x2.f32 with a zero low half: its 32 bits are
// the rounded value as an f32.
TIR_FN float tir_round_bf16(float f) {
#if TIR_SM80
  tir_u32 d;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(f), "f"(0.0f));
  return tir_bits_float(d);
#else
  return tir_from_bf16(tir_to_bf16(f));
#endif
}
TIR_FN float tir_round_f16(float f) { return tir_from_f16(tir_to_f16(f)); }

// The storage of `f`, a value a kernel already rounded to bf16 (every bf16
// value it computes is: ops round their results): its high half, no
// conversion (the compiler then stores the bits cvt.rn.bf16.f32 gave). The
// lanes emulator checks that the low half is zero, so a value that skipped
// its rounding is an error there, not a silent truncation.
TIR_FN tir_bf16 tir_bf16_of_rounded(float f) {
#if TIR_DEVICE
  tir_bf16 r;
  r.bits = (tir_u16)(tir_float_bits(f) >> 16);
  return r;
#else
#if TIR_EMULATE
  if ((tir_float_bits(f) & 0xffffu) != 0) {
    ::tir_lanes::Report("UNROUNDED_BF16_STORE", "a bf16 store of a value that was not rounded to bf16");
  }
#endif
  return tir_to_bf16(f);
#endif
}

// 8-bit floats (OCP FP8): f8E4M3FN (bias 7, no infinities, S.1111.111 is
// NaN, largest finite 448) and f8E5M2 (bias 15, IEEE-style infinities and
// NaNs, largest finite 57344). Conversions to them round to nearest even and
// saturate as PTX's cvt.rn.satfinite does: a magnitude past the largest
// finite value, infinity included, becomes the largest finite value of its
// sign; NaN stays NaN.
struct tir_f8e4m3 { tir_u8 bits; };
struct tir_f8e5m2 { tir_u8 bits; };

TIR_FN float tir_decode_f8(tir_u8 bits, int mbits, int bias, bool ieee_specials) {
  const int e = (bits & 0x7f) >> mbits, m = bits & ((1 << mbits) - 1);
  const int emax = (1 << (7 - mbits)) - 1;
  const bool negative = (bits & 0x80) != 0;
  float mag;
  if (ieee_specials && e == emax) {
    mag = m == 0 ? TIR_INF : TIR_NAN;
  } else if (!ieee_specials && e == emax && m == (1 << mbits) - 1) {
    mag = TIR_NAN;
  } else if (e == 0) {
    mag = ldexp((float)m, 1 - bias - mbits);
  } else {
    mag = ldexp((float)(m + (1 << mbits)), e - bias - mbits);
  }
  return negative ? -mag : mag;
}

template <typename T>
TIR_FN tir_u8 tir_encode_f8(T x, int mbits, int bias, tir_u8 max_finite, tir_u8 nan_bits) {
  if (isnan(x)) return nan_bits;
  const tir_u8 sign = signbit(x) ? 0x80 : 0;
  const T a = fabs(x);
  if (a == (T)0) return sign;
  if (isinf(a)) return (tir_u8)(sign | max_finite);
  int e2 = 0;
  (void)frexp(a, &e2);
  int exp = e2 - 1;  // a = 1.f * 2^exp
  const int emin = 1 - bias;
  // Scale so the kept bits are the integer part (exact: a power of two),
  // then round half to even.
  T q = rint(ldexp(a, mbits - (exp < emin ? emin : exp)));
  int code;
  if (exp < emin) {
    code = (int)q;  // subnormal; q == 2^mbits is the smallest normal
  } else {
    if (q >= (T)(2 << mbits)) {
      ++exp;
      q = q / (T)2;
    }
    // Past the format's exponent range the code exceeds max_finite below.
    code = ((exp + bias) << mbits) | ((int)q - (1 << mbits));
  }
  if (code > max_finite) code = max_finite;
  return (tir_u8)(sign | code);
}

TIR_FN float tir_from_f8e4m3(tir_f8e4m3 v) { return tir_decode_f8(v.bits, 3, 7, false); }
TIR_FN float tir_from_f8e5m2(tir_f8e5m2 v) { return tir_decode_f8(v.bits, 2, 15, true); }
template <typename T> TIR_FN tir_f8e4m3 tir_to_f8e4m3(T x) { tir_f8e4m3 r; r.bits = tir_encode_f8(x, 3, 7, 0x7e, 0x7f); return r; }
template <typename T> TIR_FN tir_f8e5m2 tir_to_f8e5m2(T x) { tir_f8e5m2 r; r.bits = tir_encode_f8(x, 2, 15, 0x7b, 0x7e); return r; }
template <typename T> TIR_FN float tir_round_f8e4m3(T x) { return tir_from_f8e4m3(tir_to_f8e4m3(x)); }
template <typename T> TIR_FN float tir_round_f8e5m2(T x) { return tir_from_f8e5m2(tir_to_f8e5m2(x)); }

// ---- reduce_ud bodies: arith ops on scalars (compiler/ir/ReduceBody.h) -----
// Integers are bit patterns of their width w, zero-extended in a tir_u64;
// each op reads them as signed or unsigned. Results MLIR leaves undefined
// are defined as in compiler/reference/ScalarArith.cpp: division or remainder
// by zero is 0, INT_MIN / -1 wraps, shifts by w or more give 0 (or the sign).

TIR_FN tir_u64 tir_bits(tir_u64 v, int w) { return w >= 64 ? v : (v & ((1ull << w) - 1)); }
TIR_FN tir_i64 tir_sbits(tir_u64 v, int w) {
  return w >= 64 ? (tir_i64)v : (tir_i64)(v << (64 - w)) >> (64 - w);
}
TIR_FN tir_u64 tir_arith_divsi(tir_u64 a, tir_u64 b, int w) {
  const tir_i64 x = tir_sbits(a, w), y = tir_sbits(b, w);
  if (y == 0) return 0;
  if (y == -1) return tir_bits(0ull - a, w);
  return tir_bits((tir_u64)(x / y), w);
}
TIR_FN tir_u64 tir_arith_divround(tir_u64 a, tir_u64 b, int w, bool ceil_) {
  const tir_i64 x = tir_sbits(a, w), y = tir_sbits(b, w);
  if (y == 0) return 0;
  if (y == -1) return tir_bits(0ull - a, w);
  const tir_i64 q = x / y, r = x % y;
  const bool negative = (r < 0) != (y < 0);
  if (ceil_) return tir_bits((tir_u64)(q + (r != 0 && !negative ? 1 : 0)), w);
  return tir_bits((tir_u64)(q - (r != 0 && negative ? 1 : 0)), w);
}
TIR_FN tir_u64 tir_arith_remsi(tir_u64 a, tir_u64 b, int w) {
  const tir_i64 x = tir_sbits(a, w), y = tir_sbits(b, w);
  if (y == 0 || y == -1) return 0;
  return tir_bits((tir_u64)(x % y), w);
}
TIR_FN tir_u64 tir_arith_divui(tir_u64 a, tir_u64 b) { return b == 0 ? 0 : a / b; }
TIR_FN tir_u64 tir_arith_ceildivui(tir_u64 a, tir_u64 b) { return b == 0 ? 0 : a / b + (a % b != 0); }
TIR_FN tir_u64 tir_arith_remui(tir_u64 a, tir_u64 b) { return b == 0 ? 0 : a % b; }
TIR_FN tir_u64 tir_arith_maxsi(tir_u64 a, tir_u64 b, int w) { return tir_sbits(a, w) > tir_sbits(b, w) ? a : b; }
TIR_FN tir_u64 tir_arith_minsi(tir_u64 a, tir_u64 b, int w) { return tir_sbits(a, w) < tir_sbits(b, w) ? a : b; }
TIR_FN tir_u64 tir_arith_shli(tir_u64 a, tir_u64 b, int w) { return b >= (tir_u64)w ? 0 : tir_bits(a << b, w); }
TIR_FN tir_u64 tir_arith_shrui(tir_u64 a, tir_u64 b, int w) { return b >= (tir_u64)w ? 0 : a >> b; }
TIR_FN tir_u64 tir_arith_shrsi(tir_u64 a, tir_u64 b, int w) {
  return tir_bits((tir_u64)(tir_sbits(a, w) >> (b >= (tir_u64)w ? w - 1 : (int)b)), w);
}
// `pred` is MLIR's arith::CmpFPredicate / CmpIPredicate value.
TIR_FN tir_u64 tir_arith_cmpf(double a, double b, int pred) {
  const bool u = isnan(a) || isnan(b);
  switch (pred) {
    case 0: return 0;
    case 1: return !u && a == b;
    case 2: return !u && a > b;
    case 3: return !u && a >= b;
    case 4: return !u && a < b;
    case 5: return !u && a <= b;
    case 6: return !u && a != b;
    case 7: return !u;
    case 8: return u || a == b;
    case 9: return u || a > b;
    case 10: return u || a >= b;
    case 11: return u || a < b;
    case 12: return u || a <= b;
    case 13: return u || a != b;
    case 14: return u;
    default: return 1;
  }
}
TIR_FN tir_u64 tir_arith_cmpi(tir_u64 a, tir_u64 b, int w, int pred) {
  const tir_i64 x = tir_sbits(a, w), y = tir_sbits(b, w);
  switch (pred) {
    case 0: return a == b;
    case 1: return a != b;
    case 2: return x < y;
    case 3: return x <= y;
    case 4: return x > y;
    case 5: return x >= y;
    case 6: return a < b;
    case 7: return a <= b;
    case 8: return a > b;
    default: return a >= b;
  }
}
// Float to integer: NaN is 0, truncate toward zero, saturate to the range.
TIR_FN tir_u64 tir_arith_fptoi(double v, int w, bool is_signed) {
  if (isnan(v)) return 0;
  const double t = v < 0 ? ceil(v) : floor(v);
  if (is_signed) {
    const double hi = ldexp(1.0, w - 1);
    if (t <= -hi) return tir_bits((tir_u64)(-1ll) << (w - 1), w);
    if (t >= hi) return tir_bits((1ull << (w - 1)) - 1, w);
    return tir_bits((tir_u64)(tir_i64)t, w);
  }
  if (t <= 0) return 0;
  if (t >= ldexp(1.0, w)) return tir_bits(~0ull, w);
  return (tir_u64)t;
}
template <typename T> TIR_FN T tir_arith_maxf(T a, T b) { return (isnan(a) || isnan(b)) ? (T)TIR_NAN : (a > b ? a : b); }
template <typename T> TIR_FN T tir_arith_minf(T a, T b) { return (isnan(a) || isnan(b)) ? (T)TIR_NAN : (a < b ? a : b); }

// ---- scalar math (see compiler/reference/Elementwise.h) --------------------

// mul_no_zeros: a zero (+0 or -0) counts as 1; NaN is not a zero.
template <typename T> TIR_FN T tir_nonzero_or_one(T x) { return x == (T)0 ? (T)1 : x; }
template <typename T> TIR_FN T tir_max(T a, T b) { return a > b ? a : b; }
template <typename T> TIR_FN T tir_min(T a, T b) { return a < b ? a : b; }
// NaN-propagating max and min of f32: NaN when either is NaN, -0 below +0
// (IEEE 754-2019 maximum / minimum). On sm_80 and later one max.NaN.f32 /
// min.NaN.f32 (PTX ISA, "Floating Point Instructions: max, min"; LLVM's
// NVPTX backend lowers llvm.maximum.f32, which orders -0 below +0, to it);
// elsewhere the same in software, with PTX's canonical NaN (0x7fffffff).
TIR_FN float tir_fmax(float a, float b) {
#if TIR_SM80
  float d;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
  return d;
#else
  if (isnan(a) || isnan(b)) return tir_bits_float(0x7fffffffu);
  if (a == b) return signbit(a) ? b : a;
  return a > b ? a : b;
#endif
}
TIR_FN float tir_fmin(float a, float b) {
#if TIR_SM80
  float d;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
  return d;
#else
  if (isnan(a) || isnan(b)) return tir_bits_float(0x7fffffffu);
  if (a == b) return signbit(a) ? a : b;
  return a < b ? a : b;
#endif
}
TIR_FN double tir_fmax(double a, double b) { return (isnan(a) || isnan(b)) ? (double)TIR_NAN : (a > b ? a : b); }
TIR_FN double tir_fmin(double a, double b) { return (isnan(a) || isnan(b)) ? (double)TIR_NAN : (a < b ? a : b); }
template <typename T> TIR_FN T tir_fmodf(T a, T b) { T r = fmod(a, b); if (r != 0 && ((r < 0) != (b < 0))) r += b; return r; }
template <typename T> TIR_FN T tir_sigmoid(T x) { return (T)1 / ((T)1 + exp(-x)); }
template <typename T> TIR_FN T tir_gelu(T x) { return x * (T)0.5 * ((T)1 + erf(x * (T)0.7071067811865476)); }
template <typename T> TIR_FN T tir_gelu_tanh(T x) {
  return (T)0.5 * x * ((T)1 + tanh((T)0.7978845608028654 * (x + (T)0.044715 * x * x * x)));
}
template <typename T> TIR_FN T tir_softplus(T x, T beta) { T bx = beta * x; return bx > (T)20 ? x : log1p(exp(bx)) / beta; }
template <typename T> TIR_FN T tir_swish(T x, T beta) { return x * tir_sigmoid(beta * x); }
template <typename T> TIR_FN T tir_elu(T x, T beta) { return x > 0 ? x : beta * (exp(x) - (T)1); }
template <typename T> TIR_FN T tir_relu_bwd(T x, T dy) { return x > 0 ? dy : (T)0; }
template <typename T> TIR_FN T tir_sigmoid_bwd(T x, T dy) { T s = tir_sigmoid(x); return dy * s * ((T)1 - s); }
template <typename T> TIR_FN T tir_tanh_bwd(T x, T dy) { T t = tanh(x); return dy * ((T)1 - t * t); }
template <typename T> TIR_FN T tir_gelu_bwd(T x, T dy) {
  return dy * ((T)0.5 * ((T)1 + erf(x * (T)0.7071067811865476)) + x * exp((T)-0.5 * x * x) * (T)0.3989422804014327);
}
template <typename T> TIR_FN T tir_gelu_tanh_bwd(T x, T dy) {
  T u = (T)0.7978845608028654 * (x + (T)0.044715 * x * x * x), t = tanh(u);
  T du = (T)0.7978845608028654 * ((T)1 + (T)3 * (T)0.044715 * x * x);
  return dy * ((T)0.5 * ((T)1 + t) + (T)0.5 * x * ((T)1 - t * t) * du);
}
template <typename T> TIR_FN T tir_softplus_bwd(T x, T dy, T beta) { return dy * tir_sigmoid(beta * x); }
template <typename T> TIR_FN T tir_swish_bwd(T x, T dy, T beta) {
  T s = tir_sigmoid(beta * x); return dy * (s + beta * x * s * ((T)1 - s));
}
template <typename T> TIR_FN T tir_elu_bwd(T x, T dy, T beta) { return x > 0 ? dy : dy * beta * exp(x); }

TIR_FN tir_i64 tir_idiv(tir_i64 a, tir_i64 b) { return b == 0 ? 0 : (b == -1 ? (tir_i64)(0 - (tir_u64)a) : a / b); }
TIR_FN tir_i64 tir_irem(tir_i64 a, tir_i64 b) { return (b == 0 || b == -1) ? 0 : a % b; }
TIR_FN tir_i64 tir_imod(tir_i64 a, tir_i64 b) {
  if (b == 0 || b == -1) return 0;
  tir_i64 r = a % b; if (r != 0 && ((r < 0) != (b < 0))) r += b; return r;
}
TIR_FN tir_u64 tir_udiv(tir_u64 a, tir_u64 b) { return b == 0 ? 0 : a / b; }
TIR_FN tir_u64 tir_urem(tir_u64 a, tir_u64 b) { return b == 0 ? 0 : a % b; }
TIR_FN tir_i64 tir_ipow(tir_i64 a, tir_i64 b) {
  if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);
  tir_u64 base = (tir_u64)a, r = 1, e = (tir_u64)b;
  while (e) { if (e & 1) r *= base; base *= base; e >>= 1; }
  return (tir_i64)r;
}

// ---- runs of consecutive elements --------------------------------------------

// One aligned access of Bytes bytes (a single wide load or store on a GPU).
template <int Bytes> struct tir_chunk;
template <> struct alignas(16) tir_chunk<16> { tir_u32 w[4]; };
template <> struct alignas(8) tir_chunk<8> { tir_u32 w[2]; };
template <> struct alignas(4) tir_chunk<4> { tir_u32 w[1]; };
template <> struct alignas(2) tir_chunk<2> { tir_u16 w[1]; };
template <> struct tir_chunk<1> { tir_u8 w[1]; };

TIR_FN void tir_copy_bytes(void *to, const void *from, int n) {
#if TIR_DEVICE
  memcpy(to, from, n);
#else
  std::memcpy(to, from, n);
#endif
}

// Reads N elements starting at p, `stride` apart: one wide access when they
// are contiguous and p is aligned to the run's size, else one by one.
template <int N, typename T>
TIR_FN void tir_load_run(const T *p, tir_i64 stride, T *out) {
  typedef tir_chunk<N * (int)sizeof(T)> C;
  if (stride == 1 && ((tir_u64)p) % sizeof(C) == 0) {
    const C c = *reinterpret_cast<const C *>(p);
    tir_copy_bytes(out, &c, sizeof(C));
    return;
  }
  for (int v = 0; v < N; ++v) out[v] = p[v * stride];
}

// The same when the graph's declarations prove unit stride and alignment
// (the launcher checks them): one wide access, no run-time test.
template <int N, typename T>
TIR_FN void tir_load_run_aligned(const T *p, T *out) {
  typedef tir_chunk<N * (int)sizeof(T)> C;
  const C c = *reinterpret_cast<const C *>(p);
  tir_copy_bytes(out, &c, sizeof(C));
}
template <int N, typename T>
TIR_FN void tir_store_run_aligned(T *p, const T *in) {
  typedef tir_chunk<N * (int)sizeof(T)> C;
  C c;
  tir_copy_bytes(&c, in, sizeof(C));
  *reinterpret_cast<C *>(p) = c;
}

// Writes N elements as tir_load_run reads them.
template <int N, typename T>
TIR_FN void tir_store_run(T *p, tir_i64 stride, const T *in) {
  typedef tir_chunk<N * (int)sizeof(T)> C;
  if (stride == 1 && ((tir_u64)p) % sizeof(C) == 0) {
    C c;
    tir_copy_bytes(&c, in, sizeof(C));
    *reinterpret_cast<C *>(p) = c;
    return;
  }
  for (int v = 0; v < N; ++v) p[v * stride] = in[v];
}

#include "tir_tiles.h"

#endif  // TIR_RUNTIME_H_
