// RUN: tir-opt %s --tir-partition --tir-propagate-layouts --mlir-print-local-scope | FileCheck %s

// Tests that the forward region torch.compile writes for a Llama layer
// (RMSNorm, rotary embeddings, grouped-query SDPA, SwiGLU) with a sequence
// length that varies partitions into kernels whose every index divides by
// a positive constant: a kernel of this region once computed an index
// `mod -9223372036854775808` and killed the process that ran it.
// CHECK-LABEL: tir.graph @dynamo5_fused_0_k0
// CHECK-NOT: mod -
// CHECK-NOT: floordiv -
// CHECK-LABEL: tir.graph @dynamo5_fused_0(
// CHECK-SAME: tir.kernels =
tir.graph @dynamo5_fused_0(%in0: tensor<?xf32>, %in1: tensor<2x?x32xf32>, %in2: tensor<32x32xf32>, %in3: tensor<16x32xf32>, %in4: tensor<16x32xf32>, %in5: tensor<32x32xf32>, %in6: tensor<64x32xf32>, %in7: tensor<64x32xf32>, %in8: tensor<32x64xf32>, %in9: tensor<32xf32>, %in10: tensor<32xf32>) -> tensor<2x?x32xf32> {
  %d1 = dim %in0 dimension = 0 : tensor<?xf32>
  %v2 = reshape %in0 dynamic_dims(%d1) : tensor<?xf32> -> tensor<?x1xf32>
  %v3 = iota dimension = 0 : tensor<4xf32>
  %c4 = constant dense<2.00000000000000000e+00> : tensor<1xf32>
  %v5 = mul %v3, %c4 : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xf32>
  %v6 = mul %in1, %in1 : tensor<2x?x32xf32>
  %v7 = transpose %in2 permutation = [1, 0] : tensor<32x32xf32> -> tensor<32x32xf32>
  %v8 = transpose %in3 permutation = [1, 0] : tensor<16x32xf32> -> tensor<32x16xf32>
  %v9 = transpose %in4 permutation = [1, 0] : tensor<16x32xf32> -> tensor<32x16xf32>
  %c10 = constant dense<true> : tensor<1x1xi1>
  %v11 = broadcast %c10 dynamic_dims(%d1, %d1) : tensor<1x1xi1> -> tensor<?x?xi1>
  %v12 = iota dimension = 0 dynamic_dims(%d1) : tensor<?xsi64>
  %v13 = iota dimension = 0 dynamic_dims(%d1) : tensor<?xsi64>
  %c14 = constant dense<0xFF800000> : tensor<1xf32>
  %c15 = constant dense<0.00000000000000000e+00> : tensor<1xf32>
  %v16 = transpose %in5 permutation = [1, 0] : tensor<32x32xf32> -> tensor<32x32xf32>
  %v17 = transpose %in6 permutation = [1, 0] : tensor<64x32xf32> -> tensor<32x64xf32>
  %v18 = transpose %in7 permutation = [1, 0] : tensor<64x32xf32> -> tensor<32x64xf32>
  %v19 = transpose %in8 permutation = [1, 0] : tensor<32x64xf32> -> tensor<64x32xf32>
  %c20 = constant dense<-9.21034037197618360e+00> : tensor<1xf32>
  %v21 = mul %v5, %c20 : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xf32>
  %v22 = reduce(%v6)<dimensions = [2], reduction_mode = <add>> : tensor<2x?x32xf32> -> tensor<2x?x1xf32>
  %c23 = constant dense<3.12500000000000000e-02> : tensor<1x1x1xf32>
  %v24 = mul %v22, %c23 : (tensor<2x?x1xf32>, tensor<1x1x1xf32>) -> tensor<2x?x1xf32>
  %v25 = reshape %v12 dynamic_dims(%d1) : tensor<?xsi64> -> tensor<1x?xsi64>
  %v26 = reshape %v13 dynamic_dims(%d1) : tensor<?xsi64> -> tensor<?x1xsi64>
  %c27 = constant dense<8.00000000000000000e+00> : tensor<1xf32>
  %v28 = div %v21, %c27 : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xf32>
  %c29 = constant dense<9.99999999999999955e-07> : tensor<1x1x1xf32>
  %v30 = add %v24, %c29 : (tensor<2x?x1xf32>, tensor<1x1x1xf32>) -> tensor<2x?x1xf32>
  %v31 = sub %v25, %v26 : (tensor<1x?xsi64>, tensor<?x1xsi64>) -> tensor<?x?xsi64>
  %v32 = exp %v28 : tensor<4xf32>
  %v33 = rsqrt %v30 : tensor<2x?x1xf32>
  %c34 = constant dense<0> : tensor<1x1xsi64>
  %v35 = broadcast %c34 dynamic_dims(%d1, %d1) : tensor<1x1xsi64> -> tensor<?x?xsi64>
  %v36 = cmp %v31 le %v35 : tensor<?x?xsi64>
  %v37 = reshape %v32 : tensor<4xf32> -> tensor<1x4xf32>
  %v38 = mul %v2, %v37 : (tensor<?x1xf32>, tensor<1x4xf32>) -> tensor<?x4xf32>
  %v39 = reshape %v32 : tensor<4xf32> -> tensor<1x4xf32>
  %v40 = mul %v2, %v39 : (tensor<?x1xf32>, tensor<1x4xf32>) -> tensor<?x4xf32>
  %v41 = mul %in1, %v33 : (tensor<2x?x32xf32>, tensor<2x?x1xf32>) -> tensor<2x?x32xf32>
  %v42 = and %v36, %v11 : tensor<?x?xi1>
  %v43 = concatenate %v38, %v40 dimension = 1 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x8xf32>
  %v44 = reshape %in9 : tensor<32xf32> -> tensor<1x1x32xf32>
  %v45 = mul %v41, %v44 : (tensor<2x?x32xf32>, tensor<1x1x32xf32>) -> tensor<2x?x32xf32>
  %v46 = reshape %c15 : tensor<1xf32> -> tensor<1x1xf32>
  %v47 = broadcast %v46 dynamic_dims(%d1, %d1) : tensor<1x1xf32> -> tensor<?x?xf32>
  %v48 = reshape %c14 : tensor<1xf32> -> tensor<1x1xf32>
  %v49 = broadcast %v48 dynamic_dims(%d1, %d1) : tensor<1x1xf32> -> tensor<?x?xf32>
  %v50 = binary_select %v42, %v47, %v49 : tensor<?x?xf32>
  %v51 = cos %v43 : tensor<?x8xf32>
  %v52 = sin %v43 : tensor<?x8xf32>
  %v53 = reshape %v7 : tensor<32x32xf32> -> tensor<1x32x32xf32>
  %v54 = matmul(%v45, %v53) : (tensor<2x?x32xf32>, tensor<1x32x32xf32>) -> tensor<2x?x32xf32>
  %v55 = reshape %v8 : tensor<32x16xf32> -> tensor<1x32x16xf32>
  %v56 = matmul(%v45, %v55) : (tensor<2x?x32xf32>, tensor<1x32x16xf32>) -> tensor<2x?x16xf32>
  %v57 = reshape %v9 : tensor<32x16xf32> -> tensor<1x32x16xf32>
  %v58 = matmul(%v45, %v57) : (tensor<2x?x32xf32>, tensor<1x32x16xf32>) -> tensor<2x?x16xf32>
  %v59 = reshape %v54 dynamic_dims(%d1) : tensor<2x?x32xf32> -> tensor<2x?x4x8xf32>
  %v60 = reshape %v56 dynamic_dims(%d1) : tensor<2x?x16xf32> -> tensor<2x?x2x8xf32>
  %v61 = reshape %v58 dynamic_dims(%d1) : tensor<2x?x16xf32> -> tensor<2x?x2x8xf32>
  %v62 = transpose %v59 permutation = [0, 2, 1, 3] : tensor<2x?x4x8xf32> -> tensor<2x4x?x8xf32>
  %v63 = transpose %v60 permutation = [0, 2, 1, 3] : tensor<2x?x2x8xf32> -> tensor<2x2x?x8xf32>
  %v64 = transpose %v61 permutation = [0, 2, 1, 3] : tensor<2x?x2x8xf32> -> tensor<2x2x?x8xf32>
  %v65 = slice %v62 starts = [0, 0, 0, 0] limits = [2, 4, 0, 4] strides = [1, 1, 1, 1] : tensor<2x4x?x8xf32> -> tensor<2x4x?x4xf32>
  %v66 = slice %v62 starts = [0, 0, 0, 4] limits = [2, 4, 0, 8] strides = [1, 1, 1, 1] : tensor<2x4x?x8xf32> -> tensor<2x4x?x4xf32>
  %v67 = reshape %v51 dynamic_dims(%d1) : tensor<?x8xf32> -> tensor<1x1x?x8xf32>
  %v68 = mul %v62, %v67 : (tensor<2x4x?x8xf32>, tensor<1x1x?x8xf32>) -> tensor<2x4x?x8xf32>
  %v69 = slice %v63 starts = [0, 0, 0, 0] limits = [2, 2, 0, 4] strides = [1, 1, 1, 1] : tensor<2x2x?x8xf32> -> tensor<2x2x?x4xf32>
  %v70 = slice %v63 starts = [0, 0, 0, 4] limits = [2, 2, 0, 8] strides = [1, 1, 1, 1] : tensor<2x2x?x8xf32> -> tensor<2x2x?x4xf32>
  %v71 = reshape %v51 dynamic_dims(%d1) : tensor<?x8xf32> -> tensor<1x1x?x8xf32>
  %v72 = mul %v63, %v71 : (tensor<2x2x?x8xf32>, tensor<1x1x?x8xf32>) -> tensor<2x2x?x8xf32>
  %v73 = reshape %v64 dynamic_dims(%d1) : tensor<2x2x?x8xf32> -> tensor<2x2x1x?x8xf32>
  %v74 = neg %v66 : tensor<2x4x?x4xf32>
  %v75 = neg %v70 : tensor<2x2x?x4xf32>
  %v76 = broadcast %v73 dynamic_dims(%d1) : tensor<2x2x1x?x8xf32> -> tensor<2x2x2x?x8xf32>
  %v77 = concatenate %v74, %v65 dimension = 3 : (tensor<2x4x?x4xf32>, tensor<2x4x?x4xf32>) -> tensor<2x4x?x8xf32>
  %v78 = concatenate %v75, %v69 dimension = 3 : (tensor<2x2x?x4xf32>, tensor<2x2x?x4xf32>) -> tensor<2x2x?x8xf32>
  %v79 = reshape %v52 dynamic_dims(%d1) : tensor<?x8xf32> -> tensor<1x1x?x8xf32>
  %v80 = mul %v77, %v79 : (tensor<2x4x?x8xf32>, tensor<1x1x?x8xf32>) -> tensor<2x4x?x8xf32>
  %v81 = reshape %v52 dynamic_dims(%d1) : tensor<?x8xf32> -> tensor<1x1x?x8xf32>
  %v82 = mul %v78, %v81 : (tensor<2x2x?x8xf32>, tensor<1x1x?x8xf32>) -> tensor<2x2x?x8xf32>
  %v83 = reshape %v76 dynamic_dims(%d1) : tensor<2x2x2x?x8xf32> -> tensor<2x4x?x8xf32>
  %v84 = add %v68, %v80 : tensor<2x4x?x8xf32>
  %v85 = add %v72, %v82 : tensor<2x2x?x8xf32>
  %c86 = constant dense<5.94603557501360513e-01> : tensor<1x1x1x1xf32>
  %v87 = mul %v84, %c86 : (tensor<2x4x?x8xf32>, tensor<1x1x1x1xf32>) -> tensor<2x4x?x8xf32>
  %v88 = reshape %v85 dynamic_dims(%d1) : tensor<2x2x?x8xf32> -> tensor<2x2x1x?x8xf32>
  %v89 = reshape %v83 dynamic_dims(%d1) : tensor<2x4x?x8xf32> -> tensor<8x?x8xf32>
  %v90 = broadcast %v88 dynamic_dims(%d1) : tensor<2x2x1x?x8xf32> -> tensor<2x2x2x?x8xf32>
  %v91 = reshape %v87 dynamic_dims(%d1) : tensor<2x4x?x8xf32> -> tensor<8x?x8xf32>
  %v92 = reshape %v90 dynamic_dims(%d1) : tensor<2x2x2x?x8xf32> -> tensor<2x4x?x8xf32>
  %v93 = transpose %v92 permutation = [0, 1, 3, 2] : tensor<2x4x?x8xf32> -> tensor<2x4x8x?xf32>
  %c94 = constant dense<5.94603557501360513e-01> : tensor<1x1x1x1xf32>
  %v95 = mul %v93, %c94 : (tensor<2x4x8x?xf32>, tensor<1x1x1x1xf32>) -> tensor<2x4x8x?xf32>
  %v96 = reshape %v95 dynamic_dims(%d1) : tensor<2x4x8x?xf32> -> tensor<8x8x?xf32>
  %v97 = matmul(%v91, %v96) : (tensor<8x?x8xf32>, tensor<8x8x?xf32>) -> tensor<8x?x?xf32>
  %v98 = reshape %v97 dynamic_dims(%d1, %d1) : tensor<8x?x?xf32> -> tensor<2x4x?x?xf32>
  %v99 = reshape %v50 dynamic_dims(%d1, %d1) : tensor<?x?xf32> -> tensor<1x1x?x?xf32>
  %v100 = add %v98, %v99 : (tensor<2x4x?x?xf32>, tensor<1x1x?x?xf32>) -> tensor<2x4x?x?xf32>
  %v101 = reduce(%v100)<dimensions = [3], reduction_mode = <max>> : tensor<2x4x?x?xf32> -> tensor<2x4x?x1xf32>
  %v102 = sub %v100, %v101 : (tensor<2x4x?x?xf32>, tensor<2x4x?x1xf32>) -> tensor<2x4x?x?xf32>
  %v103 = exp %v102 : tensor<2x4x?x?xf32>
  %v104 = reduce(%v103)<dimensions = [3], reduction_mode = <add>> : tensor<2x4x?x?xf32> -> tensor<2x4x?x1xf32>
  %v105 = div %v103, %v104 : (tensor<2x4x?x?xf32>, tensor<2x4x?x1xf32>) -> tensor<2x4x?x?xf32>
  %c106 = constant dense<0xFF800000> : tensor<1x1x1x1xf32>
  %v107 = broadcast %c106 dynamic_dims(%d1, %d1) : tensor<1x1x1x1xf32> -> tensor<2x4x?x?xf32>
  %v108 = cmp %v100 oeq %v107 : tensor<2x4x?x?xf32>
  %c109 = constant dense<0.00000000000000000e+00> : tensor<1x1x1x1xf32>
  %v110 = broadcast %c109 dynamic_dims(%d1, %d1) : tensor<1x1x1x1xf32> -> tensor<2x4x?x?xf32>
  %v111 = not %v108 : tensor<2x4x?x?xi1>
  %v112 = convert %v111 : tensor<2x4x?x?xi1> -> tensor<2x4x?x?xsi32>
  %v113 = reduce(%v112)<dimensions = [3], reduction_mode = <max>> : tensor<2x4x?x?xsi32> -> tensor<2x4x?x1xsi32>
  %v114 = convert %v113 : tensor<2x4x?x1xsi32> -> tensor<2x4x?x1xi1>
  %v115 = not %v114 : tensor<2x4x?x1xi1>
  %v116 = broadcast %v115 dynamic_dims(%d1, %d1) : tensor<2x4x?x1xi1> -> tensor<2x4x?x?xi1>
  %v117 = binary_select %v116, %v110, %v105 : tensor<2x4x?x?xf32>
  %v118 = reshape %v117 dynamic_dims(%d1, %d1) : tensor<2x4x?x?xf32> -> tensor<8x?x?xf32>
  %v119 = matmul(%v118, %v89) : (tensor<8x?x?xf32>, tensor<8x?x8xf32>) -> tensor<8x?x8xf32>
  %v120 = reshape %v119 dynamic_dims(%d1) : tensor<8x?x8xf32> -> tensor<2x4x?x8xf32>
  %v121 = transpose %v120 permutation = [0, 2, 1, 3] : tensor<2x4x?x8xf32> -> tensor<2x?x4x8xf32>
  %v122 = reshape %v121 dynamic_dims(%d1) : tensor<2x?x4x8xf32> -> tensor<2x?x32xf32>
  %v123 = reshape %v16 : tensor<32x32xf32> -> tensor<1x32x32xf32>
  %v124 = matmul(%v122, %v123) : (tensor<2x?x32xf32>, tensor<1x32x32xf32>) -> tensor<2x?x32xf32>
  %v125 = add %in1, %v124 : tensor<2x?x32xf32>
  %v126 = mul %v125, %v125 : tensor<2x?x32xf32>
  %v127 = reduce(%v126)<dimensions = [2], reduction_mode = <add>> : tensor<2x?x32xf32> -> tensor<2x?x1xf32>
  %c128 = constant dense<3.12500000000000000e-02> : tensor<1x1x1xf32>
  %v129 = mul %v127, %c128 : (tensor<2x?x1xf32>, tensor<1x1x1xf32>) -> tensor<2x?x1xf32>
  %c130 = constant dense<9.99999999999999955e-07> : tensor<1x1x1xf32>
  %v131 = add %v129, %c130 : (tensor<2x?x1xf32>, tensor<1x1x1xf32>) -> tensor<2x?x1xf32>
  %v132 = rsqrt %v131 : tensor<2x?x1xf32>
  %v133 = mul %v125, %v132 : (tensor<2x?x32xf32>, tensor<2x?x1xf32>) -> tensor<2x?x32xf32>
  %v134 = reshape %in10 : tensor<32xf32> -> tensor<1x1x32xf32>
  %v135 = mul %v133, %v134 : (tensor<2x?x32xf32>, tensor<1x1x32xf32>) -> tensor<2x?x32xf32>
  %v136 = reshape %v17 : tensor<32x64xf32> -> tensor<1x32x64xf32>
  %v137 = matmul(%v135, %v136) : (tensor<2x?x32xf32>, tensor<1x32x64xf32>) -> tensor<2x?x64xf32>
  %v138 = reshape %v18 : tensor<32x64xf32> -> tensor<1x32x64xf32>
  %v139 = matmul(%v135, %v138) : (tensor<2x?x32xf32>, tensor<1x32x64xf32>) -> tensor<2x?x64xf32>
  %v140 = sigmoid_fwd %v137 : tensor<2x?x64xf32>
  %v141 = mul %v137, %v140 : tensor<2x?x64xf32>
  %v142 = mul %v141, %v139 : tensor<2x?x64xf32>
  %v143 = reshape %v19 : tensor<64x32xf32> -> tensor<1x64x32xf32>
  %v144 = matmul(%v142, %v143) : (tensor<2x?x64xf32>, tensor<1x64x32xf32>) -> tensor<2x?x32xf32>
  %v145 = add %v125, %v144 : tensor<2x?x32xf32>
  results %v145 : tensor<2x?x32xf32>
}
