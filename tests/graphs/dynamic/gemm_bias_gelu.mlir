// A linear layer with its epilogue over a run-time number of tokens.
tir.graph @gemm_bias_gelu(%x: tensor<?x128xbf16>, %w: tensor<128x192xbf16>, %b: tensor<1x192xf32>) -> tensor<?x192xf32> {
  %m = matmul(%x, %w) : (tensor<?x128xbf16>, tensor<128x192xbf16>) -> tensor<?x192xf32>
  %y = add %m, %b : (tensor<?x192xf32>, tensor<1x192xf32>) -> tensor<?x192xf32>
  %g = gelu_approx_tanh_fwd %y : tensor<?x192xf32>
  results %g : tensor<?x192xf32>
}
