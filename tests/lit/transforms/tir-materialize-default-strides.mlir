// RUN: tir-opt %s --split-input-file --tir-materialize-default-strides | FileCheck %s

// Tests that static row-major strides are made explicit on arguments and results.
// CHECK-LABEL: tir.graph @static
// CHECK-SAME: (%{{.*}}: tensor<2x3x4xf32> {tir.stride = "(12,4,1)"})
// CHECK-SAME: -> (tensor<2x3x4xf32> {tir.stride = "(12,4,1)"})
tir.graph @static(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %y = exp %x : tensor<2x3x4xf32>
  results %y : tensor<2x3x4xf32>
}

// -----

// Tests that strides outside a dynamic extent stay dynamic.
// CHECK-LABEL: tir.graph @dynamic
// CHECK-SAME: tensor<4x?x8xf32> {tir.stride = "(?,8,1)"}
// CHECK-SAME: tensor<?x4xf32> {tir.stride = "(4,1)"}
tir.graph @dynamic(%x: tensor<4x?x8xf32>, %y: tensor<?x4xf32>) {
  results
}

// -----

// Tests that explicit strides and scalar arguments are left alone.
// CHECK-LABEL: tir.graph @explicit
// CHECK-SAME: (%{{.*}}: tensor<4x4xf32> {tir.stride = "(1,4)"}, %{{.*}}: f32)
tir.graph @explicit(%x: tensor<4x4xf32> {tir.stride = "(1,4)"}, %s: f32) {
  results
}
