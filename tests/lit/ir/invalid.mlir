// RUN: tir-opt %s --split-input-file --verify-diagnostics

// Tests that operand shapes that do not broadcast name the dimension.
tir.graph @noBroadcast(%a: tensor<4x8xf32>, %b: tensor<4x3xf32>) -> tensor<4x8xf32> {
  // expected-error @below {{operand shapes do not broadcast: dimension 1 is 8 in operand #0 and 3 in operand #1}}
  %r = add %a, %b : (tensor<4x8xf32>, tensor<4x3xf32>) -> tensor<4x8xf32>
  results %r : tensor<4x8xf32>
}

// -----

// Tests that the result of a broadcast must be the merged shape.
tir.graph @wrongMergedResult(%a: tensor<4x1xf32>, %b: tensor<1x8xf32>) -> tensor<4x4xf32> {
  // expected-error @below {{expects result dimension 1 to be 8 (the broadcast of the operands), got 4}}
  %r = mul %a, %b : (tensor<4x1xf32>, tensor<1x8xf32>) -> tensor<4x4xf32>
  results %r : tensor<4x4xf32>
}

// -----

// Tests that float-only math rejects integers.
tir.graph @expOfInt(%a: tensor<4xsi32>) -> tensor<4xsi32> {
  // expected-error @below {{requires a floating point type, got 'si32'}}
  %r = exp %a : tensor<4xsi32>
  results %r : tensor<4xsi32>
}

// -----

// Tests that unknown signature attributes are errors, not dropped.
// expected-error @below {{does not support signature attribute `tir.strides` on argument #0}}
tir.graph @unknownSignatureAttr(%a: tensor<4xf32> {tir.strides = "(1)"}) -> tensor<4xf32> {
  results %a : tensor<4xf32>
}

// -----

// Tests that a stride on a scalar argument is misplaced.
// expected-error @below {{expects tir.stride attribute to be applied to tensor type, but got 'f32' on argument #0}}
tir.graph @strideOnScalar(%a: f32 {tir.stride = "(1)"}) {
  results
}

// -----

// Tests that strides must have one entry per dimension.
// expected-error @below {{expects stride is valid for corresponding shape, but got "(4,1,1)" (3 entries)}}
tir.graph @strideRank(%a: tensor<4x4xf32> {tir.stride = "(4,1,1)"}) {
  results
}

// -----

// Tests that a zero stride on an input dim of run-time extent is refused (a
// static one is a broadcast read).
// expected-error @below {{stride=0 is not allowed in graph input stride attribute on a dynamic dim (dimension 0 of 'tensor<?x4xf32>' in "(0,1)")}}
tir.graph @strideZero(%a: tensor<?x4xf32> {tir.stride = "(0,1)"}) {
  results
}

// -----

// Tests that ranks above 8 exceed tir's limit.
// expected-error @below {{argument #0 has rank 9, above the limit of 8}}
tir.graph @rankLimit(%a: tensor<1x1x1x1x1x1x1x1x1xf32>) {
  results
}

// -----

// Tests that extents above 2^40 exceed tir's limit.
// expected-error @below {{argument #0 dimension 0 has extent 2199023255553, above the limit of 2^40}}
tir.graph @dimLimit(%a: tensor<2199023255553xf32>) {
  results
}

// -----

// Tests that a reduction keeps non-reduced extents exactly.
tir.graph @reduceInherits(%a: tensor<?x8xf32>) -> tensor<4x1xf32> {
  // expected-error @below {{expects output dimension 0 to remain dynamic because the corresponding input dimension is dynamic}}
  %r = reduce(%a)<dimensions = [1], reduction_mode = <add>> : tensor<?x8xf32> -> tensor<4x1xf32>
  results %r : tensor<4x1xf32>
}

// -----

// Tests that an unknown reduction mode is a parse error naming the choices.
tir.graph @badMode(%a: tensor<4x8xf32>) -> tensor<4x1xf32> {
  // expected-error @below {{unknown reduction mode 'sum'; expected add, mul, max, min, amax, avg (or mean), norm1, norm2, mul_no_zeros or customize}}
  %r = reduce(%a)<dimensions = [1], reduction_mode = <sum>> : tensor<4x8xf32> -> tensor<4x1xf32>
  results %r : tensor<4x1xf32>
}

// -----

// Tests that matmul contracting extents must agree.
tir.graph @matmulK(%a: tensor<4x8xf32>, %b: tensor<6x2xf32>) -> tensor<4x2xf32> {
  // expected-error @below {{expects the contracting dimensions of A and B to match, but got 8 and 6}}
  %r = matmul(%a, %b) : (tensor<4x8xf32>, tensor<6x2xf32>) -> tensor<4x2xf32>
  results %r : tensor<4x2xf32>
}

// -----

// Tests that a reduce_ud body may only hold the scalar arith ops tir evaluates.
tir.graph @udBody(%a: tensor<4x8xf32>) -> tensor<4x1xf32> {
  %r = reduce_ud(%a)<dimensions = [1], identity = [0.0 : f32]> (%acc: f32, %v: f32) {
    // expected-error @below {{is not supported in a reduce_ud body; use scalar ops of arith.constant, addf}}
    %x = tir.constant 1.0 : f32
    tir.yield %acc : f32
  } : tensor<4x8xf32> -> tensor<4x1xf32>
  results %r : tensor<4x1xf32>
}

// -----

// Tests that an integer comparison needs an integer predicate.
tir.graph @cmpPredicate(%a: tensor<4xsi8>, %b: tensor<4xsi8>) -> tensor<4xi1> {
  // expected-error @below {{integer operands require an integer predicate (eq, neq, gt, ge, lt, le), got 'olt'}}
  %r = cmp %a olt %b : tensor<4xsi8>
  results %r : tensor<4xi1>
}

// -----

// Tests that signless integers are not tir element types.
// expected-error @below {{expects argument #0 to be a TensorIR ranked tensor, but got 'tensor<4xi32>'}}
tir.graph @signless(%a: tensor<4xi32>) {
  results
}

// -----

// Tests that a graph body holds tir ops only.
tir.graph @foreignOp(%a: f32) -> f32 {
  // expected-error @below {{is not a tir op; a graph body holds tir ops only}}
  %r = arith.addf %a, %a : f32
  results %r : f32
}

// -----

// Tests that a malformed tile_size names the attribute and what it holds.
// expected-error @below {{expects tile_size to be an array<i32: ...> of positive extents, got array<i32: 0, 4>}}
tir.graph @badTile(%a: tensor<4x4xf32>) -> tensor<4x4xf32> attributes {tile_size = array<i32: 0, 4>} {
  results %a : tensor<4x4xf32>
}

// -----

// Tests that tile_candidates must be a list of tiles.
// expected-error @below {{expects tile_candidates[1] to be an array<i32: ...> of positive extents, got "32"}}
tir.graph @badCandidates(%a: tensor<4x4xf32>) -> tensor<4x4xf32> attributes {tile_candidates = [array<i32: 16>, "32"]} {
  results %a : tensor<4x4xf32>
}

// -----

// Tests that reduction_tile_size must be a positive power of two.
// expected-error @below {{expects reduction_tile_size to be a positive power of two, got 96 : i64}}
tir.graph @badReductionTile(%a: tensor<4x4xf32>) -> tensor<4x4xf32> attributes {reduction_tile_size = 96} {
  results %a : tensor<4x4xf32>
}

// -----

// Tests that reduce with the customize mode (which names reduce_ud's
// user-defined combiner) is refused with the way to write it.
tir.graph @customize(%a: tensor<4x8xf32>) -> tensor<4x1xf32> {
  // expected-error @below {{reduction_mode = <customize> names a user-defined combiner, which reduce has none of; write the reduction as reduce_ud with a body}}
  %r = reduce(%a)<dimensions = [1], reduction_mode = <customize>> : tensor<4x8xf32> -> tensor<4x1xf32>
  results %r : tensor<4x1xf32>
}

// -----

// Tests that an unknown stride hint is refused.
// expected-error @below {{expected a hint div=N or iN inside '{}'}}
tir.graph @badHint(%a: tensor<?x4xf32> {tir.stride = "(?{max=8},1)"}) {
  results
}

// -----

// Tests that hints go on dynamic strides only.
// expected-error @below {{expected ',' or ')'}}
tir.graph @hintOnStatic(%a: tensor<4x4xf32> {tir.stride = "(4{div=4},1)"}) {
  results
}

// -----

// Tests that a reduce_ud body's signless integers must have the tensor's width.
tir.graph @udWidth(%a: tensor<4x8xui32>) -> tensor<4x1xui32> {
  // expected-error @below {{expects body argument 0 to have type 'ui32' (or i32), got 'i16'}}
  %r = reduce_ud(%a)<dimensions = [1], identity = [0 : ui32]> (%acc: i16, %v: i16) {
    tir.yield %acc : i16
  } : tensor<4x8xui32> -> tensor<4x1xui32>
  results %r : tensor<4x1xui32>
}

// -----

// Tests that a dimension of run-time extent is only kept whole by a slice.
tir.graph @sliceInsideDynamic(%x: tensor<?x24xf32>) -> tensor<?x8xf32> {
  // expected-error @below {{dimension 0 of run-time extent is kept whole only (start 0, limit 0, stride 1), got start=1, limit=0, stride=1}}
  %k = slice %x starts = [1, 0] limits = [0, 8] strides = [1, 1] : tensor<?x24xf32> -> tensor<?x8xf32>
  results %k : tensor<?x8xf32>
}

// -----

// Tests that gather indices must be si32 or si64.
tir.graph @gatherFloatIndices(%w: tensor<10x4xf32>, %i: tensor<3xf32>) -> tensor<3x4xf32> {
  // expected-error @below {{requires indices of si32 or si64, got 'f32'}}
  %r = gather %w, %i axis = 0 : (tensor<10x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  results %r : tensor<3x4xf32>
}

// -----

// Tests that unsigned gather indices are refused too (a negative index is an
// error a kernel reports, and an unsigned type cannot say it).
tir.graph @gatherUnsignedIndices(%w: tensor<10x4xf32>, %i: tensor<3xui32>) -> tensor<3x4xf32> {
  // expected-error @below {{requires indices of si32 or si64, got 'ui32'}}
  %r = gather %w, %i axis = 0 : (tensor<10x4xf32>, tensor<3xui32>) -> tensor<3x4xf32>
  results %r : tensor<3x4xf32>
}

// -----

// Tests that the gather axis must be a dimension of the data.
tir.graph @gatherAxisOutOfRange(%w: tensor<10x4xf32>, %i: tensor<3xsi64>) -> tensor<10x3xf32> {
  // expected-error @below {{axis 2 is out of bounds for tensor rank 2}}
  %r = gather %w, %i axis = 2 : (tensor<10x4xf32>, tensor<3xsi64>) -> tensor<10x3xf32>
  results %r : tensor<10x3xf32>
}

// -----

// Tests that a negative gather axis is refused (no counting from the end).
tir.graph @gatherNegativeAxis(%w: tensor<10x4xf32>, %i: tensor<3xsi64>) -> tensor<10x3xf32> {
  // expected-error @below {{axis -1 is out of bounds for tensor rank 2}}
  %r = gather %w, %i axis = -1 : (tensor<10x4xf32>, tensor<3xsi64>) -> tensor<10x3xf32>
  results %r : tensor<10x3xf32>
}

// -----

// Tests that the gather result has rank(data) - 1 + rank(indices) dims.
tir.graph @gatherWrongRank(%w: tensor<10x4xf32>, %i: tensor<2x3xsi64>) -> tensor<6x4xf32> {
  // expected-error @below {{requires a result of rank 3 (data rank - 1 + indices rank), got 2}}
  %r = gather %w, %i axis = 0 : (tensor<10x4xf32>, tensor<2x3xsi64>) -> tensor<6x4xf32>
  results %r : tensor<6x4xf32>
}

// -----

// Tests that the gather result's shape is data.shape[:axis] + indices.shape +
// data.shape[axis+1:], dynamic dims included.
tir.graph @gatherWrongShape(%w: tensor<10x?xf32>, %i: tensor<3xsi64>) -> tensor<3x4xf32> {
  // expected-error @below {{result dimension 1 (size 4) does not match ? (data.shape[:axis] + indices.shape + data.shape[axis+1:])}}
  %r = gather %w, %i axis = 0 : (tensor<10x?xf32>, tensor<3xsi64>) -> tensor<3x4xf32>
  results %r : tensor<3x4xf32>
}

// -----

// Tests that the gather result keeps the data's element type.
tir.graph @gatherWrongElementType(%w: tensor<10x4xf32>, %i: tensor<3xsi64>) -> tensor<3x4xf16> {
  // expected-error @below {{requires the result element type to equal the data's, got 'f16' and 'f32'}}
  %r = gather %w, %i axis = 0 : (tensor<10x4xf32>, tensor<3xsi64>) -> tensor<3x4xf16>
  results %r : tensor<3x4xf16>
}

// -----

// Tests that gathering along an empty axis is refused: no index is valid.
tir.graph @gatherEmptyAxis(%w: tensor<0x4xf32>, %i: tensor<3xsi64>) -> tensor<3x4xf32> {
  // expected-error @below {{gathers along axis 0 of extent 0, where no index is valid}}
  %r = gather %w, %i axis = 0 : (tensor<0x4xf32>, tensor<3xsi64>) -> tensor<3x4xf32>
  results %r : tensor<3x4xf32>
}

// -----

// Tests that gather data must have a dim to index.
tir.graph @gatherScalarData(%w: tensor<f32>, %i: tensor<3xsi64>) -> tensor<3xf32> {
  // expected-error @below {{requires data of rank at least 1, got 'tensor<f32>'}}
  %r = gather %w, %i axis = 0 : (tensor<f32>, tensor<3xsi64>) -> tensor<3xf32>
  results %r : tensor<3xf32>
}
