tir.graph @mm(%a: tensor<128x96xbf16>, %b: tensor<96x64xbf16>) -> tensor<128x64xf32> {
  %c = matmul(%a, %b) : (tensor<128x96xbf16>, tensor<96x64xbf16>) -> tensor<128x64xf32>
  results %c : tensor<128x64xf32>
}
