// A reshape whose extents are known only at run time, in TensorIR's form.
nv_tensor_ir.graph @regroup(%x: tensor<?x8x?xbf16>, %rows: index, %cols: index) -> (tensor<?x?xf32>) {
  %y = reshape %x dynamic_dims(%rows, %cols) : tensor<?x8x?xbf16> -> tensor<?x?xbf16>
  %f = convert %y : tensor<?x?xbf16> -> tensor<?x?xf32>
  %e = exp %f : tensor<?x?xf32>
  results %e : tensor<?x?xf32>
}
