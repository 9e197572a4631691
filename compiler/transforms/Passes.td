//===- Passes.td - tir passes ------------------------------*- tablegen -*-===//

#ifndef TIR_PASSES_TD
#define TIR_PASSES_TD

include "mlir/Pass/PassBase.td"

def MaterializeDefaultStrides : Pass<"tir-materialize-default-strides", "::mlir::ModuleOp"> {
  let summary = "Make every graph argument's and result's strides explicit";
  let description = [{
    Adds `tir.stride` to each tensor argument and result that has none, with
    row-major strides; a stride outside a dynamic extent stays `?`:

    ```mlir
    tir.graph @g(%x: tensor<?x4x8xf32>)            // before
    tir.graph @g(%x: tensor<?x4x8xf32> {tir.stride = "(32,8,1)"})  // after
    ```
  }];
}

#endif // TIR_PASSES_TD
