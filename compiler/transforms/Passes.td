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

def PropagateLayouts : Pass<"tir-propagate-layouts", "::mlir::ModuleOp"> {
  let summary = "Give every value of a kernel an affine access map from the kernel's iteration space";
  let description = [{
    On kernel graphs (from tir-partition), annotates each op with
    `tir.access`: the affine map from the kernel's iteration domain to the
    indices of its result; each kernel argument read under a single map gets
    it as `tir.iter_space_map`. Maps go through broadcast (unit dims read at
    0), transpose (permuted), slice (start + stride * i), reshape
    (delinearized, floordiv/mod), concatenate (offset), reductions (reduced
    dims at 0) and matmul (A: batch, m, k; B: batch, k, n).

    ```mlir
    %t = transpose %x permutation = [1, 0] {tir.access = affine_map<(d0, d1) -> (d0, d1)>} ...
    // with %x: tensor<64x32xf32> {tir.iter_space_map = affine_map<(d0, d1) -> (d1, d0)>}
    ```

    Conflict rule: a value needed under two different maps is recomputed per
    map (the op is cloned) when it is pointwise; kernel arguments are simply
    read twice; any other value (a reduction or matmul result) under two maps
    is an error, because it needs a partition boundary.
  }];
}

def Plan : Pass<"tir-plan", "::mlir::ModuleOp"> {
  let summary = "Report the plan of each graph: kernels, iteration spaces, ranked candidates";
  let description = [{
    Emits, as a remark on each (unpartitioned) graph, what `tirctl plan`
    prints: the partition into kernels with their iteration spaces and split
    reasons, the number of tile candidates before and after pruning for the
    target arch, the best candidates with predicted times, and the default.
    The IR is left unchanged.
  }];
  let options = [
    Option<"arch", "arch", "std::string", /*default=*/"\"sm_90a\"", "Target arch">,
    Option<"top", "top", "int", /*default=*/"3", "Candidates shown per kernel">,
  ];
}
