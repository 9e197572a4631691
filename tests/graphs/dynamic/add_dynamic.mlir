// TensorIR's dynamic addition, as its integration test writes it (run
// there with --dynamic-dims=16,8 --dynamic-strides=8).
module {
  nv_tensor_ir.graph @add_dynamic_shape(
    %a: tensor<?x?xf32> {nv_tensor_ir.stride = "(?,1)"},
    %b: tensor<?x?xf32> {nv_tensor_ir.stride = "(?,1)"}
  ) -> (tensor<?x?xf32> {nv_tensor_ir.stride = "(?,1)"}) {
    %out = add %a, %b : tensor<?x?xf32>
    results %out : tensor<?x?xf32>
  }
}
