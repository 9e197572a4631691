tir.graph @mlp(%x: tensor<512x1024xbf16>, %w: tensor<1024x4096xbf16>, %b: tensor<1x4096xf32>, %r: tensor<512x4096xf32>) -> tensor<512x4096xf32> {
  %m = matmul(%x, %w) : (tensor<512x1024xbf16>, tensor<1024x4096xbf16>) -> tensor<512x4096xf32>
  %y = add %m, %b : (tensor<512x4096xf32>, tensor<1x4096xf32>) -> tensor<512x4096xf32>
  %g = gelu_approx_tanh_fwd %y : tensor<512x4096xf32>
  %o = add %g, %r : tensor<512x4096xf32>
  results %o : tensor<512x4096xf32>
}
