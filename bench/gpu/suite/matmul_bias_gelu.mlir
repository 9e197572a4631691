// bf16 4096^3 with f32 accumulation and a bias + gelu_tanh epilogue.
tir.graph @matmul_bias_gelu(%x: tensor<4096x4096xbf16>, %w: tensor<4096x4096xbf16>, %b: tensor<1x4096xf32>) -> tensor<4096x4096xf32> {
  %m = matmul(%x, %w) : (tensor<4096x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<4096x4096xf32>
  %y = add %m, %b : (tensor<4096x4096xf32>, tensor<1x4096xf32>) -> tensor<4096x4096xf32>
  %g = gelu_approx_tanh_fwd %y : tensor<4096x4096xf32>
  results %g : tensor<4096x4096xf32>
}
