#!/bin/bash
# tirctl plan end to end: text and JSON output, the issue's partition cases by
# kernel count, exit codes 0 / 1 (rejected graph, reason on stderr) / 2 (usage).
set -u
tirctl=client/tirctl
graphs=tests/cli/graphs
fail=0
check() {  # check NAME EXPECTED ACTUAL
  if [[ "$2" != "$3" ]]; then echo "FAIL: $1: expected '$2', got '$3'"; fail=1; else echo "ok: $1"; fi
}
kernels() { python3 -c 'import json,sys; print(len(json.load(sys.stdin)["kernels"]))'; }

for case in "pointwise_broadcast_transpose 1 sm_90a" "matmul_bias_gelu_residual 1 sm_90a" \
            "reduction_fed_by_pointwise 1 sm_90a" "softmax_fits 1 sm_90a" "layernorm_fits 1 sm_90a" \
            "softmax_4m 2 sm_90a" "two_matmuls 2 sm_90a" "column_sum_1m 2 sm_90a" \
            "matmul_reduced_over_n 2 sm_90a" "reshape_remaps_reduction 2 sm_90a" \
            "concat_of_reductions 3 sm_90a" "softmax_fits 1 host"; do
  set -- $case
  out=$("$tirctl" plan "$graphs/$1.mlir" --arch "$3" -o json)
  check "$1 exit" 0 $?
  check "$1 kernels on $3" "$2" "$(echo "$out" | kernels)"
done

text=$("$tirctl" plan "$graphs/softmax_4m.mlir")
check "text names the split" 1 "$(echo "$text" | grep -c -m1 'split: the reduction')"

"$tirctl" plan "$graphs/invalid_shape.mlir" >/dev/null 2>err.txt
check "rejected graph exit" 1 $?
check "rejected graph reason" 1 "$(grep -c 'INVALID_GRAPH' err.txt)"

"$tirctl" plan "$graphs/softmax_fits.mlir" --arch sm_61 >/dev/null 2>err.txt
check "unknown arch exit" 1 $?
check "unknown arch reason" 1 "$(grep -c 'UNKNOWN_ARCH' err.txt)"

"$tirctl" plan >/dev/null 2>&1
check "missing file is usage" 2 $?
"$tirctl" frobnicate >/dev/null 2>&1
check "unknown verb is usage" 2 $?
"$tirctl" plan x.mlir --bogus >/dev/null 2>&1
check "unknown flag is usage" 2 $?
exit $fail
