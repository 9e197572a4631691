// Decode GEMM, attention projection: x (M=32 tokens, K=4096) times w, N=4096; w stored [K, N] (x @ w);
// bf16 operands, f32 accumulation, bf16 output. Compared with cuBLASLt on the same inputs.
tir.graph @gemm_m32_n4096_k4096(%x: tensor<32x4096xbf16>, %w: tensor<4096x4096xbf16>) -> tensor<32x4096xbf16> {
  %m = matmul(%x, %w) : (tensor<32x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<32x4096xf32>
  %y = convert %m : tensor<32x4096xf32> -> tensor<32x4096xbf16>
  results %y : tensor<32x4096xbf16>
}
