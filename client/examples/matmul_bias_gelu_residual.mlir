// A transformer MLP step: x @ w + bias, GELU, plus the residual.
tir.graph @matmul_bias_gelu_residual(%x: tensor<128x256xbf16>, %w: tensor<256x256xbf16>, %bias: tensor<1x256xf32>,
                                     %residual: tensor<128x256xf32>) -> tensor<128x256xf32> {
  %m = matmul(%x, %w) : (tensor<128x256xbf16>, tensor<256x256xbf16>) -> tensor<128x256xf32>
  %y = add %m, %bias : (tensor<128x256xf32>, tensor<1x256xf32>) -> tensor<128x256xf32>
  %g = gelu_approx_tanh_fwd %y : tensor<128x256xf32>
  %o = add %g, %residual : tensor<128x256xf32>
  results %o : tensor<128x256xf32>
}
