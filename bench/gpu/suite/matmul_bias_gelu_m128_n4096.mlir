// An LLM layer shape: x (M=128 tokens) @ w (K=N=4096), bias, gelu_tanh; bf16 operands, f32 accumulation and output.
tir.graph @matmul_bias_gelu_m128_n4096(%x: tensor<128x4096xbf16>, %w: tensor<4096x4096xbf16>, %b: tensor<1x4096xf32>) -> tensor<128x4096xf32> {
  %m = matmul(%x, %w) : (tensor<128x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<128x4096xf32>
  %y = add %m, %b : (tensor<128x4096xf32>, tensor<1x4096xf32>) -> tensor<128x4096xf32>
  %g = gelu_approx_tanh_fwd %y : tensor<128x4096xf32>
  results %g : tensor<128x4096xf32>
}
