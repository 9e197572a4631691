// Vocabulary softmax (Llama-3 vocabulary, 128256 logits per row), 32 rows, f32 in and out
// (15.7 MiB each way). Compared with the copy bandwidth.
tir.graph @softmax_vocab_f32_r32(%x: tensor<32x128256xf32>) -> tensor<32x128256xf32> {
  %m = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<32x128256xf32> -> tensor<32x1xf32>
  %s = sub %x, %m : (tensor<32x128256xf32>, tensor<32x1xf32>) -> tensor<32x128256xf32>
  %e = exp %s : tensor<32x128256xf32>
  %z = reduce(%e)<dimensions = [1], reduction_mode = <add>> : tensor<32x128256xf32> -> tensor<32x1xf32>
  %y = div %e, %z : (tensor<32x128256xf32>, tensor<32x1xf32>) -> tensor<32x128256xf32>
  results %y : tensor<32x128256xf32>
}
