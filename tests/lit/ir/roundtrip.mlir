// RUN: tir-opt %s --split-input-file | FileCheck %s
// RUN: tir-opt %s --split-input-file | tir-opt --split-input-file | FileCheck %s
// RUN: tir-opt %s --split-input-file --mlir-print-op-generic | tir-opt --split-input-file | FileCheck %s

// Tests that pointwise ops print the short type when all operands share it,
// and the functional type when a broadcast makes them differ.
// CHECK-LABEL: tir.graph @pointwise
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<1x8xf32>)
// CHECK: %[[ADD:.*]] = add %[[A]], %[[B]] : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[MUL:.*]] = mul %[[ADD]], %[[A]] : tensor<4x8xf32>
// CHECK: %[[SP:.*]] = softplus_fwd<beta = 2.000000e+00 : f64> %[[MUL]] : tensor<4x8xf32>
// CHECK: %[[CMP:.*]] = cmp %[[SP]] olt %[[A]] : tensor<4x8xf32>
// CHECK: %[[SEL:.*]] = binary_select %[[CMP]], %[[SP]], %[[A]] : tensor<4x8xf32>
// CHECK: results %[[SEL]] : tensor<4x8xf32>
tir.graph @pointwise(%a: tensor<4x8xf32>, %b: tensor<1x8xf32>) -> tensor<4x8xf32> {
  %add = add %a, %b : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  %mul = mul %add, %a : tensor<4x8xf32>
  %sp = softplus_fwd<beta = 2.0> %mul : tensor<4x8xf32>
  %cmp = cmp %sp olt %a : tensor<4x8xf32>
  %sel = binary_select %cmp, %sp, %a : tensor<4x8xf32>
  results %sel : tensor<4x8xf32>
}

// -----

// Tests that signature attributes and dynamic extents survive printing.
// CHECK-LABEL: tir.graph @signature
// CHECK-SAME: tensor<?x64xbf16> {tir.alignment = 16 : i64, tir.stride = "(?,1)"}
// CHECK-SAME: -> (tensor<?x1xbf16> {tir.stride = "(1,1)"})
// CHECK: reduce(%{{.*}})<dimensions = [1], reduction_mode = <max>> : tensor<?x64xbf16> -> tensor<?x1xbf16>
tir.graph @signature(%x: tensor<?x64xbf16> {tir.stride = "(?,1)", tir.alignment = 16})
    -> (tensor<?x1xbf16> {tir.stride = "(1,1)"}) {
  %m = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<?x64xbf16> -> tensor<?x1xbf16>
  results %m : tensor<?x1xbf16>
}

// -----

// Tests that matmul with an accumulator and mixed precision round-trips.
// CHECK-LABEL: tir.graph @matmul
// CHECK: matmul(%{{.*}}, %{{.*}}) accum(%{{.*}} : tensor<2x16x8xf32>) : (tensor<2x16x32xf16>, tensor<1x32x8xf16>) -> tensor<2x16x8xf32>
tir.graph @matmul(%a: tensor<2x16x32xf16>, %b: tensor<1x32x8xf16>, %c: tensor<2x16x8xf32>) -> tensor<2x16x8xf32> {
  %r = matmul(%a, %b) accum(%c : tensor<2x16x8xf32>) : (tensor<2x16x32xf16>, tensor<1x32x8xf16>) -> tensor<2x16x8xf32>
  results %r : tensor<2x16x8xf32>
}

// -----

// Tests that views, constants and dynamic_dims operands round-trip.
// CHECK-LABEL: tir.graph @views
// CHECK: %[[N:.*]] = dim %{{.*}} dimension = 0 : tensor<?x4xf32>
// CHECK: splat %{{.*}} dynamic_dims(%[[N]]) : tensor<?x4xf32>
// CHECK: transpose %{{.*}} permutation = [1, 0] : tensor<?x4xf32> -> tensor<4x?xf32>
// CHECK: slice %{{.*}} starts = [0, 1] limits = [4, 3] strides = [2, 1] : tensor<4x4xf32> -> tensor<2x2xf32>
// CHECK: concatenate %{{.*}}, %{{.*}} dimension = 0 : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
// CHECK: constant dense<[1, 2, 3]> : tensor<3xsi32>
// CHECK: iota dimension = 0 : tensor<3xsi32>
tir.graph @views(%x: tensor<?x4xf32>, %v: f32, %s: tensor<4x4xf32>)
    -> (tensor<?x4xf32>, tensor<4x?xf32>, tensor<4x2xf32>, tensor<3xsi32>) {
  %n = dim %x dimension = 0 : tensor<?x4xf32>
  %f = splat %v dynamic_dims(%n) : tensor<?x4xf32>
  %t = transpose %x permutation = [1, 0] : tensor<?x4xf32> -> tensor<4x?xf32>
  %w = slice %s starts = [0, 1] limits = [4, 3] strides = [2, 1] : tensor<4x4xf32> -> tensor<2x2xf32>
  %c = concatenate %w, %w dimension = 0 : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
  %k = constant dense<[1, 2, 3]> : tensor<3xsi32>
  %i = iota dimension = 0 : tensor<3xsi32>
  %sum = add %k, %i : tensor<3xsi32>
  results %f, %t, %c, %sum : tensor<?x4xf32>, tensor<4x?xf32>, tensor<4x2xf32>, tensor<3xsi32>
}

// -----

// Tests that reduce_ud keeps its region, arguments and identities.
// CHECK-LABEL: tir.graph @welford_like
// CHECK: %{{.*}}:2 = reduce_ud(%{{.*}}, %{{.*}})<dimensions = [1], identity = [0.000000e+00 : f32, 1.000000e+00 : f32]> (%[[P0:.*]]: f32, %[[P1:.*]]: f32, %[[C0:.*]]: f32, %[[C1:.*]]: f32) {
// CHECK: arith.addf %[[P0]], %[[C0]] : f32
// CHECK: arith.mulf %[[P1]], %[[C1]] : f32
// CHECK: yield
tir.graph @welford_like(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x1xf32>, tensor<4x1xf32>) {
  %r:2 = reduce_ud(%x, %y)<dimensions = [1], identity = [0.0 : f32, 1.0 : f32]> (%p0: f32, %p1: f32, %c0: f32, %c1: f32) {
    %s = arith.addf %p0, %c0 : f32
    %m = arith.mulf %p1, %c1 : f32
    tir.yield %s, %m : f32, f32
  } : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x1xf32>, tensor<4x1xf32>
  results %r#0, %r#1 : tensor<4x1xf32>, tensor<4x1xf32>
}

// -----

// Tests that a slice keeps a dimension of run-time extent whole (start 0,
// limit 0 for the extent, stride 1) while it slices another: a split of a
// tensor whose leading dims are dynamic.
// CHECK-LABEL: tir.graph @sliceOfDynamic
// CHECK: slice %{{.*}} starts = [0, 0, 8] limits = [2, 0, 16] strides = [1, 1, 1] : tensor<2x?x24xf32> -> tensor<2x?x8xf32>
tir.graph @sliceOfDynamic(%x: tensor<2x?x24xf32>) -> tensor<2x?x8xf32> {
  %k = slice %x starts = [0, 0, 8] limits = [2, 0, 16] strides = [1, 1, 1] : tensor<2x?x24xf32> -> tensor<2x?x8xf32>
  results %k : tensor<2x?x8xf32>
}

// -----

// Tests that gather round-trips with its axis, rank-0 and dynamic indices.
// CHECK-LABEL: tir.graph @gathers
// CHECK: gather %{{.*}}, %{{.*}} axis = 0 : (tensor<1000x64xf32>, tensor<37xsi64>) -> tensor<37x64xf32>
// CHECK: gather %{{.*}}, %{{.*}} axis = 1 : (tensor<?x8x3xbf16>, tensor<?x2xsi32>) -> tensor<?x?x2x3xbf16>
// CHECK: gather %{{.*}}, %{{.*}} axis = 0 : (tensor<1000x64xf32>, tensor<si64>) -> tensor<64xf32>
tir.graph @gathers(%w: tensor<1000x64xf32>, %ids: tensor<37xsi64>, %x: tensor<?x8x3xbf16>, %j: tensor<?x2xsi32>,
                   %one: tensor<si64>)
    -> (tensor<37x64xf32>, tensor<?x?x2x3xbf16>, tensor<64xf32>) {
  %e = gather %w, %ids axis = 0 : (tensor<1000x64xf32>, tensor<37xsi64>) -> tensor<37x64xf32>
  %s = gather %x, %j axis = 1 : (tensor<?x8x3xbf16>, tensor<?x2xsi32>) -> tensor<?x?x2x3xbf16>
  %r = gather %w, %one axis = 0 : (tensor<1000x64xf32>, tensor<si64>) -> tensor<64xf32>
  results %e, %s, %r : tensor<37x64xf32>, tensor<?x?x2x3xbf16>, tensor<64xf32>
}
