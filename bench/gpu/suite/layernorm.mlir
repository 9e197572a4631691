// LayerNorm over 4096 f32 per row, 8192 rows, with gamma and beta.
tir.graph @layernorm(%x: tensor<8192x4096xf32>, %g: tensor<1x4096xf32>, %b: tensor<1x4096xf32>) -> tensor<8192x4096xf32> {
  %mu = reduce(%x)<dimensions = [1], reduction_mode = <mean>> : tensor<8192x4096xf32> -> tensor<8192x1xf32>
  %c = sub %x, %mu : (tensor<8192x4096xf32>, tensor<8192x1xf32>) -> tensor<8192x4096xf32>
  %c2 = mul %c, %c : tensor<8192x4096xf32>
  %var = reduce(%c2)<dimensions = [1], reduction_mode = <mean>> : tensor<8192x4096xf32> -> tensor<8192x1xf32>
  %eps = constant dense<1.0e-05> : tensor<8192x1xf32>
  %ve = add %var, %eps : tensor<8192x1xf32>
  %rs = rsqrt %ve : tensor<8192x1xf32>
  %n = mul %c, %rs : (tensor<8192x4096xf32>, tensor<8192x1xf32>) -> tensor<8192x4096xf32>
  %s = mul %n, %g : (tensor<8192x4096xf32>, tensor<1x4096xf32>) -> tensor<8192x4096xf32>
  %y = add %s, %b : (tensor<8192x4096xf32>, tensor<1x4096xf32>) -> tensor<8192x4096xf32>
  results %y : tensor<8192x4096xf32>
}
