// Online max-and-sum: one pass over a row computes both
//
//   m = reduce<max>(a)        over dims D
//   z = reduce<add>(exp(a - m)) over the same dims
//
// (softmax's and log-sum-exp's statistics) by carrying a running max r and
// a sum s of exp(a_i - r), rescaled by exp(r - r') when r grows to r'. A
// row too long to stay on chip is then read once for m and z instead of
// twice. The pattern is matched on f32 and f64, where the rescaled sum
// differs from the two-pass one by rounding, like a reordered sum: the
// terms on a GPU take the hardware ex2 (tir_tiles.h, tir_online_exp, about
// 2 ulp a term, uncorrelated), the rescales the accurate exp (their errors
// would compound over the rises of the running max), against the sum's
// bound of at least 1e-5.
//
// Graphs computing in bf16 or f16 keep the two passes: they round a - m to
// their type, an error of |a - m| x 2^-9 for bf16 that the graph defines
// against the row's max. Against a running reference r != m the rounding
// differs, by the same amount and with the same sign for equal elements: a
// row alternating -3.3 and -5.7 with a 3.0 at its end sums 1.5% off, over
// bf16's 1e-2 bound. Frameworks compute a bf16 softmax in f32 (tir.fx
// writes it so: convert, f32 arithmetic, convert), which this matches.

#ifndef TIR_COMPILER_IR_ONLINESOFTMAX_H_
#define TIR_COMPILER_IR_ONLINESOFTMAX_H_

#include <functional>
#include <optional>

#include "compiler/ir/TirDialect.h"

namespace tir {

struct OnlineSoftmax {
  ReduceOp max;   // m = reduce<max>(a)
  BroadcastOp broadcast;  // m expanded to a's shape, or null (sub broadcasts it)
  SubOp sub;      // a - m
  ExpOp exp;      // exp(a - m)
  ReduceOp sum;   // z = reduce<add>(exp(a - m))
};

// The online pair `max` starts, among the ops `inKernel` accepts: over the
// row its result is used there only by `a - m` (a being max's own input; m
// directly or through one broadcast used only there; other uses are per
// row, as log-sum-exp's m + log(z)), that only
// by one exp, and that only by one add-reduction over the same dims; every
// value f32 or f64 of a's shape.
std::optional<OnlineSoftmax> MatchOnlineSoftmax(ReduceOp max,
                                                const std::function<bool(mlir::Operation *)> &inKernel);

}  // namespace tir

#endif  // TIR_COMPILER_IR_ONLINESOFTMAX_H_
