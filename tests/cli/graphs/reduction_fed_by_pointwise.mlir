tir.graph @l2(%x: tensor<64x2048xf32>, %y: tensor<64x2048xf32>) -> tensor<64x1xf32> {
  %d = sub %x, %y : tensor<64x2048xf32>
  %a = abs %d : tensor<64x2048xf32>
  %s = reduce(%a)<dimensions = [1], reduction_mode = <max>> : tensor<64x2048xf32> -> tensor<64x1xf32>
  results %s : tensor<64x1xf32>
}
