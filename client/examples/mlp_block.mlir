// A transformer MLP block's first half: bf16 matmul with f32 accumulation,
// bias, tanh-approximated GELU and a residual add, followed by a row-wise
// layernorm of the result.
tir.graph @mlp_block(%x: tensor<512x1024xbf16>, %w: tensor<1024x4096xbf16>, %b: tensor<1x4096xf32>,
                     %res: tensor<512x4096xf32>, %gamma: tensor<1x4096xf32>, %beta: tensor<1x4096xf32>)
    -> tensor<512x4096xf32> {
  %m = matmul(%x, %w) : (tensor<512x1024xbf16>, tensor<1024x4096xbf16>) -> tensor<512x4096xf32>
  %h = add %m, %b : (tensor<512x4096xf32>, tensor<1x4096xf32>) -> tensor<512x4096xf32>
  %g = gelu_approx_tanh_fwd %h : tensor<512x4096xf32>
  %r = add %g, %res : tensor<512x4096xf32>
  %mu = reduce(%r)<dimensions = [1], reduction_mode = <mean>> : tensor<512x4096xf32> -> tensor<512x1xf32>
  %c = sub %r, %mu : (tensor<512x4096xf32>, tensor<512x1xf32>) -> tensor<512x4096xf32>
  %c2 = mul %c, %c : tensor<512x4096xf32>
  %var = reduce(%c2)<dimensions = [1], reduction_mode = <mean>> : tensor<512x4096xf32> -> tensor<512x1xf32>
  %eps = constant dense<1.0e-05> : tensor<512x1xf32>
  %ve = add %var, %eps : tensor<512x1xf32>
  %rs = rsqrt %ve : tensor<512x1xf32>
  %n = mul %c, %rs : (tensor<512x4096xf32>, tensor<512x1xf32>) -> tensor<512x4096xf32>
  %s = mul %n, %gamma : (tensor<512x4096xf32>, tensor<1x4096xf32>) -> tensor<512x4096xf32>
  %y = add %s, %beta : (tensor<512x4096xf32>, tensor<1x4096xf32>) -> tensor<512x4096xf32>
  results %y : tensor<512x4096xf32>
}
