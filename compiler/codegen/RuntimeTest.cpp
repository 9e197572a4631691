// Properties of the tile library's host implementation that the generated
// kernels rely on.

#include <cmath>
#include <limits>
#include <set>

#include "compiler/codegen/runtime/tir_runtime.h"
#include "compiler/reference/ScalarArith.h"
#include "compiler/reference/Tensor.h"
#include "gtest/gtest.h"

namespace {

// For a tile of C 16-bit columns: every (row, column) has its own offset
// inside its row, 16-byte chunks stay whole and aligned, and the eight rows
// an ldmatrix reads at one logical chunk fall in eight distinct 16-byte bank
// groups of a 128-byte line.
template <int C> void CheckSwizzle() {
  constexpr int rows = 64;
  std::set<int> seen;
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < C; ++c) {
      const int off = tir_swz<C>(r, c);
      EXPECT_GE(off, r * C) << "C=" << C << " r=" << r << " c=" << c;
      EXPECT_LT(off, (r + 1) * C) << "C=" << C << " r=" << r << " c=" << c;
      EXPECT_TRUE(seen.insert(off).second) << "C=" << C << " r=" << r << " c=" << c;
      EXPECT_EQ(off % 8, c % 8);
      if (c % 8 == 0) {
        for (int v = 1; v < 8; ++v) EXPECT_EQ(tir_swz<C>(r, c + v), off + v);
      }
    }
  }
  for (int r0 = 0; r0 < rows; r0 += 8) {
    for (int c = 0; c < C; c += 8) {
      std::set<int> groups;
      for (int r = r0; r < r0 + 8; ++r) groups.insert((tir_swz<C>(r, c) * 2 / 16) % 8);
      EXPECT_EQ(groups.size(), 8u) << "C=" << C << " rows " << r0 << ".." << r0 + 7 << " chunk " << c / 8;
    }
  }
}

TEST(TileLibrary, SwizzleIsABijectionThatSpreadsEightRowsOverTheBanks) {
  CheckSwizzle<16>();
  CheckSwizzle<32>();
  CheckSwizzle<64>();
  CheckSwizzle<128>();
  CheckSwizzle<256>();
}

// The kernels' f8 conversions (tir_runtime.h) agree with the reference's
// (LLVM's APFloat plus saturation) on every f8 value, the midpoints between
// neighbours (ties round to even), values past the largest finite one,
// infinities, NaN and a sweep of float and double inputs.
TEST(TileLibrary, Float8ConversionsRoundToNearestEvenAndSaturateAsTheReference) {
  using tir::reference::RoundToFloat;
  auto check = [](double x) {
    const double e4 = RoundToFloat(x, tir::v1::DTYPE_F8E4M3FN), e5 = RoundToFloat(x, tir::v1::DTYPE_F8E5M2);
    const float k4 = tir_round_f8e4m3(static_cast<float>(x)), k5 = tir_round_f8e5m2(static_cast<float>(x));
    const float d4 = tir_round_f8e4m3(x), d5 = tir_round_f8e5m2(x);
    if (std::isnan(e4)) {
      EXPECT_TRUE(std::isnan(d4)) << x;
    } else {
      EXPECT_EQ(d4, e4) << "e4m3 from double " << x;
      if (static_cast<double>(static_cast<float>(x)) == x) EXPECT_EQ(k4, e4) << "e4m3 from float " << x;
    }
    if (std::isnan(e5)) {
      EXPECT_TRUE(std::isnan(d5)) << x;
    } else {
      EXPECT_EQ(d5, e5) << "e5m2 from double " << x;
      if (static_cast<double>(static_cast<float>(x)) == x) EXPECT_EQ(k5, e5) << "e5m2 from float " << x;
    }
  };
  std::vector<double> values = {0.0, -0.0, 448.0, 449.0, 463.99, 464.0, 465.0, 480.0, 1e6, 57344.0, 61439.0,
                                61440.0, 1e30, std::numeric_limits<double>::infinity(),
                                -std::numeric_limits<double>::infinity(), std::nan(""), 1.0 / 1024, 1.0 / 2048,
                                3.0 / 4096, 1e-9, -1e-9, 0.3, -0.3};
  for (int code = 0; code < 256; ++code) {
    const double a = tir_from_f8e4m3({static_cast<tir_u8>(code)}), b = tir_from_f8e4m3({static_cast<tir_u8>(code + 1)});
    const double c = tir_from_f8e5m2({static_cast<tir_u8>(code)}), d = tir_from_f8e5m2({static_cast<tir_u8>(code + 1)});
    for (double v : {a, c}) values.push_back(v);
    if (std::isfinite(a) && std::isfinite(b) && code != 127) values.push_back((a + b) / 2);  // a tie
    if (std::isfinite(c) && std::isfinite(d) && code != 127) values.push_back((c + d) / 2);
  }
  for (double x = 1e-7; x < 1e5; x *= 1.0137) {
    values.push_back(x);
    values.push_back(-x);
  }
  for (double v : values) check(v);
  // Decoding: the reference reads the same 256 codes to the same values.
  for (int code = 0; code < 256; ++code) {
    const uint8_t byte = static_cast<uint8_t>(code);
    for (auto dtype : {tir::v1::DTYPE_F8E4M3FN, tir::v1::DTYPE_F8E5M2}) {
      const tir::reference::Tensor t = tir::reference::FromBuffer(dtype, {1}, {}, &byte);
      const float k = dtype == tir::v1::DTYPE_F8E4M3FN ? tir_from_f8e4m3({byte}) : tir_from_f8e5m2({byte});
      if (std::isnan(t.GetF(0))) EXPECT_TRUE(std::isnan(k)) << code;
      else EXPECT_EQ(k, t.GetF(0)) << "code " << code << " dtype " << dtype;
    }
  }
  // Saturation and NaN, spelled out.
  EXPECT_EQ(tir_to_f8e4m3(1e9f).bits, 0x7e);
  EXPECT_EQ(tir_to_f8e4m3(-INFINITY).bits, 0xfe);
  EXPECT_EQ(tir_to_f8e5m2(INFINITY).bits, 0x7b);
  EXPECT_EQ(tir_to_f8e4m3(NAN).bits & 0x7f, 0x7f);
  EXPECT_TRUE(std::isnan(tir_from_f8e5m2(tir_to_f8e5m2(NAN))));
}

// The software bf16 and f16 conversions (the host's and the lanes
// emulator's; sm_80 and later use cvt.rn.bf16.f32 / cvt.rn.f16.f32) round
// to nearest even as the reference does (LLVM's APFloat), for every high
// half with the low halves at and around the ties, for subnormals,
// overflow and infinities; NaN becomes the canonical NaN the instructions
// give, 0x7fff. Decoding every f16 pattern gives the reference's value.
TEST(TileLibrary, HalfConversionsRoundToNearestEvenWithTheInstructionsCanonicalNan) {
  using tir::reference::RoundToFloat;
  auto check = [](float x) {
    const double b = RoundToFloat(x, tir::v1::DTYPE_BF16), h = RoundToFloat(x, tir::v1::DTYPE_F16);
    if (std::isnan(x)) {
      EXPECT_EQ(tir_to_bf16(x).bits, 0x7fffu);
      EXPECT_EQ(tir_to_f16(x).bits, 0x7fffu);
      return;
    }
    EXPECT_EQ(tir_round_bf16(x), b) << "bf16 of " << x;
    EXPECT_EQ(tir_from_bf16(tir_to_bf16(x)), b) << "bf16 of " << x;
    EXPECT_EQ(std::signbit(tir_round_bf16(x)), std::signbit(b)) << x;
    EXPECT_EQ(tir_round_f16(x), h) << "f16 of " << x;
    EXPECT_EQ(std::signbit(tir_round_f16(x)), std::signbit(h)) << x;
  };
  for (uint32_t hi = 0; hi < 0x10000u; ++hi) {
    for (uint32_t lo : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu, 0x1000u, 0x2000u, 0x3000u}) {
      check(tir_bits_float((hi << 16) | lo));
    }
  }
  for (uint32_t u = 0; u < 0x7f800000u; u += 0x1f3u) check(tir_bits_float(u));
  // bf16x2: the first argument in the low half.
  EXPECT_EQ(tir_to_bf16x2(1.0f, -2.0f), 0xc0003f80u);
  EXPECT_EQ(tir_to_bf16x2(NAN, 0.0f), 0x00007fffu);
  for (uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const uint16_t half = static_cast<uint16_t>(bits);
    const tir::reference::Tensor t = tir::reference::FromBuffer(tir::v1::DTYPE_F16, {1}, {}, &half);
    const float k = tir_from_f16({half});
    if (std::isnan(t.GetF(0))) EXPECT_TRUE(std::isnan(k)) << bits;
    else EXPECT_EQ(k, t.GetF(0)) << "f16 bits " << bits;
  }
}

// f32 max and min as max.NaN.f32 / min.NaN.f32 compute them: NaN if either
// operand is NaN (the canonical 0x7fffffff), -0 below +0 in either order.
TEST(TileLibrary, FloatMaxMinPropagateNanAndOrderSignedZeros) {
  EXPECT_EQ(tir_float_bits(tir_fmax(NAN, 1.0f)), 0x7fffffffu);
  EXPECT_EQ(tir_float_bits(tir_fmin(1.0f, -NAN)), 0x7fffffffu);
  EXPECT_EQ(tir_float_bits(tir_fmax(0.0f, -0.0f)), 0x00000000u);
  EXPECT_EQ(tir_float_bits(tir_fmax(-0.0f, 0.0f)), 0x00000000u);
  EXPECT_EQ(tir_float_bits(tir_fmin(0.0f, -0.0f)), 0x80000000u);
  EXPECT_EQ(tir_float_bits(tir_fmin(-0.0f, 0.0f)), 0x80000000u);
  EXPECT_EQ(tir_fmax(-3.0f, 2.0f), 2.0f);
  EXPECT_EQ(tir_fmin(-3.0f, 2.0f), -3.0f);
  EXPECT_EQ(tir_fmax(-INFINITY, -1e30f), -1e30f);
}

// reduce_ud bodies: the kernels' integer helpers agree with the reference's
// definitions where MLIR leaves results undefined.
TEST(TileLibrary, BodyIntegerHelpersDefineWhatMlirLeavesUndefined) {
  EXPECT_EQ(tir_arith_divsi(5, 0, 32), 0u);
  EXPECT_EQ(tir_arith_divsi(0x80000000u, 0xffffffffu, 32), 0x80000000u);  // INT_MIN / -1 wraps
  EXPECT_EQ(tir_sbits(tir_arith_divsi(tir_bits(-7, 32), 2, 32), 32), -3);
  EXPECT_EQ(tir_sbits(tir_arith_divround(tir_bits(-7, 32), 2, 32, false), 32), -4);  // floordiv
  EXPECT_EQ(tir_sbits(tir_arith_divround(tir_bits(-7, 32), 2, 32, true), 32), -3);   // ceildiv
  EXPECT_EQ(tir_arith_divround(7, 2, 32, true), 4u);
  EXPECT_EQ(tir_arith_remsi(tir_bits(-7, 16), 2, 16), tir_bits(-1, 16));
  EXPECT_EQ(tir_arith_shli(1, 40, 32), 0u);
  EXPECT_EQ(tir_arith_shrsi(0x80u, 9, 8), 0xffu);
  EXPECT_EQ(tir_arith_maxsi(0xffu, 1, 8), 1u);   // -1 < 1 as signed
  EXPECT_EQ(tir_max<tir_u64>(0xff, 1), 0xffu);   // maxui
  EXPECT_EQ(tir_arith_fptoi(NAN, 32, true), 0u);
  EXPECT_EQ(tir_arith_fptoi(1e20, 8, true), 0x7fu);
  EXPECT_EQ(tir_arith_fptoi(-5.0, 8, false), 0u);
  EXPECT_EQ(tir_arith_cmpf(NAN, 1.0, 8), 1u);  // ueq: unordered is true
  EXPECT_EQ(tir_arith_cmpf(NAN, 1.0, 1), 0u);  // oeq
  EXPECT_EQ(tir_arith_cmpi(0xffu, 1, 8, 2), 1u);  // slt: -1 < 1
  EXPECT_EQ(tir_arith_cmpi(0xffu, 1, 8, 6), 0u);  // ult: 255 < 1 is false
}

}  // namespace
