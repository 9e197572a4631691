// RMSNorm (Llama: x * rsqrt(mean(x^2) + 1e-6) * g) over 32768 rows of 4096 bf16 (256 MiB in, 256 MiB out), f32 arithmetic.
// Compared with the copy bandwidth.
tir.graph @rmsnorm_bf16(%x: tensor<32768x4096xbf16>, %g: tensor<1x4096xbf16>) -> tensor<32768x4096xbf16> {
  %xf = convert %x : tensor<32768x4096xbf16> -> tensor<32768x4096xf32>
  %gf = convert %g : tensor<1x4096xbf16> -> tensor<1x4096xf32>
  %sq = mul %xf, %xf : tensor<32768x4096xf32>
  %ms = reduce(%sq)<dimensions = [1], reduction_mode = <mean>> : tensor<32768x4096xf32> -> tensor<32768x1xf32>
  %eps = constant dense<1.0e-06> : tensor<32768x1xf32>
  %a = add %ms, %eps : tensor<32768x1xf32>
  %r = rsqrt %a : tensor<32768x1xf32>
  %n = mul %xf, %r : (tensor<32768x4096xf32>, tensor<32768x1xf32>) -> tensor<32768x4096xf32>
  %s = mul %n, %gf : (tensor<32768x4096xf32>, tensor<1x4096xf32>) -> tensor<32768x4096xf32>
  %y = convert %s : tensor<32768x4096xf32> -> tensor<32768x4096xbf16>
  results %y : tensor<32768x4096xbf16>
}
