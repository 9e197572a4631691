#!/bin/bash
# TensorIR's constructs through tirctl, as a TensorIR user runs them: every
# graph of tests/graphs/tensorir_constructs.mlir plans for sm_90a (with what
# the graph's own tile became), emits and verifies on the host, and compiles
# to sm_90a cubins; a graph without outputs plans to nothing and says so; a
# graph too large to verify here is refused at once, with size and limit; a
# reduce with the customize mode is refused with the way to write it.
set -u
tirctl=$PWD/client/tirctl
constructs=$PWD/tests/graphs/tensorir_constructs.mlir
cd "${TEST_TMPDIR:-$(mktemp -d)}"
fail=0
check() {
  if [[ "$2" != "$3" ]]; then echo "FAIL: $1: expected '$2', got '$3'"; fail=1; else echo "ok: $1"; fi
}

"$tirctl" plan "$constructs" --arch sm_90a >plan.txt 2>&1
check "plan exit" 0 $?
check "plan covers every graph" 5 "$(grep -c '^plan of @' plan.txt)"
# On sm_90a the 32 x 16 tile of the f16 matmul becomes the smallest wgmma
# tile holding it; on sm_80 (mma.sync) it is honoured as it is.
check "plan says what tile_size became" 1 "$(grep -c 'user tile: tile_size \[32, 16\] became the default candidate block_k=64 block_m=64 block_n=64 .*rounded up to 64x64' plan.txt)"
"$tirctl" plan "$constructs" --arch sm_80 >plan80.txt 2>&1
check "sm_80 plan says what tile_size became" 1 "$(grep -c 'user tile: tile_size \[32, 16\] became the default candidate block_k=32 block_m=32 block_n=16' plan80.txt)"
check "plan says what tile_candidates became" 1 "$(grep -c 'user tile: tile_candidates\[0\] \[4\] became the default candidate' plan.txt)"
"$tirctl" plan "$constructs" --arch sm_90a -o json | python3 -c 'import json,sys; p=json.load(sys.stdin); assert len(p) == 5 and p[4]["kernels"][0]["user_tile"]'
check "plan json lists the plans" 0 $?

"$tirctl" emit "$constructs" --arch host --verify -o host >emit.txt 2>&1
check "emit --verify exit" 0 $?
check "emit --verify wrong outputs" 0 "$(grep -c WRONG emit.txt)"
check "emit --verify checked every output" 10 "$(grep -c ' ok$' emit.txt)"

"$tirctl" emit "$constructs" --arch sm_90a -o gpu >cubins.txt 2>&1
check "emit sm_90a exit" 0 $?
check "sm_90a cubins" "$(ls gpu/*.cu | wc -l)" "$(ls gpu/*.sm_90a.cubin | wc -l)"
check "the aligned run is proven (no run-time test)" 1 "$(grep -l 'tir_load_run_aligned<' gpu/layouts_k*.cu | wc -l)"

cat >nothing.mlir <<'MLIR'
nv_tensor_ir.graph @nothing(%x: tensor<4xf32>) {
  results
}
MLIR
"$tirctl" plan nothing.mlir --arch sm_90a >none.txt 2>&1
check "no outputs: plan exit" 0 $?
check "no outputs: plan says why" 1 "$(grep -c '0 kernels; the graph has no outputs, so there is nothing to compute' none.txt)"
"$tirctl" emit nothing.mlir --arch host -o none >none.txt 2>&1
check "no outputs: emit exit" 1 $?
check "no outputs: emit reason" 1 "$(grep -c 'INVALID_GRAPH: the graph has no outputs: there is nothing to compute' none.txt)"

cat >huge.mlir <<'MLIR'
nv_tensor_ir.graph @huge(%in: tensor<2818572288xf32>) -> tensor<2818572288xf32> {
  %out = abs %in : tensor<2818572288xf32>
  results %out : tensor<2818572288xf32>
}
MLIR
start=$(date +%s)
TIR_VERIFY_MEMORY_BYTES=8000000000 "$tirctl" emit huge.mlir --arch host --verify -o huge >huge.txt 2>&1
check "huge: verify refused" 1 $?
check "huge: size and limit named" 1 "$(grep -c 'LIMIT_EXCEEDED: verifying @huge_k0 on the host needs about .* GiB (its largest value has 2818572288 elements.*above the limit of 7.5 GiB' huge.txt)"
check "huge: refused at once" 1 "$(( $(date +%s) - start < 20 ))"
"$tirctl" emit huge.mlir --arch sm_90a -o huge-gpu >/dev/null 2>&1
check "huge: compiles for sm_90a" 0 $?

cat >custom.mlir <<'MLIR'
nv_tensor_ir.graph @custom(%x: tensor<4x8xf32>) -> tensor<4x1xf32> {
  %r = reduce(%x) <dimensions = [1], reduction_mode = <customize>> : tensor<4x8xf32> -> tensor<4x1xf32>
  results %r : tensor<4x1xf32>
}
MLIR
"$tirctl" plan custom.mlir --arch sm_90a >custom.txt 2>&1
check "customize: refused" 1 $?
check "customize: says to use reduce_ud" 1 "$(grep -c 'write the reduction as reduce_ud with a body' custom.txt)"

if ((fail)); then cat plan.txt emit.txt cubins.txt; fi
exit $fail
