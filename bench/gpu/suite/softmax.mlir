// Row softmax over 4096 f32 per row, 8192 rows (one row-resident kernel on sm_90a).
tir.graph @softmax(%x: tensor<8192x4096xf32>) -> tensor<8192x4096xf32> {
  %m = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<8192x4096xf32> -> tensor<8192x1xf32>
  %s = sub %x, %m : (tensor<8192x4096xf32>, tensor<8192x1xf32>) -> tensor<8192x4096xf32>
  %e = exp %s : tensor<8192x4096xf32>
  %z = reduce(%e)<dimensions = [1], reduction_mode = <add>> : tensor<8192x4096xf32> -> tensor<8192x1xf32>
  %y = div %e, %z : (tensor<8192x4096xf32>, tensor<8192x1xf32>) -> tensor<8192x4096xf32>
  results %y : tensor<8192x4096xf32>
}
