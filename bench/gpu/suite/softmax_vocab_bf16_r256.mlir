// Vocabulary softmax (Llama-3 vocabulary, 128256 logits per row), 256 rows, bf16 in and out
// (62.6 MiB each way), f32 arithmetic. Compared with the copy bandwidth.
tir.graph @softmax_vocab_bf16_r256(%x: tensor<256x128256xbf16>) -> tensor<256x128256xbf16> {
  %xf = convert %x : tensor<256x128256xbf16> -> tensor<256x128256xf32>
  %m = reduce(%xf)<dimensions = [1], reduction_mode = <max>> : tensor<256x128256xf32> -> tensor<256x1xf32>
  %s = sub %xf, %m : (tensor<256x128256xf32>, tensor<256x1xf32>) -> tensor<256x128256xf32>
  %e = exp %s : tensor<256x128256xf32>
  %z = reduce(%e)<dimensions = [1], reduction_mode = <add>> : tensor<256x128256xf32> -> tensor<256x1xf32>
  %p = div %e, %z : (tensor<256x128256xf32>, tensor<256x1xf32>) -> tensor<256x128256xf32>
  %y = convert %p : tensor<256x128256xf32> -> tensor<256x128256xbf16>
  results %y : tensor<256x128256xbf16>
}
