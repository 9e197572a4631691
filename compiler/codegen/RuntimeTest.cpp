// Properties of the tile library's host implementation that the generated
// kernels rely on.

#include <set>

#include "compiler/codegen/runtime/tir_runtime.h"
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

}  // namespace
