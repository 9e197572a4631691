// Every tir op kind at least once; used by conversion, fingerprint and
// interpreter tests. Each graph is small and has concrete values when run.

tir.graph @pointwise(%a: tensor<2x3xf32>, %b: tensor<1x3xf32>, %i: tensor<2x3xsi32>,
                     %j: tensor<2x3xsi32>, %p: tensor<2x3xi1>)
    -> (tensor<2x3xf32>, tensor<2x3xsi32>, tensor<2x3xi1>, tensor<2x3xf32>) {
  %add = add %a, %b : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
  %sub = sub %add, %a : tensor<2x3xf32>
  %mul = mul %sub, %a : tensor<2x3xf32>
  %div = div %mul, %a : tensor<2x3xf32>
  %max = max %div, %a : tensor<2x3xf32>
  %min = min %max, %a : tensor<2x3xf32>
  %mod = mod %min, %a : tensor<2x3xf32>
  %rem = rem %mod, %a : tensor<2x3xf32>
  %pow = pow %rem, %a : tensor<2x3xf32>
  %powi = pow %pow, %i : (tensor<2x3xf32>, tensor<2x3xsi32>) -> tensor<2x3xf32>
  %atan2 = atan2 %powi, %a : tensor<2x3xf32>
  %sq = add_square %atan2, %a : tensor<2x3xf32>
  %rb = relu_bwd %sq, %a : tensor<2x3xf32>
  %sb = sigmoid_bwd %rb, %a : tensor<2x3xf32>
  %tb = tanh_bwd %sb, %a : tensor<2x3xf32>
  %gb = gelu_bwd %tb, %a : tensor<2x3xf32>
  %gtb = gelu_approx_tanh_bwd %gb, %a : tensor<2x3xf32>
  %spb = softplus_bwd<beta = 2.0 : f32> %gtb, %a : tensor<2x3xf32>
  %swb = swish_bwd<beta = 1.5 : f32> %spb, %a : tensor<2x3xf32>
  %eb = elu_bwd<beta = 0.5 : f32> %swb, %a : tensor<2x3xf32>
  %abs = abs %eb : tensor<2x3xf32>
  %ceil = ceil %abs : tensor<2x3xf32>
  %floor = floor %ceil : tensor<2x3xf32>
  %neg = neg %floor : tensor<2x3xf32>
  %sqrt = sqrt %abs : tensor<2x3xf32>
  %rsqrt = rsqrt %sqrt : tensor<2x3xf32>
  %exp = exp %rsqrt : tensor<2x3xf32>
  %log = log %exp : tensor<2x3xf32>
  %sin = sin %log : tensor<2x3xf32>
  %cos = cos %sin : tensor<2x3xf32>
  %tan = tan %cos : tensor<2x3xf32>
  %erf = erf %tan : tensor<2x3xf32>
  %rcp = reciprocal %erf : tensor<2x3xf32>
  %relu = relu_fwd %rcp : tensor<2x3xf32>
  %sig = sigmoid_fwd %relu : tensor<2x3xf32>
  %tanh = tanh_fwd %sig : tensor<2x3xf32>
  %gelu = gelu_fwd %tanh : tensor<2x3xf32>
  %gelut = gelu_approx_tanh_fwd %gelu : tensor<2x3xf32>
  %sp = softplus_fwd<beta = 1.0 : f32> %gelut : tensor<2x3xf32>
  %sw = swish_fwd<beta = 1.0 : f32> %sp : tensor<2x3xf32>
  %elu = elu_fwd<beta = 1.0 : f32> %sw : tensor<2x3xf32>
  %iabs = abs %i : tensor<2x3xsi32>
  %iadd = add %iabs, %j : tensor<2x3xsi32>
  %cmp = cmp %elu olt %a : tensor<2x3xf32>
  %icmp = cmp %i ge %j : tensor<2x3xsi32>
  %and = and %cmp, %icmp : tensor<2x3xi1>
  %or = or %and, %p : tensor<2x3xi1>
  %not = not %or : tensor<2x3xi1>
  %sel = binary_select %not, %elu, %a : tensor<2x3xf32>
  results %sel, %iadd, %not, %neg : tensor<2x3xf32>, tensor<2x3xsi32>, tensor<2x3xi1>, tensor<2x3xf32>
}

tir.graph @data(%x: tensor<2x3xf32> {tir.stride = "(1,2)", tir.alignment = 16 : i64},
                %v: f32, %n: index)
    -> (tensor<3x2xf64> {tir.stride = "(2,1)"}, tensor<2x1xf32>, tensor<4x3xf32>, tensor<6xf32>,
        tensor<?x3xf32>, tensor<2x3xsi32>, tensor<2x2xsi32>, tensor<1x2xf32>, index) {
  %t = transpose %x permutation = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  %c = convert %t : tensor<3x2xf32> -> tensor<3x2xf64>
  %s = slice %x starts = [0, 1] limits = [2, 2] strides = [1, 1] : tensor<2x3xf32> -> tensor<2x1xf32>
  %k = constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %cat = concatenate %x, %k dimension = 0 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %r = reshape %x : tensor<2x3xf32> -> tensor<6xf32>
  %sv = splat %v dynamic_dims(%n) : tensor<?x3xf32>
  %io = iota dimension = 1 : tensor<2x3xsi32>
  %ci = constant dense<7> : tensor<2x2xsi32>
  %one = constant dense<1.0> : tensor<1x1xf32>
  %bc = broadcast %one : tensor<1x1xf32> -> tensor<1x2xf32>
  %d = dim %sv dimension = 0 : tensor<?x3xf32>
  results %c, %s, %cat, %r, %sv, %io, %ci, %bc, %d
      : tensor<3x2xf64>, tensor<2x1xf32>, tensor<4x3xf32>, tensor<6xf32>, tensor<?x3xf32>,
        tensor<2x3xsi32>, tensor<2x2xsi32>, tensor<1x2xf32>, index
}

tir.graph @contract(%a: tensor<2x4x8xf16>, %b: tensor<1x8x3xf16>, %acc: tensor<2x4x3xf32>,
                    %w: tensor<4x6xf32>)
    -> (tensor<2x4x3xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>) {
  %ac = convert %a : tensor<2x4x8xf16> -> tensor<2x4x8xf32>
  %bc = convert %b : tensor<1x8x3xf16> -> tensor<1x8x3xf32>
  %m = matmul(%ac, %bc) accum(%acc : tensor<2x4x3xf32>)
      : (tensor<2x4x8xf32>, tensor<1x8x3xf32>) -> tensor<2x4x3xf32>
  %sum = reduce(%w)<dimensions = [1], reduction_mode = <add>> : tensor<4x6xf32> -> tensor<4x1xf32>
  %mx = reduce(%w)<dimensions = [1], reduction_mode = <max>> : tensor<4x6xf32> -> tensor<4x1xf32>
  %ud = reduce_ud(%w)<dimensions = [1], identity = [0.000000e+00 : f32]> (%acc0: f32, %x0: f32) {
    %sq = arith.mulf %x0, %x0 : f32
    %s = arith.addf %acc0, %sq : f32
    tir.yield %s : f32
  } : tensor<4x6xf32> -> tensor<4x1xf32>
  results %m, %sum, %mx, %ud : tensor<2x4x3xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>
}

// Gathers: an embedding lookup (rows of a table by si64 ids of rank 2) and
// an index_select along a middle axis by si32 ids.
tir.graph @gather(%w: tensor<5x3xf32>, %x: tensor<2x4x3xf32>) -> (tensor<2x2x3xf32>, tensor<2x2x3xf32>) {
  %ids = constant dense<[[4, 0], [2, 2]]> : tensor<2x2xsi64>
  %e = gather %w, %ids axis = 0 : (tensor<5x3xf32>, tensor<2x2xsi64>) -> tensor<2x2x3xf32>
  %j = constant dense<[3, 1]> : tensor<2xsi32>
  %s = gather %x, %j axis = 1 : (tensor<2x4x3xf32>, tensor<2xsi32>) -> tensor<2x2x3xf32>
  results %e, %s : tensor<2x2x3xf32>, tensor<2x2x3xf32>
}

// A partitioned graph: the stitching graph launches two kernel graphs.
tir.graph @stitched_k0(%x: tensor<4x8xf32>) -> tensor<4x1xf32> {
  %m = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<4x8xf32> -> tensor<4x1xf32>
  results %m : tensor<4x1xf32>
}

tir.graph @stitched(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = launch @stitched_k0(%x) : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %y = launch @stitched_k1(%x, %m) : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  results %y : tensor<4x8xf32>
}

tir.graph @stitched_k1(%x: tensor<4x8xf32>, %m: tensor<4x1xf32>) -> tensor<4x8xf32> {
  %s = sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %e = exp %s : tensor<4x8xf32>
  results %e : tensor<4x8xf32>
}
