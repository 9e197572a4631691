// Rows bounded at 6, as XLA's s32[<=6,2] from nonzero: one bucket 1..6
// under the "bound" policy; a size over 6 is refused.
tir.graph @scale_indices(%i: tensor<?x2xf32> {tir.bounds = "[<=6,2]"}, %s: tensor<1x2xf32>) -> tensor<?x2xf32> {
  %y = mul %i, %s : (tensor<?x2xf32>, tensor<1x2xf32>) -> tensor<?x2xf32>
  results %y : tensor<?x2xf32>
}
