// Large GEMM with bias + gelu_tanh: x (M=8192, K=8192) times w, N=8192; w stored [K, N] (x @ w); bf16 operands and bias,
// f32 accumulation and epilogue, bf16 output. Compared with cuBLASLt's GELU_BIAS epilogue and its plain product.
tir.graph @gemm_bias_gelu_m8192_n8192_k8192(%x: tensor<8192x8192xbf16>, %w: tensor<8192x8192xbf16>, %b: tensor<1x8192xbf16>) -> tensor<8192x8192xbf16> {
  %m = matmul(%x, %w) : (tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<8192x8192xf32>
  %bf = convert %b : tensor<1x8192xbf16> -> tensor<1x8192xf32>
  %y = add %m, %bf : (tensor<8192x8192xf32>, tensor<1x8192xf32>) -> tensor<8192x8192xf32>
  %g = gelu_approx_tanh_fwd %y : tensor<8192x8192xf32>
  %o = convert %g : tensor<8192x8192xf32> -> tensor<8192x8192xbf16>
  results %o : tensor<8192x8192xbf16>
}
