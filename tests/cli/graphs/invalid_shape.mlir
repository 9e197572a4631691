tir.graph @bad(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = reshape %x : tensor<4x8xf32> -> tensor<5x8xf32>
  results %y : tensor<5x8xf32>
}
