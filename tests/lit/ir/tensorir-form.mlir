// RUN: tir-opt %s --split-input-file | FileCheck %s
// RUN: tir-opt %s --split-input-file | tir-opt --split-input-file | FileCheck %s

// Tests that a graph in TensorIR's form parses into tir's dialect and prints
// in tir's form, with strides carried over.
// CHECK-LABEL: tir.graph @fromTensorIr
// CHECK-SAME: tensor<8x16xf32> {tir.stride = "(1,8)"}
// CHECK: %[[E:.*]] = exp %{{.*}} : tensor<8x16xf32>
// CHECK: results %[[E]]
// CHECK-NOT: nv_tensor_ir
nv_tensor_ir.graph @fromTensorIr(%x: tensor<8x16xf32> {nv_tensor_ir.stride = "(1,8)"}) -> tensor<8x16xf32> {
  %e = nv_tensor_ir.exp %x : tensor<8x16xf32>
  results %e : tensor<8x16xf32>
}

// -----

// Tests that TensorIR's layout attributes and yield spelling are accepted.
// CHECK-LABEL: tir.graph @layouts
// CHECK: add %{{.*}}, %{{.*}} {tir.layout = #tir.tensor_source<0, 0, "(4,4):(4,1)">}
// CHECK: reduce_ud
// CHECK: yield
nv_tensor_ir.graph @layouts(%a: tensor<4x4xf32>) -> tensor<4x1xf32> {
  %s = add %a, %a {nv_tensor_ir.layout = #nv_tensor_ir.tensor_source<0, 0, "(4,4):(4,1)">} : tensor<4x4xf32>
  %r = reduce_ud(%s)<dimensions = [1], identity = [0.0 : f32]> (%acc: f32, %v: f32) {
    %t = arith.addf %acc, %v : f32
    nv_tensor_ir.yield %t : f32
  } : tensor<4x4xf32> -> tensor<4x1xf32>
  results %r : tensor<4x1xf32>
}

// -----

// Tests that TensorIR's generic form (op names as strings) is accepted too.
// CHECK-LABEL: tir.graph @generic
// CHECK: %[[E:.*]] = exp %{{.*}} : tensor<4xf32>
// CHECK: results %[[E]] : tensor<4xf32>
"nv_tensor_ir.graph"() ({
^bb0(%arg0: tensor<4xf32>):
  %0 = "nv_tensor_ir.exp"(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
  "nv_tensor_ir.results"(%0) : (tensor<4xf32>) -> ()
}) {function_type = (tensor<4xf32>) -> tensor<4xf32>, sym_name = "generic"} : () -> ()
