// Large GEMM with bias + gelu_tanh: x (M=4096, K=4096) times w, N=14336; w stored [N, K] as nn.Linear stores it (x @ w^T); bf16 operands and bias,
// f32 accumulation and epilogue, bf16 output. Compared with cuBLASLt's GELU_BIAS epilogue and its plain product.
tir.graph @gemm_wt_bias_gelu_m4096_n14336_k4096(%x: tensor<4096x4096xbf16>, %w: tensor<14336x4096xbf16>, %b: tensor<1x14336xbf16>) -> tensor<4096x14336xbf16> {
  %t = transpose %w permutation = [1, 0] : tensor<14336x4096xbf16> -> tensor<4096x14336xbf16>
  %m = matmul(%x, %t) : (tensor<4096x4096xbf16>, tensor<4096x14336xbf16>) -> tensor<4096x14336xf32>
  %bf = convert %b : tensor<1x14336xbf16> -> tensor<1x14336xf32>
  %y = add %m, %bf : (tensor<4096x14336xf32>, tensor<1x14336xf32>) -> tensor<4096x14336xf32>
  %g = gelu_approx_tanh_fwd %y : tensor<4096x14336xf32>
  %o = convert %g : tensor<4096x14336xf32> -> tensor<4096x14336xbf16>
  results %o : tensor<4096x14336xbf16>
}
