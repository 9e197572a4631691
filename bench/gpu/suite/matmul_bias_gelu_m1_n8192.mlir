// An LLM layer shape: x (M=1 tokens) @ w (K=N=8192), bias, gelu_tanh; bf16 operands, f32 accumulation and output.
tir.graph @matmul_bias_gelu_m1_n8192(%x: tensor<1x8192xbf16>, %w: tensor<8192x8192xbf16>, %b: tensor<1x8192xf32>) -> tensor<1x8192xf32> {
  %m = matmul(%x, %w) : (tensor<1x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1x8192xf32>
  %y = add %m, %b : (tensor<1x8192xf32>, tensor<1x8192xf32>) -> tensor<1x8192xf32>
  %g = gelu_approx_tanh_fwd %y : tensor<1x8192xf32>
  results %g : tensor<1x8192xf32>
}
