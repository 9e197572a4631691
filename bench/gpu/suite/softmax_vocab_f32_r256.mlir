// Vocabulary softmax (Llama-3 vocabulary, 128256 logits per row), 256 rows, f32 in and out
// (125.2 MiB each way). Compared with the copy bandwidth.
tir.graph @softmax_vocab_f32_r256(%x: tensor<256x128256xf32>) -> tensor<256x128256xf32> {
  %m = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<256x128256xf32> -> tensor<256x1xf32>
  %s = sub %x, %m : (tensor<256x128256xf32>, tensor<256x1xf32>) -> tensor<256x128256xf32>
  %e = exp %s : tensor<256x128256xf32>
  %z = reduce(%e)<dimensions = [1], reduction_mode = <add>> : tensor<256x128256xf32> -> tensor<256x1xf32>
  %y = div %e, %z : (tensor<256x128256xf32>, tensor<256x1xf32>) -> tensor<256x128256xf32>
  results %y : tensor<256x128256xf32>
}
