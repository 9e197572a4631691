tir.graph @softmax(%x: tensor<32x4096xf32>) -> tensor<32x4096xf32> {
  %m = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<32x4096xf32> -> tensor<32x1xf32>
  %mb = broadcast %m : tensor<32x1xf32> -> tensor<32x4096xf32>
  %s = sub %x, %mb : tensor<32x4096xf32>
  %e = exp %s : tensor<32x4096xf32>
  %z = reduce(%e)<dimensions = [1], reduction_mode = <add>> : tensor<32x4096xf32> -> tensor<32x1xf32>
  %zb = broadcast %z : tensor<32x1xf32> -> tensor<32x4096xf32>
  %y = div %e, %zb : tensor<32x4096xf32>
  results %y : tensor<32x4096xf32>
}
