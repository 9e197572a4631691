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

// The sm_90a matmul's shared memory: 1 KiB of leading alignment, `stages`
// stages of A and B tiles (128-byte rows: (bm + bn) x 128 bytes each),
// then either each stage's two mbarriers (16 bytes), or with tma_store a
// KiB of mbarriers and each consumer's two output slots of one TMA box
// (64 rows x 128 bytes). The candidate generator keeps a candidate when
// this fits; the emitter lays the memory out so.
inline constexpr int64_t kHopperStoreBoxBytes = 64 * 128, kHopperStoreSlots = 2;
inline int64_t HopperSharedBytes(int64_t bm, int64_t bn, int64_t stages, int64_t consumers, bool tma_store) {
  return 1024 + stages * (bm + bn) * 128 +
         (tma_store ? 1024 + consumers * kHopperStoreSlots * kHopperStoreBoxBytes : stages * 16);
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
