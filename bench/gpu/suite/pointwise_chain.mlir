// 256 MiB bf16 in, 256 MiB out: gelu_tanh(x + b) * x.
tir.graph @pointwise_chain(%x: tensor<16384x8192xbf16>, %b: tensor<1x8192xbf16>) -> tensor<16384x8192xbf16> {
  %a = add %x, %b : (tensor<16384x8192xbf16>, tensor<1x8192xbf16>) -> tensor<16384x8192xbf16>
  %g = gelu_approx_tanh_fwd %a : tensor<16384x8192xbf16>
  %y = mul %g, %x : tensor<16384x8192xbf16>
  results %y : tensor<16384x8192xbf16>
}
