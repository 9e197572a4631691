// A 5x7 bitmap font for chart labels: digits, capital letters (lower case
// is drawn as capitals) and the punctuation labels use.

#ifndef TIR_BENCH_FLEET_FONT_H_
#define TIR_BENCH_FLEET_FONT_H_

namespace tir::fleet {

constexpr int kGlyphWidth = 5;
constexpr int kGlyphHeight = 7;

// Row `row` (0 = top) of `c`'s glyph, bit 4 the leftmost column; a
// character without a glyph is drawn as a box.
unsigned GlyphRow(char c, int row);

}  // namespace tir::fleet

#endif  // TIR_BENCH_FLEET_FONT_H_
