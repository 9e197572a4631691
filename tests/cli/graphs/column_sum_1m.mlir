tir.graph @colsum(%x: tensor<1048576x16xf32>) -> tensor<1048576x16xf32> {
  %s = reduce(%x)<dimensions = [0], reduction_mode = <add>> : tensor<1048576x16xf32> -> tensor<1x16xf32>
  %y = div %x, %s : (tensor<1048576x16xf32>, tensor<1x16xf32>) -> tensor<1048576x16xf32>
  results %y : tensor<1048576x16xf32>
}
