#include "compiler/codegen/testing/CodegenCorpus.h"

namespace tir::codegen::testing_corpus {

const std::vector<Case> &Corpus() {
  static const auto *cases = new std::vector<Case>{
      {"pointwise_broadcast_transposed_strided", R"mlir(
tir.graph @g(%x: tensor<6x10xf32> {tir.stride = "(1,6)"}, %xt: tensor<10x6xf32>, %b: tensor<1x10xf32>) -> tensor<6x10xf32> {
  %t = transpose %xt permutation = [1, 0] : tensor<10x6xf32> -> tensor<6x10xf32>
  %a = add %x, %b : (tensor<6x10xf32>, tensor<1x10xf32>) -> tensor<6x10xf32>
  %m = mul %a, %t : tensor<6x10xf32>
  %g = gelu_approx_tanh_fwd %m : tensor<6x10xf32>
  %s = softplus_fwd<beta = 2.0 : f32> %g : tensor<6x10xf32>
  results %s : tensor<6x10xf32>
})mlir"},
      {"padded_rows_unaligned_runs", R"mlir(
tir.graph @g(%x: tensor<6x8xf32> {tir.stride = "(9,1)"}, %y: tensor<6x8xf32>) -> tensor<6x8xf32> {
  %a = add %x, %y : tensor<6x8xf32>
  %t = tanh_fwd %a : tensor<6x8xf32>
  results %t : tensor<6x8xf32>
})mlir"},
      {"slice_concat_reshape", R"mlir(
tir.graph @g(%x: tensor<8x8xf32>, %y: tensor<4x16xf32>) -> tensor<3x8xf32> {
  %s = slice %x starts = [1, 0] limits = [7, 8] strides = [2, 1] : tensor<8x8xf32> -> tensor<3x8xf32>
  %r = reshape %y : tensor<4x16xf32> -> tensor<8x8xf32>
  %w = slice %r starts = [0, 0] limits = [3, 8] strides = [1, 1] : tensor<8x8xf32> -> tensor<3x8xf32>
  %c = concatenate %s, %w dimension = 0 : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<6x8xf32>
  %e = exp %c : tensor<6x8xf32>
  %k = slice %e starts = [2, 0] limits = [5, 8] strides = [1, 1] : tensor<6x8xf32> -> tensor<3x8xf32>
  results %k : tensor<3x8xf32>
})mlir"},
      {"integers_and_compare", R"mlir(
tir.graph @g(%a: tensor<5x7xsi32>, %b: tensor<5x7xsi32>, %u: tensor<5x7xui8>) -> (tensor<5x7xsi32>, tensor<5x7xi1>, tensor<5x7xui8>) {
  %m = mod %a, %b : tensor<5x7xsi32>
  %d = div %a, %b : tensor<5x7xsi32>
  %s = add %m, %d : tensor<5x7xsi32>
  %c = cmp %a lt %b : tensor<5x7xsi32>
  %u2 = mul %u, %u : tensor<5x7xui8>
  results %s, %c, %u2 : tensor<5x7xsi32>, tensor<5x7xi1>, tensor<5x7xui8>
})mlir"},
      {"bf16_and_f16", R"mlir(
tir.graph @g(%x: tensor<4x32xbf16>, %y: tensor<4x32xf16>) -> (tensor<4x32xbf16>, tensor<4x32xf32>) {
  %t = tanh_fwd %x : tensor<4x32xbf16>
  %s = mul %t, %x : tensor<4x32xbf16>
  %yf = convert %y : tensor<4x32xf16> -> tensor<4x32xf32>
  %sf = convert %s : tensor<4x32xbf16> -> tensor<4x32xf32>
  %o = add %yf, %sf : tensor<4x32xf32>
  results %s, %o : tensor<4x32xbf16>, tensor<4x32xf32>
})mlir"},
      {"select_iota_constant_f64", R"mlir(
tir.graph @g(%x: tensor<3x4xf64>) -> tensor<3x4xf64> {
  %i = iota dimension = 1 : tensor<3x4xf64>
  %k = constant dense<[[1.0, 2.0, 3.0, 4.0]]> : tensor<1x4xf64>
  %p = cmp %x ogt %i : tensor<3x4xf64>
  %a = add %x, %k : (tensor<3x4xf64>, tensor<1x4xf64>) -> tensor<3x4xf64>
  %s = binary_select %p, %a, %i : tensor<3x4xf64>
  results %s : tensor<3x4xf64>
})mlir"},
      {"reduce_every_mode", R"mlir(
tir.graph @g(%x: tensor<6x33xf32>) -> (tensor<6x1xf32>, tensor<6x1xf32>, tensor<6x1xf32>, tensor<6x1xf32>, tensor<6x1xf32>, tensor<6x1xf32>, tensor<6x1xf32>) {
  %a = reduce(%x)<dimensions = [1], reduction_mode = <add>> : tensor<6x33xf32> -> tensor<6x1xf32>
  %b = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<6x33xf32> -> tensor<6x1xf32>
  %c = reduce(%x)<dimensions = [1], reduction_mode = <min>> : tensor<6x33xf32> -> tensor<6x1xf32>
  %d = reduce(%x)<dimensions = [1], reduction_mode = <mean>> : tensor<6x33xf32> -> tensor<6x1xf32>
  %e = reduce(%x)<dimensions = [1], reduction_mode = <amax>> : tensor<6x33xf32> -> tensor<6x1xf32>
  %f = reduce(%x)<dimensions = [1], reduction_mode = <norm1>> : tensor<6x33xf32> -> tensor<6x1xf32>
  %g = reduce(%x)<dimensions = [1], reduction_mode = <norm2>> : tensor<6x33xf32> -> tensor<6x1xf32>
  results %a, %b, %c, %d, %e, %f, %g : tensor<6x1xf32>, tensor<6x1xf32>, tensor<6x1xf32>, tensor<6x1xf32>, tensor<6x1xf32>, tensor<6x1xf32>, tensor<6x1xf32>
})mlir"},
      {"column_reduce_int", R"mlir(
tir.graph @g(%x: tensor<17x5xsi32>) -> tensor<1x5xsi32> {
  %s = reduce(%x)<dimensions = [0], reduction_mode = <add>> : tensor<17x5xsi32> -> tensor<1x5xsi32>
  results %s : tensor<1x5xsi32>
})mlir"},
      {"softmax", R"mlir(
tir.graph @g(%x: tensor<5x40xf32>) -> tensor<5x40xf32> {
  %m = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<5x40xf32> -> tensor<5x1xf32>
  %s = sub %x, %m : (tensor<5x40xf32>, tensor<5x1xf32>) -> tensor<5x40xf32>
  %e = exp %s : tensor<5x40xf32>
  %z = reduce(%e)<dimensions = [1], reduction_mode = <add>> : tensor<5x40xf32> -> tensor<5x1xf32>
  %y = div %e, %z : (tensor<5x40xf32>, tensor<5x1xf32>) -> tensor<5x40xf32>
  results %y : tensor<5x40xf32>
})mlir"},
      {"layernorm", R"mlir(
tir.graph @g(%x: tensor<4x24xf32>, %gamma: tensor<1x24xf32>) -> (tensor<4x24xf32>, tensor<4x1xf32>) {
  %mu = reduce(%x)<dimensions = [1], reduction_mode = <mean>> : tensor<4x24xf32> -> tensor<4x1xf32>
  %c = sub %x, %mu : (tensor<4x24xf32>, tensor<4x1xf32>) -> tensor<4x24xf32>
  %c2 = mul %c, %c : tensor<4x24xf32>
  %var = reduce(%c2)<dimensions = [1], reduction_mode = <mean>> : tensor<4x24xf32> -> tensor<4x1xf32>
  %eps = constant dense<1.0e-05> : tensor<4x1xf32>
  %ve = add %var, %eps : tensor<4x1xf32>
  %rs = rsqrt %ve : tensor<4x1xf32>
  %n = mul %c, %rs : (tensor<4x24xf32>, tensor<4x1xf32>) -> tensor<4x24xf32>
  %y = mul %n, %gamma : (tensor<4x24xf32>, tensor<1x24xf32>) -> tensor<4x24xf32>
  results %y, %rs : tensor<4x24xf32>, tensor<4x1xf32>
})mlir"},
      // bf16 rows: softmax's exp kept between passes and its division by a
      // per-row sum; RMS norm's square read from one run of x.
      {"softmax_bf16", R"mlir(
tir.graph @g(%x: tensor<6x64xbf16>) -> tensor<6x64xbf16> {
  %m = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<6x64xbf16> -> tensor<6x1xbf16>
  %s = sub %x, %m : (tensor<6x64xbf16>, tensor<6x1xbf16>) -> tensor<6x64xbf16>
  %e = exp %s : tensor<6x64xbf16>
  %z = reduce(%e)<dimensions = [1], reduction_mode = <add>> : tensor<6x64xbf16> -> tensor<6x1xbf16>
  %y = div %e, %z : (tensor<6x64xbf16>, tensor<6x1xbf16>) -> tensor<6x64xbf16>
  results %y : tensor<6x64xbf16>
})mlir"},
      // Rows longer than sm_90a's on-chip row budget: the max and the sum
      // of exp(x - max) in one online pass (split across blocks), the
      // normalize recomputing exp from x, and log-sum-exp from both.
      {"online_softmax_long_rows", R"mlir(
tir.graph @g(%x: tensor<2x24600xbf16>) -> (tensor<2x24600xbf16>, tensor<2x1xf32>) {
  %xf = convert %x : tensor<2x24600xbf16> -> tensor<2x24600xf32>
  %m = reduce(%xf)<dimensions = [1], reduction_mode = <max>> : tensor<2x24600xf32> -> tensor<2x1xf32>
  %s = sub %xf, %m : (tensor<2x24600xf32>, tensor<2x1xf32>) -> tensor<2x24600xf32>
  %e = exp %s : tensor<2x24600xf32>
  %z = reduce(%e)<dimensions = [1], reduction_mode = <add>> : tensor<2x24600xf32> -> tensor<2x1xf32>
  %p = div %e, %z : (tensor<2x24600xf32>, tensor<2x1xf32>) -> tensor<2x24600xf32>
  %y = convert %p : tensor<2x24600xf32> -> tensor<2x24600xbf16>
  %l = log %z : tensor<2x1xf32>
  %lse = add %l, %m : tensor<2x1xf32>
  results %y, %lse : tensor<2x24600xbf16>, tensor<2x1xf32>
})mlir"},
      {"rms_norm_bf16", R"mlir(
tir.graph @g(%x: tensor<5x48xbf16>, %w: tensor<1x48xbf16>) -> tensor<5x48xbf16> {
  %sq = mul %x, %x : tensor<5x48xbf16>
  %ms = reduce(%sq)<dimensions = [1], reduction_mode = <mean>> : tensor<5x48xbf16> -> tensor<5x1xbf16>
  %eps = constant dense<1.0e-06> : tensor<5x1xbf16>
  %ve = add %ms, %eps : tensor<5x1xbf16>
  %r = rsqrt %ve : tensor<5x1xbf16>
  %n = mul %x, %r : (tensor<5x48xbf16>, tensor<5x1xbf16>) -> tensor<5x48xbf16>
  %y = mul %n, %w : (tensor<5x48xbf16>, tensor<1x48xbf16>) -> tensor<5x48xbf16>
  results %y : tensor<5x48xbf16>
})mlir"},
      // bf16 in and out, f32 arithmetic (Llama's RMS norm): rows move as
      // 8-element (16-byte) bf16 runs while the math holds f32 values.
      {"rms_norm_bf16_f32_math", R"mlir(
tir.graph @g(%x: tensor<5x48xbf16>, %w: tensor<1x48xbf16>) -> tensor<5x48xbf16> {
  %xf = convert %x : tensor<5x48xbf16> -> tensor<5x48xf32>
  %wf = convert %w : tensor<1x48xbf16> -> tensor<1x48xf32>
  %sq = mul %xf, %xf : tensor<5x48xf32>
  %ms = reduce(%sq)<dimensions = [1], reduction_mode = <mean>> : tensor<5x48xf32> -> tensor<5x1xf32>
  %eps = constant dense<1.0e-06> : tensor<5x1xf32>
  %ve = add %ms, %eps : tensor<5x1xf32>
  %r = rsqrt %ve : tensor<5x1xf32>
  %n = mul %xf, %r : (tensor<5x48xf32>, tensor<5x1xf32>) -> tensor<5x48xf32>
  %y = mul %n, %wf : (tensor<5x48xf32>, tensor<1x48xf32>) -> tensor<5x48xf32>
  %yb = convert %y : tensor<5x48xf32> -> tensor<5x48xbf16>
  results %yb : tensor<5x48xbf16>
})mlir"},
      // A bf16 softmax computed in f32, rows kept on chip.
      {"softmax_bf16_f32_math", R"mlir(
tir.graph @g(%x: tensor<6x64xbf16>) -> tensor<6x64xbf16> {
  %xf = convert %x : tensor<6x64xbf16> -> tensor<6x64xf32>
  %m = reduce(%xf)<dimensions = [1], reduction_mode = <max>> : tensor<6x64xf32> -> tensor<6x1xf32>
  %s = sub %xf, %m : (tensor<6x64xf32>, tensor<6x1xf32>) -> tensor<6x64xf32>
  %e = exp %s : tensor<6x64xf32>
  %z = reduce(%e)<dimensions = [1], reduction_mode = <add>> : tensor<6x64xf32> -> tensor<6x1xf32>
  %p = div %e, %z : (tensor<6x64xf32>, tensor<6x1xf32>) -> tensor<6x64xf32>
  %y = convert %p : tensor<6x64xf32> -> tensor<6x64xbf16>
  results %y : tensor<6x64xbf16>
})mlir"},
      {"matmul_bias_gelu_residual_bf16", R"mlir(
tir.graph @g(%x: tensor<20x16xbf16>, %w: tensor<16x12xbf16>, %b: tensor<1x12xf32>, %r: tensor<20x12xf32>) -> tensor<20x12xf32> {
  %m = matmul(%x, %w) : (tensor<20x16xbf16>, tensor<16x12xbf16>) -> tensor<20x12xf32>
  %y = add %m, %b : (tensor<20x12xf32>, tensor<1x12xf32>) -> tensor<20x12xf32>
  %g = gelu_approx_tanh_fwd %y : tensor<20x12xf32>
  %o = add %g, %r : tensor<20x12xf32>
  results %o : tensor<20x12xf32>
})mlir"},
      {"batched_matmul_transposed_b_accumulator", R"mlir(
tir.graph @g(%a: tensor<3x9x7xf32>, %bt: tensor<1x5x7xf32>, %c: tensor<3x9x5xf32>) -> tensor<3x9x5xf32> {
  %b = transpose %bt permutation = [0, 2, 1] : tensor<1x5x7xf32> -> tensor<1x7x5xf32>
  %m = matmul(%a, %b) accum(%c : tensor<3x9x5xf32>) : (tensor<3x9x7xf32>, tensor<1x7x5xf32>) -> tensor<3x9x5xf32>
  %r = relu_fwd %m : tensor<3x9x5xf32>
  results %r : tensor<3x9x5xf32>
})mlir"},
      {"welford_reduce_ud", R"mlir(
tir.graph @g(%x: tensor<6x20xf32>, %w: tensor<6x20xf32>) -> (tensor<6x1xf32>, tensor<6x1xf32>) {
  %r:2 = reduce_ud(%x, %w)<dimensions = [1], identity = [0.0 : f32, 0.0 : f32]> (%s: f32, %q: f32, %a: f32, %b: f32) {
    %ab = arith.mulf %a, %b : f32
    %s2 = arith.addf %s, %ab : f32
    %m = arith.maxf %q, %a : f32
    tir.yield %s2, %m : f32, f32
  } : tensor<6x20xf32>, tensor<6x20xf32> -> tensor<6x1xf32>, tensor<6x1xf32>
  results %r#0, %r#1 : tensor<6x1xf32>, tensor<6x1xf32>
})mlir"},
      {"dynamic_rows_softmax", R"mlir(
tir.graph @g(%x: tensor<?x24xf32>) -> tensor<?x24xf32> {
  %m = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<?x24xf32> -> tensor<?x1xf32>
  %s = sub %x, %m : (tensor<?x24xf32>, tensor<?x1xf32>) -> tensor<?x24xf32>
  %e = exp %s : tensor<?x24xf32>
  results %e : tensor<?x24xf32>
})mlir"},
      {"dynamic_reshape", R"mlir(
tir.graph @g(%x: tensor<?x4x?xf32>, %rows: index, %cols: index) -> tensor<?x?xf32> {
  %y = reshape %x dynamic_dims(%rows, %cols) : tensor<?x4x?xf32> -> tensor<?x?xf32>
  %s = sigmoid_fwd %y : tensor<?x?xf32>
  %m = mul %s, %y : tensor<?x?xf32>
  results %m : tensor<?x?xf32>
})mlir"},
      {"dynamic_concatenate", R"mlir(
tir.graph @g(%a: tensor<?x3xf32>, %b: tensor<2x3xf32>, %c: tensor<?x3xf32>) -> tensor<?x3xf32> {
  %k = concatenate %a, %b, %c dimension = 0 : (tensor<?x3xf32>, tensor<2x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
  %e = exp %k : tensor<?x3xf32>
  results %e : tensor<?x3xf32>
})mlir"},
      {"dynamic_pointwise", R"mlir(
tir.graph @g(%x: tensor<?x?xf32>, %b: tensor<1x?xf32>) -> tensor<?x?xf32> {
  %a = add %x, %b : (tensor<?x?xf32>, tensor<1x?xf32>) -> tensor<?x?xf32>
  %r = relu_fwd %a : tensor<?x?xf32>
  results %r : tensor<?x?xf32>
})mlir"},
      {"every_integer_dtype", R"mlir(
tir.graph @g(%a: tensor<9xsi8>, %b: tensor<9xsi16>, %c: tensor<9xsi64>, %d: tensor<9xui16>, %e: tensor<9xui32>, %f: tensor<9xui64>)
    -> (tensor<9xsi8>, tensor<9xsi16>, tensor<9xsi64>, tensor<9xui16>, tensor<9xui32>, tensor<9xui64>, tensor<9xf32>) {
  %a2 = mul %a, %a : tensor<9xsi8>
  %b2 = sub %b, %b : tensor<9xsi16>
  %c2 = pow %c, %c : (tensor<9xsi64>, tensor<9xsi64>) -> tensor<9xsi64>
  %d2 = max %d, %d : tensor<9xui16>
  %e2 = rem %e, %e : tensor<9xui32>
  %f2 = add_square %f, %f : tensor<9xui64>
  %cf = convert %a : tensor<9xsi8> -> tensor<9xf32>
  results %a2, %b2, %c2, %d2, %e2, %f2, %cf : tensor<9xsi8>, tensor<9xsi16>, tensor<9xsi64>, tensor<9xui16>, tensor<9xui32>, tensor<9xui64>, tensor<9xf32>
})mlir"},
      {"convert_float_to_int_saturates", R"mlir(
tir.graph @g(%x: tensor<4x8xf32>) -> (tensor<4x8xsi8>, tensor<4x8xui8>) {
  %big = constant dense<300.0> : tensor<4x8xf32>
  %y = mul %x, %big : tensor<4x8xf32>
  %a = convert %y : tensor<4x8xf32> -> tensor<4x8xsi8>
  %b = convert %y : tensor<4x8xf32> -> tensor<4x8xui8>
  results %a, %b : tensor<4x8xsi8>, tensor<4x8xui8>
})mlir"},
      {"matmul_epilogues", R"mlir(
tir.graph @g(%x: tensor<12x8xf16>, %w: tensor<8x10xf16>, %s: tensor<12x1xf32>) -> (tensor<12x10xf32>, tensor<12x10xbf16>) {
  %m = matmul(%x, %w) : (tensor<12x8xf16>, tensor<8x10xf16>) -> tensor<12x10xf32>
  %sc = mul %m, %s : (tensor<12x10xf32>, tensor<12x1xf32>) -> tensor<12x10xf32>
  %sg = sigmoid_fwd %sc : tensor<12x10xf32>
  %sw = swish_fwd<beta = 1.0 : f32> %sc : tensor<12x10xf32>
  %o = add %sg, %sw : tensor<12x10xf32>
  %ob = convert %o : tensor<12x10xf32> -> tensor<12x10xbf16>
  results %o, %ob : tensor<12x10xf32>, tensor<12x10xbf16>
})mlir"},
      // TensorIR's own textual forms and constructs (written as TensorIR
      // writes them).
      {"tensorir_avg_mul_no_zeros", R"mlir(
nv_tensor_ir.graph @g(%x: tensor<6x20xf32>, %z: tensor<6x20xsi32>) -> (tensor<6x1xf32>, tensor<6x1xf32>, tensor<6x1xf32>, tensor<6x1xsi32>, tensor<6x1xsi32>) attributes {tile_size = array<i32: 2>} {
  %a = reduce(%x) <dimensions = [1], reduction_mode = <avg>> : tensor<6x20xf32> -> tensor<6x1xf32>
  %m = reduce(%x) <dimensions = [1], reduction_mode = <mean>> : tensor<6x20xf32> -> tensor<6x1xf32>
  %zero = constant dense<0.0> : tensor<6x20xf32>
  %half = cmp %x ogt %zero : tensor<6x20xf32>
  %sparse = binary_select %half, %x, %zero : tensor<6x20xf32>
  %p = reduce(%sparse) <dimensions = [1], reduction_mode = <mul_no_zeros>> : tensor<6x20xf32> -> tensor<6x1xf32>
  %q = reduce(%z) <dimensions = [1], reduction_mode = <mul_no_zeros>> : tensor<6x20xsi32> -> tensor<6x1xsi32>
  %r = reduce(%z) <dimensions = [1], reduction_mode = <avg>> : tensor<6x20xsi32> -> tensor<6x1xsi32>
  results %a, %m, %p, %q, %r : tensor<6x1xf32>, tensor<6x1xf32>, tensor<6x1xf32>, tensor<6x1xsi32>, tensor<6x1xsi32>
})mlir"},
      {"tensorir_reduce_ud_upstream_arith", R"mlir(
nv_tensor_ir.graph @g(%x: tensor<4x24xf32>, %u: tensor<4x24xui32>, %s: tensor<4x24xsi16>) -> (tensor<4x1xf32>, tensor<4x1xui32>, tensor<4x1xsi16>) {
  %mx = reduce_ud(%x) <dimensions = [1], identity = [0xFF800000 : f32]> (%acc: f32, %val: f32) {
    %0 = arith.maximumf %acc, %val : f32
    %c = arith.constant 0.5 : f32
    %1 = arith.minimumf %0, %c : f32
    %2 = arith.cmpf ogt, %acc, %1 : f32
    %3 = arith.select %2, %acc, %1 : f32
    nv_tensor_ir.yield %3 : f32
  } : tensor<4x24xf32> -> tensor<4x1xf32>
  %um = reduce_ud(%u) <dimensions = [1], identity = [4294967295 : ui32]> (%acc: i32, %val: i32) {
    %0 = arith.minui %acc, %val : i32
    %1 = arith.xori %0, %val : i32
    %2 = arith.andi %1, %acc : i32
    %3 = arith.cmpi ult, %2, %0 : i32
    %4 = arith.select %3, %2, %0 : i32
    nv_tensor_ir.yield %4 : i32
  } : tensor<4x24xui32> -> tensor<4x1xui32>
  %sm = reduce_ud(%s) <dimensions = [1], identity = [-32768 : si16]> (%acc: i16, %val: i16) {
    %0 = arith.maxsi %acc, %val : i16
    %d = arith.divsi %val, %0 : i16
    %r = arith.remsi %val, %acc : i16
    %1 = arith.addi %0, %d : i16
    %2 = arith.subi %1, %r : i16
    %3 = arith.maxsi %2, %0 : i16
    nv_tensor_ir.yield %3 : i16
  } : tensor<4x24xsi16> -> tensor<4x1xsi16>
  results %mx, %um, %sm : tensor<4x1xf32>, tensor<4x1xui32>, tensor<4x1xsi16>
})mlir"},
      {"tensorir_f8_and_i1_conversions", R"mlir(
nv_tensor_ir.graph @g(%x: tensor<8x16xf32>, %d: tensor<8x16xf64>, %e: tensor<8x16xf8E5M2>) -> (tensor<8x16xf8E4M3FN>, tensor<8x16xf8E5M2>, tensor<8x16xbf16>, tensor<8x16xi1>, tensor<8x16xf32>) {
  %big = constant dense<300.0> : tensor<8x16xf32>
  %s = mul %x, %big : tensor<8x16xf32>
  %a = convert %s : tensor<8x16xf32> -> tensor<8x16xf8E4M3FN>
  %b = convert %d : tensor<8x16xf64> -> tensor<8x16xf8E5M2>
  %c = convert %e : tensor<8x16xf8E5M2> -> tensor<8x16xbf16>
  %half = constant dense<0.5> : tensor<8x16xf32>
  %h = mul %x, %half : tensor<8x16xf32>
  %i = convert %h : tensor<8x16xf32> -> tensor<8x16xi1>
  %back = convert %a : tensor<8x16xf8E4M3FN> -> tensor<8x16xf32>
  results %a, %b, %c, %i, %back : tensor<8x16xf8E4M3FN>, tensor<8x16xf8E5M2>, tensor<8x16xbf16>, tensor<8x16xi1>, tensor<8x16xf32>
})mlir"},
      {"tensorir_stride_zero_alignment_and_hints", R"mlir(
nv_tensor_ir.graph @g(%row: tensor<6x16xf32> {nv_tensor_ir.stride = "(0,1)", nv_tensor_ir.alignment = 64},
                      %col: tensor<6x16xf32> {nv_tensor_ir.stride = "(1,0)"},
                      %dyn: tensor<6x?xf32> {nv_tensor_ir.stride = "(? { div = 8 }, 1)", nv_tensor_ir.alignment = 128})
    -> (tensor<6x?xf32> {nv_tensor_ir.stride = "(?{div=4},1)", nv_tensor_ir.alignment = 64},
        tensor<6x16xf32> {nv_tensor_ir.stride = "(0,1)"}) {
  %s = add %row, %col : tensor<6x16xf32>
  %t = relu_fwd %dyn : tensor<6x?xf32>
  results %t, %s : tensor<6x?xf32>, tensor<6x16xf32>
})mlir"},
      {"tensorir_analysis_attributes", R"mlir(
#src = #nv_tensor_ir.tensor_source<0, 0, "(8,16):(16,1)">
nv_tensor_ir.graph @g(%x: tensor<8x16xf16> {nv_tensor_ir.iter_space_dim_domains = #nv_tensor_ir<iter_space_dim_domains[undef, undef]>, nv_tensor_ir.iter_space_ids = array<i32: 0>, nv_tensor_ir.iter_space_map = affine_map<(d0, d1) -> (d0, d1)>, nv_tensor_ir.cost = 2 : i32})
    -> tensor<8x16xf32> attributes {tile_candidates = [array<i32: 64>, array<i32: 128>]} {
  %f = convert %x {nv_tensor_ir.iter_space_id = 0 : i32, layout = #src,
                   nv_tensor_ir.iter_space_dim_domains = #nv_tensor_ir<iter_space_dim_domains[def, def]>} : tensor<8x16xf16> -> tensor<8x16xf32>
  %t = transpose %f permutation = [1, 0] {layout = #nv_tensor_ir.composite_source<#src>} : tensor<8x16xf32> -> tensor<16x8xf32>
  %u = transpose %t permutation = [1, 0] : tensor<16x8xf32> -> tensor<8x16xf32>
  %e = exp %u : tensor<8x16xf32>
  results %e attributes {iteration_space = #nv_tensor_ir.tensor_source<0, 0, "(128):(1)">} : tensor<8x16xf32>
})mlir"},
      {"diamond_reduce_broadcast_transpose", R"mlir(
nv_tensor_ir.graph @g(%in: tensor<16x16xf32> {nv_tensor_ir.stride = "(1,16)"}) -> (tensor<16x16xf32> {nv_tensor_ir.stride = "(1,16)"}) {
  %r = reduce(%in) <dimensions = [1], reduction_mode = <add>> : tensor<16x16xf32> -> tensor<16x1xf32>
  %b = broadcast %r : tensor<16x1xf32> -> tensor<16x16xf32>
  %t = transpose %b permutation = [1, 0] : tensor<16x16xf32> -> tensor<16x16xf32>
  %a = add %b, %t : tensor<16x16xf32>
  results %a : tensor<16x16xf32>
})mlir"},
      {"dynamic_unit_reshape_of_computed_values", R"mlir(
tir.graph @g(%x: tensor<?x8xf32>, %b: tensor<?x8xf32>, %d: index) -> (tensor<?x1x8xf32>, tensor<1x?x8xf32>) {
  %e = exp %x : tensor<?x8xf32>
  %r = reshape %e : tensor<?x8xf32> -> tensor<?x1x8xf32>
  %u = reshape %b : tensor<?x8xf32> -> tensor<?x1x8xf32>
  %a = add %r, %u : tensor<?x1x8xf32>
  %n = neg %a : tensor<?x1x8xf32>
  %t = reshape %e dynamic_dims(%d) : tensor<?x8xf32> -> tensor<1x?x8xf32>
  %s = sigmoid_fwd %t : tensor<1x?x8xf32>
  results %n, %s : tensor<?x1x8xf32>, tensor<1x?x8xf32>
})mlir"},
      // A kernel whose iteration domain is one output (2x1x?x8) and whose
      // other output drops its unit dim: the dropped-dim output's index was
      // once taken through the domain's linear index with the dynamic size's
      // placeholder as a stride and a modulus (`mod -9223372036854775808`),
      // a kernel that died with SIGILL and took its caller with it.
      {"dynamic_unit_reshape_output_beside_its_input", R"mlir(
tir.graph @g(%x: tensor<2x?x8xf32>, %d: index) -> (tensor<2x?x8xf32>, tensor<2x1x?x8xf32>) {
  %e = exp %x : tensor<2x?x8xf32>
  %r = reshape %e dynamic_dims(%d) : tensor<2x?x8xf32> -> tensor<2x1x?x8xf32>
  %n = neg %e : tensor<2x?x8xf32>
  results %n, %r : tensor<2x?x8xf32>, tensor<2x1x?x8xf32>
})mlir"},
      {"dynamic_reshape_of_computed_values", R"mlir(
nv_tensor_ir.graph @g(%x: tensor<?x3xf32>, %cols: index, %y: tensor<?x32x4xf32>, %z: tensor<?x128xf32>) -> (tensor<3x?xf32>, tensor<?x128xf32>) {
  %e = exp %x : tensor<?x3xf32>
  %r = reshape %e dynamic_dims(%cols) : tensor<?x3xf32> -> tensor<3x?xf32>
  %n = neg %y : tensor<?x32x4xf32>
  %m = reshape %n : tensor<?x32x4xf32> -> tensor<?x128xf32>
  %s = add %m, %z : tensor<?x128xf32>
  results %r, %s : tensor<3x?xf32>, tensor<?x128xf32>
})mlir"},
      {"tensorir_dynamic_add_of_aliasing_transposed_input", R"mlir(
nv_tensor_ir.graph @g(%a: tensor<?x8x16xf32>, %b: tensor<16x8x?xf32> {nv_tensor_ir.stride = "(1,8,128)"}) -> tensor<?x8x16xf32> {
  %t = transpose %b permutation = [2, 1, 0] : tensor<16x8x?xf32> -> tensor<?x8x16xf32>
  %c = add %a, %t : tensor<?x8x16xf32>
  results %c : tensor<?x8x16xf32>
})mlir"},
      {"tensorir_static_and_dynamic_strides_mixed", R"mlir(
nv_tensor_ir.graph @g(%in: tensor<2x?x4x?xf32> {nv_tensor_ir.stride = "(1,?,2,?)"}, %c: tensor<8x8x?xf32> {nv_tensor_ir.stride = "(1,8,?)"}) -> (tensor<?x4x?x2xf32>, tensor<8x8x?xf32>) {
  %t = transpose %in permutation = [3, 2, 1, 0] : tensor<2x?x4x?xf32> -> tensor<?x4x?x2xf32>
  %e = exp %c : tensor<8x8x?xf32>
  results %t, %e : tensor<?x4x?x2xf32>, tensor<8x8x?xf32>
})mlir"},
      {"two_matmuls", R"mlir(
tir.graph @g(%a: tensor<8x6xf32>, %b: tensor<6x10xf32>, %c: tensor<10x4xf32>) -> tensor<8x4xf32> {
  %ab = matmul(%a, %b) : (tensor<8x6xf32>, tensor<6x10xf32>) -> tensor<8x10xf32>
  %abc = matmul(%ab, %c) : (tensor<8x10xf32>, tensor<10x4xf32>) -> tensor<8x4xf32>
  results %abc : tensor<8x4xf32>
})mlir"},
      // The staged operand is scaled by a per-row factor computed in the
      // kernel (the factor's op reads no K: it runs with the prologue).
      {"matmul_prologue_with_row_factor", R"mlir(
tir.graph @g(%x: tensor<6x12xf32>, %r: tensor<6x1xf32>, %w: tensor<12x10xf32>) -> tensor<6x10xf32> {
  %rr = rsqrt %r : tensor<6x1xf32>
  %x1 = mul %x, %rr : (tensor<6x12xf32>, tensor<6x1xf32>) -> tensor<6x12xf32>
  %m = matmul(%x1, %w) : (tensor<6x12xf32>, tensor<12x10xf32>) -> tensor<6x10xf32>
  %o = add %m, %rr : (tensor<6x10xf32>, tensor<6x1xf32>) -> tensor<6x10xf32>
  results %o : tensor<6x10xf32>
})mlir"},
      // Fused q/k/v: one projection viewed as heads, transposed and sliced
      // into q and k (the transposed view is larger than either slice's
      // kernel, so it is written out by a kernel of its own).
      {"fused_qkv_attention_scores", R"mlir(
tir.graph @g(%x: tensor<2x4x16xf32>, %w: tensor<1x16x48xf32>) -> tensor<2x2x4x4xf32> {
  %qkv = matmul(%x, %w) : (tensor<2x4x16xf32>, tensor<1x16x48xf32>) -> tensor<2x4x48xf32>
  %h = reshape %qkv : tensor<2x4x48xf32> -> tensor<2x4x3x2x8xf32>
  %p = transpose %h permutation = [2, 0, 3, 1, 4] : tensor<2x4x3x2x8xf32> -> tensor<3x2x2x4x8xf32>
  %q1 = slice %p starts = [0, 0, 0, 0, 0] limits = [1, 2, 2, 4, 8] strides = [1, 1, 1, 1, 1] : tensor<3x2x2x4x8xf32> -> tensor<1x2x2x4x8xf32>
  %q = reshape %q1 : tensor<1x2x2x4x8xf32> -> tensor<2x2x4x8xf32>
  %k1 = slice %p starts = [1, 0, 0, 0, 0] limits = [2, 2, 2, 4, 8] strides = [1, 1, 1, 1, 1] : tensor<3x2x2x4x8xf32> -> tensor<1x2x2x4x8xf32>
  %k = reshape %k1 : tensor<1x2x2x4x8xf32> -> tensor<2x2x4x8xf32>
  %kt = transpose %k permutation = [0, 1, 3, 2] : tensor<2x2x4x8xf32> -> tensor<2x2x8x4xf32>
  %s = matmul(%q, %kt) : (tensor<2x2x4x8xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x4x4xf32>
  results %s : tensor<2x2x4x4xf32>
})mlir"},
      // RMS norm feeding a SiLU-gated MLP: the normalized rows are an operand
      // of two matmuls (written out once, not stored from a prologue).
      {"rms_norm_gated_mlp", R"mlir(
tir.graph @g(%x: tensor<6x16xf32>, %g: tensor<1x16xf32>, %wg: tensor<16x12xf32>, %wu: tensor<16x12xf32>, %wd: tensor<12x16xf32>) -> tensor<6x16xf32> {
  %sq = mul %x, %x : tensor<6x16xf32>
  %s = reduce(%sq)<dimensions = [1], reduction_mode = <add>> : tensor<6x16xf32> -> tensor<6x1xf32>
  %c = constant dense<6.25e-02> : tensor<1x1xf32>
  %ms = mul %s, %c : (tensor<6x1xf32>, tensor<1x1xf32>) -> tensor<6x1xf32>
  %e = constant dense<1.0e-06> : tensor<1x1xf32>
  %v = add %ms, %e : (tensor<6x1xf32>, tensor<1x1xf32>) -> tensor<6x1xf32>
  %r = rsqrt %v : tensor<6x1xf32>
  %n = mul %x, %r : (tensor<6x16xf32>, tensor<6x1xf32>) -> tensor<6x16xf32>
  %y = mul %n, %g : (tensor<6x16xf32>, tensor<1x16xf32>) -> tensor<6x16xf32>
  %a = matmul(%y, %wg) : (tensor<6x16xf32>, tensor<16x12xf32>) -> tensor<6x12xf32>
  %sa = swish_fwd<beta = 1.0 : f32> %a : tensor<6x12xf32>
  %u = matmul(%y, %wu) : (tensor<6x16xf32>, tensor<16x12xf32>) -> tensor<6x12xf32>
  %h = mul %sa, %u : tensor<6x12xf32>
  %d = matmul(%h, %wd) : (tensor<6x12xf32>, tensor<12x16xf32>) -> tensor<6x16xf32>
  %o = add %x, %d : tensor<6x16xf32>
  results %o : tensor<6x16xf32>
})mlir"},
      // An embedding lookup (torch.nn.functional.embedding): rows of a
      // table by si64 ids of rank 2, scaled as a transformer scales them.
      {"embedding_gather", R"mlir(
tir.graph @g(%w: tensor<50x24xf32>, %ids: tensor<5x3xsi64>) -> tensor<5x3x24xf32> {
  %e = gather %w, %ids axis = 0 : (tensor<50x24xf32>, tensor<5x3xsi64>) -> tensor<5x3x24xf32>
  %c = constant dense<4.0> : tensor<1x1x1xf32>
  %s = mul %e, %c : (tensor<5x3x24xf32>, tensor<1x1x1xf32>) -> tensor<5x3x24xf32>
  results %s : tensor<5x3x24xf32>
})mlir"},
      // index_select along a middle axis of run-time extent (si32 ids,
      // widened in the kernel), reduced over the last dim: a gather in a
      // reduction's rows; and a gather from a computed table (written out
      // by a kernel of its own first).
      {"gather_dynamic_rows_reduced", R"mlir(
tir.graph @g(%x: tensor<3x?x40xbf16>, %ids: tensor<6xsi32>, %t: tensor<9x8xf32>, %j: tensor<4xsi64>) -> (tensor<3x6x1xf32>, tensor<4x8xf32>) {
  %wide = convert %ids : tensor<6xsi32> -> tensor<6xsi64>
  %g = gather %x, %wide axis = 1 : (tensor<3x?x40xbf16>, tensor<6xsi64>) -> tensor<3x6x40xbf16>
  %f = convert %g : tensor<3x6x40xbf16> -> tensor<3x6x40xf32>
  %s = reduce(%f)<dimensions = [2], reduction_mode = <add>> : tensor<3x6x40xf32> -> tensor<3x6x1xf32>
  %tt = exp %t : tensor<9x8xf32>
  %r = gather %tt, %j axis = 0 : (tensor<9x8xf32>, tensor<4xsi64>) -> tensor<4x8xf32>
  results %s, %r : tensor<3x6x1xf32>, tensor<4x8xf32>
})mlir"},
      // Gathered rows as a matmul's A operand (an embedding feeding a
      // projection): the gather runs in the matmul's prologue.
      {"gather_into_matmul", R"mlir(
tir.graph @g(%w: tensor<40x32xbf16>, %ids: tensor<20xsi64>, %p: tensor<32x16xbf16>) -> tensor<20x16xf32> {
  %e = gather %w, %ids axis = 0 : (tensor<40x32xbf16>, tensor<20xsi64>) -> tensor<20x32xbf16>
  %m = matmul(%e, %p) : (tensor<20x32xbf16>, tensor<32x16xbf16>) -> tensor<20x16xf32>
  results %m : tensor<20x16xf32>
})mlir"},
  };
  return *cases;
}

}  // namespace tir::codegen::testing_corpus
