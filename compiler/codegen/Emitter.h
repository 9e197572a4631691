// Kernel graph + candidate -> one CUDA C++ translation unit.
//
// The source includes tir_runtime.h and defines `tir_kernel(tir_args)` plus,
// when built for the host, `tir_host_call(fields, gx, gy, gz)` that packs the
// arguments (fields[i] points at the i-th field's value, as CUDA's kernel
// parameters do) and runs the blocks one after another on the calling thread. Tile parameters are compile-time
// constants. Names in the source are generated (tir_args, in0, out1, v12),
// never taken from the graph, and the output is stable for the same input.
//
// Argument layout: one struct `tir_args` passed by value whose fields are, in
// order, the input pointers (or scalar values), the output pointers, then the
// iteration-domain extents, each tensor input's sizes and strides, and each
// output's strides (all int64; strides in elements).
//
// Kernel structure by kind:
//  - pointwise: each block covers threads x elements_per_thread points of the
//    domain; every op is evaluated once per point at its access map.
//  - reduction: each block owns rows_per_block rows with threads_per_row
//    threads each; each reduction is a pass over its row that recomputes its
//    input from global memory, followed by a group reduction; row outputs
//    are written in a final pass.
//  - matmul: each block owns a block_m x block_n tile of C; each element
//    accumulates over K in f32 (f64 for f64, int64 for integers) with the
//    prologue ops evaluated per (m, k) / (k, n), then runs the epilogue.
//    (This is the portable loop form; the mma.sync/cp.async form is a
//    separate path for the same candidate parameters.)
//
// The emitter is one class (KernelEmitter.h) split by concern into
// EmitTypes, EmitArguments, EmitScalars, EmitPointwise, EmitReduction,
// EmitMatmul, EmitLaunch and EmitSource; the GPU pieces it instantiates are
// the tile library's (runtime/tir_tiles.h).

#ifndef TIR_COMPILER_CODEGEN_EMITTER_H_
#define TIR_COMPILER_CODEGEN_EMITTER_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/ir/TirDialect.h"
#include "tir/v1/kernel.pb.h"

namespace tir::codegen {

struct EmittedKernel {
  std::string source;              // the translation unit (without the runtime header)
  std::string entry = "tir_kernel";
  tir::v1::LaunchRule launch;      // grid over points/rows/tiles, block threads
  // One line per field of tir_args (its C declaration), and the field names.
  std::vector<std::string> fields;
  std::vector<std::string> field_names;
};

// The runtime headers every kernel includes (compiler/codegen/runtime/):
// tir_runtime.h, the tile library tir_tiles.h it includes, and the lane
// emulator tir_lanes.h (host builds with TIR_EMULATE only), as (name, text).
const std::vector<std::pair<std::string, std::string>> &RuntimeHeaders();
// tir_runtime.h alone.
const std::string &RuntimeHeader();

// Emits `kernel` (a kernel graph from tir-partition) for a candidate's
// parameters. The graph is annotated with access maps as a side effect.
// Errors: UNSUPPORTED_OP / UNSUPPORTED_DTYPE for what codegen does not cover.
absl::StatusOr<EmittedKernel> EmitKernel(GraphOp kernel, const std::map<std::string, int64_t> &params);

// The names of `kernel`'s tir_args fields in order (EmittedKernel::field_names
// of any candidate of its kind: the Hopper matmul form, `wgmma` in the
// params, adds TMA tensor maps): what a launcher needs besides the source
// and launch rule.
absl::StatusOr<std::vector<std::string>> ArgumentFieldNames(GraphOp kernel,
                                                           const std::map<std::string, int64_t> &params = {});

// A tensor-map field name "tmap<input>_<box0>x<box1>": the kernel input
// it maps and its box, inner dim first; "tmapout<output>_<box0>x<box1>"
// maps a kernel output (`*output` says which kind `index` counts).
bool ParseTensorMapField(const std::string &name, int *index, uint32_t *box0, uint32_t *box1, bool *output);
std::string TensorMapFieldName(int input, int64_t box0, int64_t box1);
std::string OutputTensorMapFieldName(int output, int64_t box0, int64_t box1);

}  // namespace tir::codegen

#endif  // TIR_COMPILER_CODEGEN_EMITTER_H_
