#!/bin/bash
# tirctl emit end to end: host build with --verify on graphs in both forms,
# cubins for sm_90a and sm_80, GPU kernels verified lane by lane, and clear
# refusals.
set -u
tirctl=client/tirctl
graphs=tests/cli/graphs
out="${TEST_TMPDIR:-$(mktemp -d)}/emit"
fail=0
check() {
  if [[ "$2" != "$3" ]]; then echo "FAIL: $1: expected '$2', got '$3'"; fail=1; else echo "ok: $1"; fi
}

for g in layernorm_fits softmax_fits reduction_fed_by_pointwise pointwise_broadcast_transpose reshape_dynamic; do
  "$tirctl" emit "$graphs/$g.mlir" --arch host --verify -o "$out/$g-host" > report.txt 2>&1
  check "$g host --verify exit" 0 $?
  check "$g host --verify reports no wrong output" 0 "$(grep -c WRONG report.txt)"
  check "$g host --verify checked outputs" 1 "$(grep -c -m1 ' ok$' report.txt)"
done

# The default pointwise candidate (vector_width 4 on a 256-wide row) runs
# 4-element runs per thread; a static row that is a multiple of the run
# leaves no element loop behind them. Run-time extents keep the element
# loop, in a 32-bit and a 64-bit copy behind one test of the point count.
check "pointwise default takes 4-element runs" 1 "$(grep -c 'for (int v = 0; v < 4; ++v)' "$out/pointwise_broadcast_transpose-host"/*.cu)"
check "pointwise static runs leave no element loop" 0 "$(grep -c 'for (tir_i64 t = threadIdx.x' "$out/pointwise_broadcast_transpose-host"/*.cu)"
check "dynamic pointwise keeps the element loop" 2 "$(grep -c 'for (tir_i64 t = threadIdx.x' "$out/reshape_dynamic-host"/*.cu)"
check "dynamic pointwise tests for 32-bit indices" 1 "$(grep -c 'if (total <= 4294967295)' "$out/reshape_dynamic-host"/*.cu)"

for arch in sm_90a sm_80; do
  "$tirctl" emit "$graphs/matmul_bias_gelu_residual.mlir" --arch "$arch" -o "$out/mlp-$arch" >/dev/null
  check "matmul $arch exit" 0 $?
  check "matmul $arch cubin is ELF" "ELF" "$(head -c 4 "$out/mlp-$arch/mlp_k0.$arch.cubin" | tail -c 3)"
  check "matmul $arch source written" 1 "$(ls "$out/mlp-$arch"/*.cu | wc -l)"
done

# --candidate KEY=VALUE,...: the best-ranked candidate with those parameters
# (a raster order along tile columns of the 512 x 4096 prefill GEMM).
"$tirctl" emit "$graphs/matmul_bias_gelu_residual.mlir" --arch sm_90a --candidate raster=1,persistent=1 \
  -o "$out/mlp-raster" > report.txt 2>&1
check "candidate by parameters exit" 0 $?
check "candidate by parameters takes them" 1 "$(grep -c 'persistent=1 raster=1 ' report.txt)"
check "candidate by parameters emits its order" 1 "$(grep -c -m1 'band = pid / width' "$out/mlp-raster"/*.cu)"
"$tirctl" emit "$graphs/matmul_bias_gelu_residual.mlir" --arch sm_90a --candidate raster=9 -o "$out/z" >/dev/null 2>err.txt
check "no candidate with those parameters" 1 $?
check "no candidate reason" 1 "$(grep -c NO_SUCH_CANDIDATE err.txt)"
"$tirctl" emit "$graphs/matmul_bias_gelu_residual.mlir" --arch sm_90a --candidate raster=x -o "$out/z" >/dev/null 2>err.txt
check "malformed parameter selector" 1 $?
check "malformed parameter selector reason" 1 "$(grep -c "is not KEY=INTEGER" err.txt)"

# A second emit of the same kernels comes from the compile cache.
export XDG_CACHE_HOME="$out/cache"
"$tirctl" emit "$graphs/softmax_fits.mlir" --arch sm_90a -o "$out/c1" > first.txt
"$tirctl" emit "$graphs/softmax_fits.mlir" --arch sm_90a -o "$out/c2" > second.txt
check "first emit compiles" 1 "$(grep -c 'compiled in' first.txt)"
check "second emit hits the cache" 1 "$(grep -c 'from the compile cache' second.txt)"
check "cached cubin is identical" "" "$(cmp "$out/c1/softmax_k0.sm_90a.cubin" "$out/c2/softmax_k0.sm_90a.cubin")"

# Every op of tests/graphs/every_op.mlir (scalar results and stitched
# kernel graphs included), in both forms.
for a in host sm_90a; do
  "$tirctl" emit tests/graphs/every_op.mlir --arch $a --verify -o "$out/every-$a" > report.txt 2>&1
  check "every_op $a --verify exit" 0 $?
  check "every_op $a --verify reports no wrong output" 0 "$(grep -c ' WRONG$' report.txt)"
  check "every_op $a --verify checked every output" 22 "$(grep -c ' ok$' report.txt)"
done

# --verify for a GPU arch runs the GPU kernels lane by lane on the CPU.
"$tirctl" emit "$graphs/softmax_fits.mlir" --arch sm_90a --verify -o "$out/lanes" > report.txt 2>&1
check "sm_90a --verify exit" 0 $?
check "sm_90a --verify runs lane by lane" 1 "$(grep -c -m1 'lane by lane on the CPU' report.txt)"
check "sm_90a --verify reports no wrong output" 0 "$(grep -c WRONG report.txt)"
check "sm_90a --verify checked outputs" 1 "$(grep -c -m1 ' ok$' report.txt)"
"$tirctl" emit "$graphs/softmax_fits.mlir" --arch host --candidate 99999 -o "$out/x" >/dev/null 2>err.txt
check "bad candidate" 1 $?
"$tirctl" emit "$graphs/invalid_shape.mlir" --arch host -o "$out/y" >/dev/null 2>err.txt
check "invalid graph" 1 $?
check "invalid graph reason" 1 "$(grep -c INVALID_GRAPH err.txt)"
exit $fail
