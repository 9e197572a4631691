// Prefill GEMM with bias + gelu_tanh, MLP up projection: x (M=512, K=4096) times w^T,
// w stored [N=14336, K] as nn.Linear stores it; bf16 operands and bias, f32 accumulation and epilogue,
// bf16 output. Compared with cuBLASLt's GELU_BIAS epilogue (bf16 bias, as it requires for a bf16 output).
tir.graph @gemm_wt_bias_gelu_m512_n14336_k4096(%x: tensor<512x4096xbf16>, %w: tensor<14336x4096xbf16>, %b: tensor<1x14336xbf16>) -> tensor<512x14336xbf16> {
  %t = transpose %w permutation = [1, 0] : tensor<14336x4096xbf16> -> tensor<4096x14336xbf16>
  %m = matmul(%x, %t) : (tensor<512x4096xbf16>, tensor<4096x14336xbf16>) -> tensor<512x14336xf32>
  %bf = convert %b : tensor<1x14336xbf16> -> tensor<1x14336xf32>
  %y = add %m, %bf : (tensor<512x14336xf32>, tensor<1x14336xf32>) -> tensor<512x14336xf32>
  %g = gelu_approx_tanh_fwd %y : tensor<512x14336xf32>
  %o = convert %g : tensor<512x14336xf32> -> tensor<512x14336xbf16>
  results %o : tensor<512x14336xbf16>
}
