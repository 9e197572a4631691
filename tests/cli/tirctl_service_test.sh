#!/bin/bash
# tirctl against a tir-coordinator with a host tir-worker (real processes on
# loopback): every service verb, -o json parses, exit codes 0 / 1 (rejected,
# reason on stderr) / 2 (usage).
set -u
tirctl=$PWD/client/tirctl
coordinator=$PWD/server/tir-coordinator
worker=$PWD/worker/tir-worker
runner=$PWD/worker/runner/tir-worker-runner
graphs=$PWD/tests/cli/graphs
dynamic=$PWD/tests/graphs/dynamic
cd "$TEST_TMPDIR"
export XDG_CACHE_HOME=$TEST_TMPDIR/cache
fail=0
check() {  # check NAME EXPECTED ACTUAL
  if [[ "$2" != "$3" ]]; then echo "FAIL: $1: expected '$2', got '$3'"; fail=1; else echo "ok: $1"; fi
}
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
server=127.0.0.1:$port
"$coordinator" --listen="$server" --db="$TEST_TMPDIR/db" 2>coordinator.log &
cpid=$!
"$worker" --coordinator="$server" --backend=host --work-dir="$TEST_TMPDIR/w" --runner="$runner" 2>worker.log &
wpid=$!
trap 'kill $wpid $cpid 2>/dev/null; wait 2>/dev/null' EXIT
for _ in $(seq 100); do
  "$tirctl" workers --server "$server" 2>/dev/null | grep -q 'host.*ready' && break
  sleep 0.2
done
check "worker registered" 1 "$("$tirctl" workers --server "$server" | grep -c 'workers/.*host')"

# compile: the tuned bundle is written; the repeat is a cache hit.
"$tirctl" compile "$graphs/softmax_fits.mlir" --server "$server" --arch host --wait -o bundle.pb >out.txt 2>err.txt
check "compile exit" 0 $?
check "compile tuned" 1 "$(grep -c ': tuned in' out.txt)"
check "bundle written" 1 "$([[ -s bundle.pb ]] && echo 1)"
key=$(grep -o 'kernels/[0-9a-f]*' out.txt | head -1 | cut -d/ -f2)
check "key" 64 "${#key}"
"$tirctl" compile "$graphs/softmax_fits.mlir" --server "$server" --arch host -o again.pb >out2.txt
check "repeat is a cache hit" 1 "$(grep -c 'cache hit' out2.txt)"
json=$("$tirctl" compile "$graphs/softmax_fits.mlir" --server "$server" --arch host -o again.pb --output=json)
check "compile json" "True $key" "$(echo "$json" | python3 -c 'import json,sys; o=json.load(sys.stdin); print(o["metadata"]["cache_hit"], o["response"]["key"])')"

# get / ls (text and json).
check "get" 1 "$("$tirctl" get "$key" --server "$server" | grep -c "kernels/$key")"
check "get json" "$key" "$("$tirctl" get "$key" --server "$server" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')"
check "ls" 1 "$("$tirctl" ls --server "$server" | grep -c "$key")"
check "ls json" 1 "$("$tirctl" ls --server "$server" -o json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["kernels"]))')"

# ops: heuristic-now answers at once; the operation can be read, waited on and watched.
op=$("$tirctl" compile "$graphs/layernorm_fits.mlir" --server "$server" --arch host --heuristic-now --output=json \
  | python3 -c 'import json,sys; o=json.load(sys.stdin); print(o["name"], o["response"]["tuning"].get("tuned", False))')
check "heuristic-now untuned" "False" "${op#* }"
name=${op% *}
"$tirctl" ops get "$name" --server "$server" -o json | python3 -c 'import json,sys; json.load(sys.stdin)'
check "ops get" 0 $?
check "ops wait" 1 "$("$tirctl" ops wait "$name" --server "$server" | grep -c ': done')"
check "ops watch" 1 "$("$tirctl" ops watch "$name" --server "$server" | grep -c ': done')"

# cancel a running compile. --timeout bounds the whole command: long enough
# to submit the graph, far shorter than its tuning (tens of seconds).
"$tirctl" compile "$graphs/matmul_bias_gelu_residual.mlir" --server "$server" --arch host --timeout 4 \
  >/dev/null 2>cancel_err.txt
check "compile past --timeout exit" 1 $?
check "compile past --timeout names the operation" 1 "$(grep -c 'is still running after' cancel_err.txt)"
running=$(grep -o 'operations/[0-9a-f]*' cancel_err.txt | head -1)
check "cancel" 1 "$("$tirctl" ops cancel "$running" --server "$server" | grep -c 'CANCELLED')"

# rm.
check "rm" 1 "$("$tirctl" rm "$key" --server "$server" | grep -c deleted)"
"$tirctl" get "$key" --server "$server" >/dev/null 2>err.txt
check "get after rm exit" 1 $?
check "get after rm reason" 1 "$(grep -c NOT_FOUND err.txt)"

# A graph with a dynamic dim at two shapes of one bucket and one of the
# next: each served shape is verified here against the reference (--verify).
"$tirctl" compile "$dynamic/softmax_rows.mlir" --server "$server" --arch host --verify \
  --shape 0=300x256 --shape 0=400x256 --shape 0=700x256 >dyn.txt 2>err.txt
check "dynamic compile exit" 0 $?
check "dynamic shapes compiled" 3 "$(grep -c '^at shape 0=' dyn.txt)"
check "dynamic: one tuning per bucket" 2 "$(grep -c ': tuned in' dyn.txt)"
check "dynamic: tuned at the bucket's top" 2 "$(grep -c 'bucket 0:0=257..512 (pow2), tuned at 0=512x256' dyn.txt)"
check "dynamic shape checked, not tuned" 1 "$(grep -c 'checked at this shape' dyn.txt)"
check "dynamic each verified here" 3 "$(grep -c 'verified output 0' dyn.txt)"
check "dynamic served sized" 1 "$(grep -c 'served at 0=400x256: every kernel verified there on workers/' dyn.txt)"
check "ls shows buckets" 2 "$("$tirctl" ls --server "$server" | grep -c 'bucket 0:0=')"
dkey=$(grep -o 'kernels/[0-9a-f]*' dyn.txt | head -1 | cut -d/ -f2)
check "get shows the bucket" 1 "$("$tirctl" get "$dkey" --server "$server" | grep -c 'bucket 0:0=257..512')"
"$tirctl" compile "$dynamic/softmax_rows.mlir" --server "$server" --arch host >/dev/null 2>err.txt
check "dynamic without --shape exit" 1 $?
check "dynamic without --shape reason" 1 "$(grep -c 'SHAPE_HINT_MISSING: .*input 0 dim 0' err.txt)"
"$tirctl" compile "$dynamic/softmax_rows.mlir" --server "$server" --arch host --shape 0=x >/dev/null 2>&1
check "bad --shape exit" 2 $?

# TensorIR's softmax with both dims dynamic (`?x1` broadcast to `?x?`
# without dynamic_dims): every kernel carries the sizes the whole graph
# infers, so each is checked at 16x1000 on the worker and the bundle
# computes the graph here.
"$tirctl" compile "$dynamic/softmax_dynamic.mlir" --server "$server" --arch host --verify --shape 0=16x1000 \
  >dynsm.txt 2>err.txt
check "dynamic softmax exit" 0 $?
check "dynamic softmax tuned" 1 "$(grep -c ': tuned in' dynsm.txt)"
check "dynamic softmax verified here" 1 "$(grep -c 'verified output 0: relative L2 error .* (bound .*)$' dynsm.txt)"
check "dynamic softmax no wrong output" 0 "$(grep -c WRONG dynsm.txt)"

# An embedding lookup (tir.gather: 37 int64 ids into a 1000 x 64 table),
# tuned on the host worker and run here against the reference.
"$tirctl" compile "$graphs/embedding.mlir" --server "$server" --arch host --verify >emb.txt 2>err.txt
check "embedding exit" 0 $?
check "embedding tuned" 1 "$(grep -c ': tuned in' emb.txt)"
check "embedding verified here" 1 "$(grep -c 'verified output 0: relative L2 error 0 ' emb.txt)"

# errors: a rejected graph (reason on stderr), an unknown arch, bad usage.
"$tirctl" compile "$graphs/invalid_shape.mlir" --server "$server" --arch host >/dev/null 2>err.txt
check "rejected graph exit" 1 $?
check "rejected graph reason" 1 "$(grep -c 'INVALID_GRAPH' err.txt)"
"$tirctl" compile "$graphs/softmax_fits.mlir" --server "$server" --arch sm_42 >/dev/null 2>err.txt
check "unknown arch exit" 1 $?
check "unknown arch reason" 1 "$(grep -c 'UNKNOWN_ARCH' err.txt)"
"$tirctl" compile --server "$server" >/dev/null 2>&1
check "missing file exit" 2 $?
"$tirctl" ops frobnicate x --server "$server" >/dev/null 2>&1
check "bad ops verb exit" 1 $?
"$tirctl" compile "$graphs/softmax_fits.mlir" --budget zero >/dev/null 2>&1
check "bad budget exit" 2 $?
"$tirctl" compile "$graphs/softmax_fits.mlir" --wait --heuristic-now >/dev/null 2>&1
check "conflicting modes exit" 2 $?
"$tirctl" --help | grep -q 'exit codes: 0 ok, 1 failure'
check "help documents exit codes" 0 $?
exit $fail
