// Large GEMM: x (M=4096, K=4096) times w, N=14336; w stored [N, K] as nn.Linear stores it (x @ w^T); bf16 operands, f32 accumulation, bf16 output.
// Compared with cuBLASLt on the same inputs.
tir.graph @gemm_wt_m4096_n14336_k4096(%x: tensor<4096x4096xbf16>, %w: tensor<14336x4096xbf16>) -> tensor<4096x14336xbf16> {
  %t = transpose %w permutation = [1, 0] : tensor<14336x4096xbf16> -> tensor<4096x14336xbf16>
  %m = matmul(%x, %t) : (tensor<4096x4096xbf16>, tensor<4096x14336xbf16>) -> tensor<4096x14336xf32>
  %o = convert %m : tensor<4096x14336xf32> -> tensor<4096x14336xbf16>
  results %o : tensor<4096x14336xbf16>
}
