// RUN: tir-opt %s --split-input-file --tir-partition | FileCheck %s
// RUN: tir-opt %s --split-input-file --tir-partition=arch=sm_86 | FileCheck %s --check-prefix=SM86

// Tests that a softmax whose rows fit on chip is one row-resident kernel.
// CHECK-LABEL: tir.graph @softmax_k0
// CHECK-SAME: tir.iteration_space = "reduction rows [8] x reduce [4096] (row-resident)"
// CHECK-LABEL: tir.graph @softmax(
// CHECK-SAME: tir.kernels = 1
// CHECK: launch @softmax_k0
// SM86-LABEL: tir.graph @softmax_k0
// SM86-SAME: (row-resident)
tir.graph @softmax(%x: tensor<8x4096xf32>) -> tensor<8x4096xf32> {
  %m = reduce(%x)<dimensions = [1], reduction_mode = <max>> : tensor<8x4096xf32> -> tensor<8x1xf32>
  %mb = broadcast %m : tensor<8x1xf32> -> tensor<8x4096xf32>
  %s = sub %x, %mb : tensor<8x4096xf32>
  %e = exp %s : tensor<8x4096xf32>
  %z = reduce(%e)<dimensions = [1], reduction_mode = <add>> : tensor<8x4096xf32> -> tensor<8x1xf32>
  %zb = broadcast %z : tensor<8x1xf32> -> tensor<8x4096xf32>
  %y = div %e, %zb : tensor<8x4096xf32>
  results %y : tensor<8x4096xf32>
}

// -----

// Tests that a row over the budget splits into reduce and normalize kernels,
// whose intermediates are the launches' results, and records why.
// CHECK-LABEL: tir.graph @wide_k0
// CHECK-SAME: tir.iteration_space = "reduction rows [4] x reduce [65536] (streaming)"
// CHECK-SAME: tir.split_reason = "the reduction's result is broadcast back over the reduced dimension and a row of 65536 elements (262144 bytes) exceeds the 98304-byte on-chip row budget of sm_90a"
// CHECK-LABEL: tir.graph @wide_k1
// CHECK-SAME: tir.kernel_kind = "pointwise"
// CHECK-LABEL: tir.graph @wide(
// CHECK: %[[S:.*]] = launch @wide_k0(%{{.*}}) : (tensor<4x65536xf32>) -> tensor<4x1xf32>
// CHECK: launch @wide_k1(%[[S]], %{{.*}}) : (tensor<4x1xf32>, tensor<4x65536xf32>) -> tensor<4x65536xf32>
tir.graph @wide(%x: tensor<4x65536xf32>) -> tensor<4x65536xf32> {
  %s = reduce(%x)<dimensions = [1], reduction_mode = <add>> : tensor<4x65536xf32> -> tensor<4x1xf32>
  %sb = broadcast %s : tensor<4x1xf32> -> tensor<4x65536xf32>
  %y = div %x, %sb : tensor<4x65536xf32>
  results %y : tensor<4x65536xf32>
}

// -----

// Tests that a matmul epilogue (bias, gelu, residual) fuses into one kernel.
// CHECK-LABEL: tir.graph @mlp_k0
// CHECK-SAME: tir.iteration_space = "matmul batch [] M=128 N=256 K=64"
// CHECK: matmul
// CHECK: gelu_approx_tanh_fwd
// CHECK-NOT: tir.graph @mlp_k1
tir.graph @mlp(%x: tensor<128x64xbf16>, %w: tensor<64x256xbf16>, %b: tensor<1x256xf32>, %r: tensor<128x256xf32>) -> tensor<128x256xf32> {
  %m = matmul(%x, %w) : (tensor<128x64xbf16>, tensor<64x256xbf16>) -> tensor<128x256xf32>
  %y = add %m, %b : (tensor<128x256xf32>, tensor<1x256xf32>) -> tensor<128x256xf32>
  %g = gelu_approx_tanh_fwd %y : tensor<128x256xf32>
  %o = add %g, %r : tensor<128x256xf32>
  results %o : tensor<128x256xf32>
}

// -----

// Tests that chained matmuls split, with the reason on the producer kernel.
// CHECK-LABEL: tir.graph @chain_k0
// CHECK-SAME: tir.split_reason = "a matmul result is an operand of another matmul
// CHECK-LABEL: tir.graph @chain_k1
tir.graph @chain(%a: tensor<32x64xf32>, %b: tensor<64x48xf32>, %c: tensor<48x16xf32>) -> tensor<32x16xf32> {
  %ab = matmul(%a, %b) : (tensor<32x64xf32>, tensor<64x48xf32>) -> tensor<32x48xf32>
  %abc = matmul(%ab, %c) : (tensor<32x48xf32>, tensor<48x16xf32>) -> tensor<32x16xf32>
  results %abc : tensor<32x16xf32>
}

// -----

// Tests that a softmax with both dims dynamic, written as TensorIR writes it
// (`?x1` broadcast to `?x?` without dynamic_dims), gives every kernel graph
// its sizes: the broadcasts read them with `dim` from the kernel's input.
// CHECK-LABEL: tir.graph @softmax_dynamic_k0
// CHECK-SAME: (%[[X0:[^:]*]]: tensor<?x?xf32>)
// CHECK-SAME: (streaming, online max and sum)
// CHECK-DAG: %[[R0:.*]] = dim %[[X0]] dimension = 0 : tensor<?x?xf32>
// CHECK-DAG: %[[C0:.*]] = dim %[[X0]] dimension = 1 : tensor<?x?xf32>
// CHECK: broadcast %{{.*}} dynamic_dims(%[[R0]], %[[C0]]) : tensor<?x1xf32> -> tensor<?x?xf32>
// CHECK-LABEL: tir.graph @softmax_dynamic_k1
// CHECK-SAME: (%[[X1:[^:]*]]: tensor<?x?xf32>, %[[M:[^:]*]]: tensor<?x1xf32>, %[[Z:[^:]*]]: tensor<?x1xf32>)
// CHECK-SAME: tir.kernel_kind = "pointwise"
// CHECK-DAG: %[[R1:.*]] = dim %[[X1]] dimension = 0 : tensor<?x?xf32>
// CHECK-DAG: %[[C1:.*]] = dim %[[X1]] dimension = 1 : tensor<?x?xf32>
// CHECK: broadcast %[[M]] dynamic_dims(%[[R1]], %[[C1]]) : tensor<?x1xf32> -> tensor<?x?xf32>
// CHECK: broadcast %[[Z]] dynamic_dims(%[[R1]], %[[C1]]) : tensor<?x1xf32> -> tensor<?x?xf32>
// CHECK-LABEL: tir.graph @softmax_dynamic(
// CHECK-SAME: tir.kernels = 2
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

// -----

// Tests that a gather is computed in its consumer's kernel with the ids'
// conversion, while the table it reads, computed by an op, is written out by
// a kernel of its own first, and says why.
// CHECK-LABEL: tir.graph @embed_k0
// CHECK-SAME: tir.split_reason = "it is the data a gather reads at run-time indices, which no tile of the gather's iteration space covers, so it is written out first"
// CHECK: exp
// CHECK-LABEL: tir.graph @embed_k1
// CHECK-SAME: (%[[I:[^:]*]]: tensor<12xsi32>, %[[T:[^:]*]]: tensor<90x16xf32>)
// CHECK-SAME: tir.iteration_space = "pointwise [12, 16]"
// CHECK: %[[W:.*]] = convert %[[I]] : tensor<12xsi32> -> tensor<12xsi64>
// CHECK: %[[G:.*]] = gather %[[T]], %[[W]] axis = 0 : (tensor<90x16xf32>, tensor<12xsi64>) -> tensor<12x16xf32>
// CHECK: neg %[[G]]
// CHECK-LABEL: tir.graph @embed(
// CHECK: %[[E:.*]] = launch @embed_k0(%{{.*}}) : (tensor<90x16xf32>) -> tensor<90x16xf32>
// CHECK: launch @embed_k1(%{{.*}}, %[[E]])
tir.graph @embed(%t: tensor<90x16xf32>, %ids: tensor<12xsi32>) -> tensor<12x16xf32> {
  %et = exp %t : tensor<90x16xf32>
  %wide = convert %ids : tensor<12xsi32> -> tensor<12xsi64>
  %r = gather %et, %wide axis = 0 : (tensor<90x16xf32>, tensor<12xsi64>) -> tensor<12x16xf32>
  %n = neg %r : tensor<12x16xf32>
  results %n : tensor<12x16xf32>
}
