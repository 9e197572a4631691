tir.graph @pw(%x: tensor<128x256xf32>, %xt: tensor<256x128xf32> {tir.stride = "(1,256)"}, %b: tensor<1x256xf32>) -> tensor<128x256xf32> {
  %t = transpose %xt permutation = [1, 0] : tensor<256x128xf32> -> tensor<128x256xf32>
  %a = add %x, %b : (tensor<128x256xf32>, tensor<1x256xf32>) -> tensor<128x256xf32>
  %m = mul %a, %t : tensor<128x256xf32>
  %s = sigmoid_fwd %m : tensor<128x256xf32>
  results %s : tensor<128x256xf32>
}
