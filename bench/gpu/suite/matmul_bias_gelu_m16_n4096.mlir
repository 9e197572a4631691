// An LLM layer shape: x (M=16 tokens) @ w (K=N=4096), bias, gelu_tanh; bf16 operands, f32 accumulation and output.
tir.graph @matmul_bias_gelu_m16_n4096(%x: tensor<16x4096xbf16>, %w: tensor<4096x4096xbf16>, %b: tensor<1x4096xf32>) -> tensor<16x4096xf32> {
  %m = matmul(%x, %w) : (tensor<16x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<16x4096xf32>
  %y = add %m, %b : (tensor<16x4096xf32>, tensor<1x4096xf32>) -> tensor<16x4096xf32>
  %g = gelu_approx_tanh_fwd %y : tensor<16x4096xf32>
  results %g : tensor<16x4096xf32>
}
