// Tile arithmetic the candidate generator and the code generator share, so
// a candidate is kept exactly when the kernel it names can be generated.

#ifndef TIR_COMPILER_PLANNING_TILERULES_H_
#define TIR_COMPILER_PLANNING_TILERULES_H_

#include <cstdint>

#include "mlir/IR/Value.h"

namespace tir::planning {

// The CUDA-core matmul (f32, f64, integers): `threads` threads cover a
// block_m x block_n tile, each a tm x tn register tile (rows tr * tm + i,
// columns tc + j * (block_n / tn), so a warp reads consecutive B columns).
// `ok` when the tile divides so; the register budget (tm * tn) is the
// candidate generator's rule.
struct FfmaTile {
  int64_t tm = 0, tn = 0;
  bool ok = false;
};
inline FfmaTile FfmaTileOf(int64_t bm, int64_t bn, int64_t threads) {
  FfmaTile t;
  if (threads <= 0 || bm <= 0 || bn <= 0 || (bm * bn) % threads != 0) return t;
  const int64_t per = bm * bn / threads;
  for (int64_t tn : {8, 4, 2, 1}) {
    if (tn <= per && per % tn == 0 && bn % tn == 0 && bm % (per / tn) == 0) {
      t.tn = tn;
      t.tm = per / tn;
      t.ok = true;
      return t;
    }
  }
  return t;
}

// The tensor-core matmul: `warps` warps as warps_m x warps_n, as many along
// M as the tile has 16-row slices for.
struct WarpGrid {
  int64_t m = 1, n = 1;
};
inline WarpGrid WarpGridOf(int64_t bm, int64_t warps) {
  WarpGrid g;
  while (g.m * 2 <= warps && bm / (g.m * 2) >= 16) g.m *= 2;
  g.n = warps / g.m;
  return g;
}

// What a matmul operand multiplies: `source` of element type `element`,
// looking through a convert from bf16/f16 to f32 (`converted`), which
// changes no product: tensor cores take the 16-bit values as they are.
struct MmaOperand {
  mlir::Value source;
  mlir::Type element;
  bool converted = false;
};
MmaOperand MmaOperandOf(mlir::Value v);

}  // namespace tir::planning

#endif  // TIR_COMPILER_PLANNING_TILERULES_H_
