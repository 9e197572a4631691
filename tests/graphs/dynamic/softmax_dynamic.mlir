// A softmax with rows and columns of run-time extent, as TensorIR writes it:
// each per-row value (`?x1`) is broadcast to `?x?` without dynamic_dims, so
// the columns' extent comes from the graph's shape inference (the `sub` and
// `div` tie it to %x's).
module {
  nv_tensor_ir.graph @softmax_dynamic(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
    %m = reduce(%x)<dimensions = [1], reduction_mode = <max> > : tensor<?x?xf32> -> tensor<?x1xf32>
    %mb = broadcast %m : tensor<?x1xf32> -> tensor<?x?xf32>
    %s = sub %x, %mb : tensor<?x?xf32>
    %e = exp %s : tensor<?x?xf32>
    %z = reduce(%e)<dimensions = [1], reduction_mode = <add> > : tensor<?x?xf32> -> tensor<?x1xf32>
    %zb = broadcast %z : tensor<?x1xf32> -> tensor<?x?xf32>
    %y = div %e, %zb : tensor<?x?xf32>
    results %y : tensor<?x?xf32>
  }
}
