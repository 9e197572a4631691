// RMSNorm (Llama: x * rsqrt(mean(x^2) + 1e-6) * g) over 16384 rows of 4096 f32 (256 MiB in, 256 MiB out).
// Compared with the copy bandwidth.
tir.graph @rmsnorm_f32(%x: tensor<16384x4096xf32>, %g: tensor<1x4096xf32>) -> tensor<16384x4096xf32> {
  %sq = mul %x, %x : tensor<16384x4096xf32>
  %ms = reduce(%sq)<dimensions = [1], reduction_mode = <mean>> : tensor<16384x4096xf32> -> tensor<16384x1xf32>
  %eps = constant dense<1.0e-06> : tensor<16384x1xf32>
  %a = add %ms, %eps : tensor<16384x1xf32>
  %r = rsqrt %a : tensor<16384x1xf32>
  %n = mul %x, %r : (tensor<16384x4096xf32>, tensor<16384x1xf32>) -> tensor<16384x4096xf32>
  %s = mul %n, %g : (tensor<16384x4096xf32>, tensor<1x4096xf32>) -> tensor<16384x4096xf32>
  results %s : tensor<16384x4096xf32>
}
