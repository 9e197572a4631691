// Large GEMM: x (M=4096, K=4096) times w, N=4096; w stored [K, N] (x @ w); bf16 operands, f32 accumulation, bf16 output.
// Compared with cuBLASLt on the same inputs.
tir.graph @gemm_m4096_n4096_k4096(%x: tensor<4096x4096xbf16>, %w: tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16> {
  %m = matmul(%x, %w) : (tensor<4096x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<4096x4096xf32>
  %o = convert %m : tensor<4096x4096xf32> -> tensor<4096x4096xbf16>
  results %o : tensor<4096x4096xbf16>
}
