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

def Partition : Pass<"tir-partition", "::mlir::ModuleOp"> {
  let summary = "Split each graph into kernels with one iteration space each";
  let description = [{
    Replaces every graph @g with kernel graphs @g_k0, @g_k1, ... (annotated
    with tir.kernel_kind, tir.iteration_space and, when a kernel is split off,
    tir.split_reason) and a stitching graph @g that launches them in order;
    values passed between kernels become global intermediates. The algorithm
    is described in compiler/planning/Partition.h.

    ```mlir
    tir.graph @g(%x: tensor<8x64xf32>) -> tensor<8x64xf32> { ... softmax ... }
    // becomes, when a row fits on chip:
    tir.graph @g_k0(%x: tensor<8x64xf32>) -> tensor<8x64xf32> attributes
        {tir.kernel_kind = "reduction", tir.iteration_space = "reduction rows [8] x reduce [64] (row-resident)"}
    tir.graph @g(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
      %0 = launch @g_k0(%x) : (tensor<8x64xf32>) -> tensor<8x64xf32>
      results %0 : tensor<8x64xf32>
    }
    ```
  }];
  let options = [
    Option<"arch", "arch", "std::string", /*default=*/"\"sm_90a\"",
           "Target arch whose on-chip budget decides what fuses">,
  ];
}
