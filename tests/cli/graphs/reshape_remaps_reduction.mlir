tir.graph @rs(%x: tensor<32x256xf32>) -> tensor<64x1xf32> {
  %e = exp %x : tensor<32x256xf32>
  %r = reshape %e : tensor<32x256xf32> -> tensor<64x128xf32>
  %s = reduce(%r)<dimensions = [1], reduction_mode = <add>> : tensor<64x128xf32> -> tensor<64x1xf32>
  results %s : tensor<64x1xf32>
}
