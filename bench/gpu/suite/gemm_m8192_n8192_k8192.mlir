// Large GEMM: x (M=8192, K=8192) times w, N=8192; w stored [K, N] (x @ w); bf16 operands, f32 accumulation, bf16 output.
// Compared with cuBLASLt on the same inputs.
tir.graph @gemm_m8192_n8192_k8192(%x: tensor<8192x8192xbf16>, %w: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %m = matmul(%x, %w) : (tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<8192x8192xf32>
  %o = convert %m : tensor<8192x8192xf32> -> tensor<8192x8192xbf16>
  results %o : tensor<8192x8192xbf16>
}
