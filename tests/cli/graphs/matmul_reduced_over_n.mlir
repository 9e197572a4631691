tir.graph @mmsum(%a: tensor<128x64xf32>, %b: tensor<64x256xf32>) -> tensor<128x1xf32> {
  %c = matmul(%a, %b) : (tensor<128x64xf32>, tensor<64x256xf32>) -> tensor<128x256xf32>
  %s = reduce(%c)<dimensions = [1], reduction_mode = <add>> : tensor<128x256xf32> -> tensor<128x1xf32>
  results %s : tensor<128x1xf32>
}
