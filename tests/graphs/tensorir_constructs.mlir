// Graphs in NVIDIA TensorIR's textual form using the constructs TensorIR's
// pass and conversion tests write: reduction modes avg / mul_no_zeros,
// reduce_ud bodies in upstream arith spellings over signless integers, the
// graph's own tile, alignment and stride divisibility hints, stride 0,
// analysis attributes written back by TensorIR's passes, 8-bit floats.
// Proto round trip, fingerprints and the interpreter run over every graph
// here (compiler/conversion, compiler/fingerprint, compiler/reference).

#src = #nv_tensor_ir.tensor_source<0, 0, "(?,?):(?{div=8},1)", [0, 1, 2]>

nv_tensor_ir.graph @reductions(%x: tensor<4x16xf32>, %i: tensor<4x16xsi32>)
    -> (tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xsi32>)
    attributes {tile_size = array<i32: 2>, reduction_tile_size = 16 : i64} {
  %a = reduce(%x) <dimensions = [1], reduction_mode = <avg>> : tensor<4x16xf32> -> tensor<4x1xf32>
  %m = reduce(%x) <dimensions = [1], reduction_mode = <mul_no_zeros>> : tensor<4x16xf32> -> tensor<4x1xf32>
  %u = reduce_ud(%i) <dimensions = [1], identity = [-2147483648 : si32]> (%acc: i32, %val: i32) {
    %0 = arith.maxsi %acc, %val : i32
    %1 = arith.cmpi sgt, %0, %acc : i32
    %2 = arith.select %1, %0, %acc : i32
    nv_tensor_ir.yield %2 : i32
  } : tensor<4x16xsi32> -> tensor<4x1xsi32>
  results %a, %m, %u : tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xsi32>
}

nv_tensor_ir.graph @float_body(%x: tensor<4x8xf32>) -> tensor<4x1xf32>
    attributes {tile_candidates = [array<i32: 4>, array<i32: 2>]} {
  %r = reduce_ud(%x) <dimensions = [1], identity = [0x7F800000 : f32]> (%acc: f32, %val: f32) {
    %0 = arith.minimumf %acc, %val : f32
    %1 = arith.maximumf %0, %acc : f32
    %2 = arith.minimumf %0, %1 : f32
    nv_tensor_ir.yield %2 : f32
  } : tensor<4x8xf32> -> tensor<4x1xf32>
  results %r : tensor<4x1xf32>
}

nv_tensor_ir.graph @layouts(%in: tensor<?x?xf32> {nv_tensor_ir.stride = "(?{div=8},1)", nv_tensor_ir.alignment = 128,
                                                    nv_tensor_ir.iter_space_ids = array<i32: 0>,
                                                    nv_tensor_ir.iter_space_dim_domains = #nv_tensor_ir<iter_space_dim_domains[undef, undef]>},
                            %row: tensor<4x8xf32> {nv_tensor_ir.stride = "(0,1)", nv_tensor_ir.cost = 3 : i32, nv_tensor_ir.allow_tma = false})
    -> (tensor<?x?xf32> {nv_tensor_ir.alignment = 16}, tensor<4x8xf32> {nv_tensor_ir.stride = "(0,1)"}) {
  %r = relu_fwd %in {layout = #src, nv_tensor_ir.iter_space_id = 0 : i32,
                     nv_tensor_ir.iter_space_map = affine_map<(d0, d1) -> (d0, d1)>} : tensor<?x?xf32>
  %e = exp %row {layout = #nv_tensor_ir.concat_source<dim = 0, #nv_tensor_ir.tensor_source<1, 0, "(4,8):(0,1)">, [1]>} : tensor<4x8xf32>
  results %r, %e attributes {iteration_space = #nv_tensor_ir.reduction_source<"(4,1,(8)):(8,0,(1))", #nv_tensor_ir.tensor_source<1, 0, "(4,8):(8,1)">>} : tensor<?x?xf32>, tensor<4x8xf32>
}

nv_tensor_ir.graph @float8(%x: tensor<8x8xf32>, %y: tensor<8x8xf8E5M2>) -> (tensor<8x8xf8E4M3FN>, tensor<8x8xf32>, tensor<8x8xi1>) {
  %a = convert %x : tensor<8x8xf32> -> tensor<8x8xf8E4M3FN>
  %b = convert %y : tensor<8x8xf8E5M2> -> tensor<8x8xf32>
  %c = convert %x : tensor<8x8xf32> -> tensor<8x8xi1>
  results %a, %b, %c : tensor<8x8xf8E4M3FN>, tensor<8x8xf32>, tensor<8x8xi1>
}

nv_tensor_ir.graph @matmul_tile(%a: tensor<32x64xf16>, %b: tensor<64x16xf16>) -> tensor<32x16xf32>
    attributes {tile_size = array<i32: 32, 16>} {
  %c = matmul(%a, %b) {layout = #nv_tensor_ir.matmul_source<"(32,16,64):(1024,64,1)", 1, 32, 16, 64, #nv_tensor_ir.tensor_source<0, 0, "(32,64):(64,1)">, #nv_tensor_ir.tensor_source<1, 0, "(64,16):(16,1)">>} : (tensor<32x64xf16>, tensor<64x16xf16>) -> tensor<32x16xf32>
  results %c : tensor<32x16xf32>
}
