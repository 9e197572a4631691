// RUN: tir-opt %s --split-input-file --tir-partition --tir-propagate-layouts --mlir-print-local-scope | FileCheck %s

// Tests that a transposed input and a broadcast bias get their maps from the
// kernel's iteration space.
// CHECK-LABEL: tir.graph @pw_k0
// CHECK-SAME: tensor<64x32xf32> {tir.iter_space_map = affine_map<(d0, d1) -> (d1, d0)>}
// CHECK-SAME: tensor<1x64xf32> {tir.iter_space_map = affine_map<(d0, d1) -> (0, d1)>}
// CHECK: transpose {{.*}}tir.access = affine_map<(d0, d1) -> (d0, d1)>
tir.graph @pw(%x: tensor<32x64xf32>, %xt: tensor<64x32xf32>, %b: tensor<1x64xf32>) -> tensor<32x64xf32> {
  %t = transpose %xt permutation = [1, 0] : tensor<64x32xf32> -> tensor<32x64xf32>
  %a = add %x, %b : (tensor<32x64xf32>, tensor<1x64xf32>) -> tensor<32x64xf32>
  %m = mul %a, %t : tensor<32x64xf32>
  results %m : tensor<32x64xf32>
}

// -----

// Tests that slices and reshapes map through start/stride and delinearization.
// CHECK-LABEL: tir.graph @views_k0
// CHECK-SAME: tensor<8x8xf32> {tir.iter_space_map = affine_map<(d0, d1) -> (d0 * 2 + 1, d1 + 2)>}
// CHECK-SAME: tensor<2x16xf32> {tir.iter_space_map = affine_map<(d0, d1) -> (((d0 * 4 + d1) floordiv 16) mod 2, (d0 * 4 + d1) mod 16)>}
tir.graph @views(%x: tensor<8x8xf32>, %y: tensor<2x16xf32>) -> tensor<3x4xf32> {
  %s = slice %x starts = [1, 2] limits = [7, 6] strides = [2, 1] : tensor<8x8xf32> -> tensor<3x4xf32>
  %e = exp %y : tensor<2x16xf32>
  %r = reshape %e : tensor<2x16xf32> -> tensor<8x4xf32>
  %w = slice %r starts = [0, 0] limits = [3, 4] strides = [1, 1] : tensor<8x4xf32> -> tensor<3x4xf32>
  %o = add %s, %w : tensor<3x4xf32>
  results %o : tensor<3x4xf32>
}

// -----

// Tests that matmul operands are reached through (batch, m, k) and (batch, k, n),
// with broadcast batch dims at 0.
// CHECK-LABEL: tir.graph @mm_k0
// CHECK-SAME: tensor<2x128x64xbf16> {tir.iter_space_map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>}
// CHECK-SAME: tensor<1x64x256xbf16> {tir.iter_space_map = affine_map<(d0, d1, d2, d3) -> (0, d3, d2)>}
tir.graph @mm(%x: tensor<2x128x64xbf16>, %w: tensor<1x64x256xbf16>) -> tensor<2x128x256xf32> {
  %m = matmul(%x, %w) : (tensor<2x128x64xbf16>, tensor<1x64x256xbf16>) -> tensor<2x128x256xf32>
  results %m : tensor<2x128x256xf32>
}

// -----

// Tests the conflict rule: a pointwise value needed both directly and
// transposed is recomputed once per map.
// CHECK-LABEL: tir.graph @conflict_k0
// CHECK: exp %arg0 {tir.access = affine_map<(d0, d1) -> (d0, d1)>}
// CHECK: %[[T:.*]] = exp %arg0 {tir.access = affine_map<(d0, d1) -> (d1, d0)>}
// CHECK: transpose %[[T]]
tir.graph @conflict(%y: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %x = exp %y : tensor<16x16xf32>
  %t = transpose %x permutation = [1, 0] : tensor<16x16xf32> -> tensor<16x16xf32>
  %z = add %x, %t : tensor<16x16xf32>
  results %z : tensor<16x16xf32>
}

// -----

// Tests that reduced values live at 0 along the reduced dim of a row kernel.
// CHECK-LABEL: tir.graph @rownorm_k0
// CHECK: reduce({{.*}}tir.access = affine_map<(d0, d1) -> (d0, 0)>
// CHECK: div {{.*}}tir.access = affine_map<(d0, d1) -> (d0, d1)>
tir.graph @rownorm(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %s = reduce(%x)<dimensions = [1], reduction_mode = <add>> : tensor<8x64xf32> -> tensor<8x1xf32>
  %y = div %x, %s : (tensor<8x64xf32>, tensor<8x1xf32>) -> tensor<8x64xf32>
  results %y : tensor<8x64xf32>
}

// -----

// Tests that an output that only drops a unit dim of a dynamic iteration
// domain reads the domain's own dims (it once went through the domain's
// linear index, with the dynamic size's placeholder as a stride and a
// modulus: `mod -9223372036854775808`).
// CHECK-LABEL: tir.graph @unit_k0
// CHECK-SAME: tir.iteration_domain = array<i64: 2, 1, -1, 8>
// CHECK: exp {{.*}}tir.access = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-NOT: mod -
tir.graph @unit(%x: tensor<2x?x8xf32>, %d: index) -> (tensor<2x?x8xf32>, tensor<2x1x?x8xf32>) {
  %e = exp %x : tensor<2x?x8xf32>
  %r = reshape %e dynamic_dims(%d) : tensor<2x?x8xf32> -> tensor<2x1x?x8xf32>
  results %e, %r : tensor<2x?x8xf32>, tensor<2x1x?x8xf32>
}
