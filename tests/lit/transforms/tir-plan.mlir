// RUN: tir-opt %s --split-input-file --tir-plan 2>&1 | FileCheck %s
// RUN: tir-opt %s --split-input-file --tir-plan="arch=host top=1" 2>&1 | FileCheck %s --check-prefix=HOST

// Tests that the plan names each kernel, its iteration space, the candidate
// counts and the default candidate.
// CHECK: remark: plan of @mlp for sm_90a: 1 kernel(s), 0 intermediate(s)
// CHECK: kernel 0: matmul batch [] M=1024 N=1024 K=512 (3 ops)
// CHECK: candidates: {{[0-9]+}}, {{[0-9]+}} after pruning
// CHECK: #0 {{.*}} us  block_k={{[0-9]+}} block_m={{[0-9]+}}
// HOST: plan of @mlp for host
// HOST: kernel 0: matmul
tir.graph @mlp(%x: tensor<1024x512xbf16>, %w: tensor<512x1024xbf16>, %b: tensor<1x1024xf32>) -> tensor<1024x1024xf32> {
  %m = matmul(%x, %w) : (tensor<1024x512xbf16>, tensor<512x1024xbf16>) -> tensor<1024x1024xf32>
  %y = add %m, %b : (tensor<1024x1024xf32>, tensor<1x1024xf32>) -> tensor<1024x1024xf32>
  %g = gelu_approx_tanh_fwd %y : tensor<1024x1024xf32>
  results %g : tensor<1024x1024xf32>
}

// -----

// Tests that a split kernel reports its reason.
// CHECK: plan of @wide for sm_90a: 2 kernel(s), 1 intermediate(s)
// CHECK: kernel 0: reduction rows [4] x reduce [1048576] (streaming)
// CHECK-NEXT: split: the reduction's result is broadcast back over the reduced dimension
// CHECK: kernel 1: pointwise [4, 1048576]
tir.graph @wide(%x: tensor<4x1048576xf32>) -> tensor<4x1048576xf32> {
  %s = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<4x1048576xf32> -> tensor<4x1xf32>
  %y = sub %x, %s : (tensor<4x1048576xf32>, tensor<4x1xf32>) -> tensor<4x1048576xf32>
  results %y : tensor<4x1048576xf32>
}
