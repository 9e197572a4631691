// Softmax over rows of a run-time count (a batch of sequences).
tir.graph @softmax_rows(%x: tensor<?x256xf32>) -> tensor<?x256xf32> {
  %m = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<?x256xf32> -> tensor<?x1xf32>
  %mb = broadcast %m : tensor<?x1xf32> -> tensor<?x256xf32>
  %s = sub %x, %mb : tensor<?x256xf32>
  %e = exp %s : tensor<?x256xf32>
  %z = reduce(%e)<dimensions = [1], reduction_mode = <add>> : tensor<?x256xf32> -> tensor<?x1xf32>
  %zb = broadcast %z : tensor<?x1xf32> -> tensor<?x256xf32>
  %y = div %e, %zb : tensor<?x256xf32>
  results %y : tensor<?x256xf32>
}
