tir.graph @cat(%x: tensor<32x512xf32>, %y: tensor<32x128xf32>) -> tensor<32x2xf32> {
  %a = reduce(%x)<dimensions = [1], reduction_mode = <add>> : tensor<32x512xf32> -> tensor<32x1xf32>
  %b = reduce(%y)<dimensions = [1], reduction_mode = <max>> : tensor<32x128xf32> -> tensor<32x1xf32>
  %c = concatenate %a, %b dimension = 1 : (tensor<32x1xf32>, tensor<32x1xf32>) -> tensor<32x2xf32>
  results %c : tensor<32x2xf32>
}
