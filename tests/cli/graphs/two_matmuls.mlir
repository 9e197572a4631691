tir.graph @mm2(%a: tensor<256x512xf16>, %b: tensor<512x256xf16>, %c: tensor<256x128xf16>) -> tensor<256x128xf32> {
  %ab = matmul(%a, %b) : (tensor<256x512xf16>, tensor<512x256xf16>) -> tensor<256x256xf16>
  %abc = matmul(%ab, %c) : (tensor<256x256xf16>, tensor<256x128xf16>) -> tensor<256x128xf32>
  results %abc : tensor<256x128xf32>
}
