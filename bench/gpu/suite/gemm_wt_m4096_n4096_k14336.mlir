// Large GEMM: x (M=4096, K=14336) times w, N=4096; w stored [N, K] as nn.Linear stores it (x @ w^T); bf16 operands, f32 accumulation, bf16 output.
// Compared with cuBLASLt on the same inputs.
tir.graph @gemm_wt_m4096_n4096_k14336(%x: tensor<4096x14336xbf16>, %w: tensor<4096x14336xbf16>) -> tensor<4096x4096xbf16> {
  %t = transpose %w permutation = [1, 0] : tensor<4096x14336xbf16> -> tensor<14336x4096xbf16>
  %m = matmul(%x, %t) : (tensor<4096x14336xbf16>, tensor<14336x4096xbf16>) -> tensor<4096x4096xf32>
  %o = convert %m : tensor<4096x4096xf32> -> tensor<4096x4096xbf16>
  results %o : tensor<4096x4096xbf16>
}
