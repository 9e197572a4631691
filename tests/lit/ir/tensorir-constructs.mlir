// RUN: tir-opt %s --split-input-file | FileCheck %s
// RUN: tir-opt %s --split-input-file | tir-opt --split-input-file | FileCheck %s
// RUN: tir-opt %s --split-input-file --mlir-print-op-generic | tir-opt --split-input-file | FileCheck %s

// Tests that TensorIR's reduction modes parse: avg (mean is its alias and
// prints as avg), mul_no_zeros.
// CHECK-LABEL: tir.graph @reductionModes
// CHECK: reduction_mode = <avg>
// CHECK: reduction_mode = <avg>
// CHECK: reduction_mode = <mul_no_zeros>
nv_tensor_ir.graph @reductionModes(%x: tensor<4x16xf32>) -> (tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>) {
  %a = reduce(%x) <dimensions = [1], reduction_mode = <avg>> : tensor<4x16xf32> -> tensor<4x1xf32>
  %m = reduce(%x) <dimensions = [1], reduction_mode = <mean>> : tensor<4x16xf32> -> tensor<4x1xf32>
  %p = reduce(%x) <dimensions = [1], reduction_mode = <mul_no_zeros>> : tensor<4x16xf32> -> tensor<4x1xf32>
  results %a, %m, %p : tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>
}

// -----

// Tests that reduce_ud bodies written with upstream arith spellings parse
// (maximumf / minimumf are MLIR 16's maxf / minf), with signless integers
// standing for an unsigned tensor and its identity typed like the tensor.
// CHECK-LABEL: tir.graph @upstreamArith
// CHECK: identity = [0xFF800000 : f32]
// CHECK: arith.maxf
// CHECK: arith.minf
// CHECK: identity = [4294967295 : ui32]> (%{{.*}}: i32, %{{.*}}: i32)
// CHECK: arith.minui
// CHECK: arith.cmpi ult
// CHECK: arith.select
nv_tensor_ir.graph @upstreamArith(%x: tensor<4x8xf32>, %u: tensor<4x8xui32>) -> (tensor<4x1xf32>, tensor<4x1xui32>) {
  %f = reduce_ud(%x) <dimensions = [1], identity = [0xFF800000 : f32]> (%acc: f32, %val: f32) {
    %0 = arith.maximumf %acc, %val : f32
    %1 = arith.minimumf %0, %acc : f32
    nv_tensor_ir.yield %0 : f32
  } : tensor<4x8xf32> -> tensor<4x1xf32>
  %i = reduce_ud(%u) <dimensions = [1], identity = [4294967295 : ui32]> (%acc: i32, %val: i32) {
    %0 = arith.minui %acc, %val : i32
    %1 = arith.cmpi ult, %0, %acc : i32
    %2 = arith.select %1, %0, %acc : i32
    nv_tensor_ir.yield %2 : i32
  } : tensor<4x8xui32> -> tensor<4x1xui32>
  results %f, %i : tensor<4x1xf32>, tensor<4x1xui32>
}

// -----

// Tests that the graph's own tile is kept as TensorIR writes it.
// CHECK-LABEL: tir.graph @tiles
// CHECK-SAME: attributes {reduction_tile_size = 128 : i64, tile_candidates = [array<i32: 64>, array<i32: 32>], tile_size = array<i32: 16>}
nv_tensor_ir.graph @tiles(%x: tensor<64x256xf32>) -> tensor<64x1xf32>
    attributes {tile_size = array<i32: 16>, reduction_tile_size = 128 : i64, tile_candidates = [array<i32: 64>, array<i32: 32>]} {
  %s = reduce(%x) <dimensions = [1], reduction_mode = <add>> : tensor<64x256xf32> -> tensor<64x1xf32>
  results %s : tensor<64x1xf32>
}

// -----

// Tests that alignment, stride divisibility hints and stride 0 are kept.
// CHECK-LABEL: tir.graph @layoutPromises
// CHECK-SAME: tensor<?x?xf32> {tir.alignment = 128 : i64, tir.stride = "(? { div = 8 }, 1)"}
// CHECK-SAME: tensor<4x8xf32> {tir.stride = "(0,1)"}
// CHECK-SAME: -> (tensor<?x?xf32> {tir.alignment = 16 : i64, tir.stride = "(?{i64 div=4},1)"}, tensor<4x8xf32> {tir.stride = "(1,0)"})
nv_tensor_ir.graph @layoutPromises(%in: tensor<?x?xf32> {nv_tensor_ir.stride = "(? { div = 8 }, 1)", nv_tensor_ir.alignment = 128},
                                   %row: tensor<4x8xf32> {nv_tensor_ir.stride = "(0,1)"})
    -> (tensor<?x?xf32> {nv_tensor_ir.alignment = 16, nv_tensor_ir.stride = "(?{i64 div=4},1)"}, tensor<4x8xf32> {nv_tensor_ir.stride = "(1,0)"}) {
  %r = relu_fwd %in : tensor<?x?xf32>
  %e = exp %row : tensor<4x8xf32>
  results %r, %e : tensor<?x?xf32>, tensor<4x8xf32>
}

// -----

// Tests that the analysis attributes TensorIR's passes write back are kept
// (and ignored for compilation): on arguments, ops and the results.
// CHECK-LABEL: tir.graph @analysis
// CHECK-SAME: tir.iter_space_dim_domains = #tir<iter_space_dim_domains[undef, def]>
// CHECK-SAME: tir.iter_space_ids = array<i32: 0>
// CHECK: convert %{{.*}} {layout = #tir.composite_source<#tir.tensor_source<0, 0, "(?,16):(16,1)", [0]>>, tir.iter_space_id = 0 : i32}
// CHECK: results %{{.*}} attributes {iteration_space = #tir.tensor_source<0, 0, "(128):(1)">}
nv_tensor_ir.graph @analysis(%x: tensor<8x16xf16> {nv_tensor_ir.iter_space_dim_domains = #nv_tensor_ir<iter_space_dim_domains[undef, def]>,
                                                  nv_tensor_ir.iter_space_ids = array<i32: 0>, nv_tensor_ir.cost = -1 : i32})
    -> tensor<8x16xf32> {
  %f = convert %x {nv_tensor_ir.iter_space_id = 0 : i32,
                   layout = #nv_tensor_ir.composite_source<#nv_tensor_ir.tensor_source<0, 0, "(?,16):(16,1)", [0]>>}
      : tensor<8x16xf16> -> tensor<8x16xf32>
  results %f attributes {iteration_space = #nv_tensor_ir.tensor_source<0, 0, "(128):(1)">} : tensor<8x16xf32>
}

// -----

// Tests that 8-bit floats convert to and from other types.
// CHECK-LABEL: tir.graph @float8
// CHECK: convert %{{.*}} : tensor<8xf32> -> tensor<8xf8E4M3FN>
// CHECK: convert %{{.*}} : tensor<8xf8E4M3FN> -> tensor<8xf8E5M2>
// CHECK: convert %{{.*}} : tensor<8xf8E5M2> -> tensor<8xbf16>
nv_tensor_ir.graph @float8(%x: tensor<8xf32>) -> tensor<8xbf16> {
  %a = convert %x : tensor<8xf32> -> tensor<8xf8E4M3FN>
  %b = convert %a : tensor<8xf8E4M3FN> -> tensor<8xf8E5M2>
  %c = convert %b : tensor<8xf8E5M2> -> tensor<8xbf16>
  results %c : tensor<8xbf16>
}
