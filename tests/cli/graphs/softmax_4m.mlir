tir.graph @softmax(%x: tensor<4x4194304xf32>) -> tensor<4x4194304xf32> {
  %m = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<4x4194304xf32> -> tensor<4x1xf32>
  %mb = broadcast %m : tensor<4x1xf32> -> tensor<4x4194304xf32>
  %s = sub %x, %mb : tensor<4x4194304xf32>
  %e = exp %s : tensor<4x4194304xf32>
  %z = reduce(%e)<dimensions = [1], reduction_mode = <add>> : tensor<4x4194304xf32> -> tensor<4x1xf32>
  %zb = broadcast %z : tensor<4x1xf32> -> tensor<4x4194304xf32>
  %y = div %e, %zb : tensor<4x4194304xf32>
  results %y : tensor<4x4194304xf32>
}
