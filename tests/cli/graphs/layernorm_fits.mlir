nv_tensor_ir.graph @layernorm(%x: tensor<16x1024xf32>, %g: tensor<1x1024xf32>, %b: tensor<1x1024xf32>) -> tensor<16x1024xf32> {
  %mu = reduce(%x)<dimensions = [1], reduction_mode = <mean>> : tensor<16x1024xf32> -> tensor<16x1xf32>
  %c = sub %x, %mu : (tensor<16x1024xf32>, tensor<16x1xf32>) -> tensor<16x1024xf32>
  %c2 = mul %c, %c : tensor<16x1024xf32>
  %var = reduce(%c2)<dimensions = [1], reduction_mode = <mean>> : tensor<16x1024xf32> -> tensor<16x1xf32>
  %eps = constant dense<1.0e-05> : tensor<16x1xf32>
  %ve = add %var, %eps : tensor<16x1xf32>
  %rs = rsqrt %ve : tensor<16x1xf32>
  %n = mul %c, %rs : (tensor<16x1024xf32>, tensor<16x1xf32>) -> tensor<16x1024xf32>
  %s = mul %n, %g : (tensor<16x1024xf32>, tensor<1x1024xf32>) -> tensor<16x1024xf32>
  %y = add %s, %b : (tensor<16x1024xf32>, tensor<1x1024xf32>) -> tensor<16x1024xf32>
  results %y : tensor<16x1024xf32>
}
