#!/bin/bash
# tir-worker started the way users start it, never with --runner:
#  1. installed by deploy/install.sh and started with the systemd unit's
#     flags (host backend instead of a GPU): it finds its runner in
#     libexec/tir and tunes a graph to a bundle through a real coordinator;
#  2. from Bazel's output tree (bazel-bin/worker/tir-worker, what
#     `bazel run //worker:tir-worker` runs): it finds runner/ beside it;
#  3. copied somewhere without its runner: exit 2, naming every path tried;
#  4. with a runner that dies before saying hello: exit 2, saying so.
set -u
runfiles=$PWD
cd "$TEST_TMPDIR"
export XDG_CACHE_HOME=$TEST_TMPDIR/cache
fail=0
check() {  # check NAME EXPECTED ACTUAL
  if [[ "$2" != "$3" ]]; then echo "FAIL: $1: expected '$2', got '$3'"; fail=1; else echo "ok: $1"; fi
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

cat >add.mlir <<'MLIR'
tir.graph @add(%a: tensor<256x512xf32>, %b: tensor<256x512xf32>) -> tensor<256x512xf32> {
  %c = add %a, %b : tensor<256x512xf32>
  results %c : tensor<256x512xf32>
}
MLIR

# 1. The installed layout.
prefix=$TEST_TMPDIR/opt/tir
"$runfiles/deploy/install.sh" --from "$runfiles" --prefix "$prefix" >install.log 2>&1
check "install exit" 0 $?
check "runner installed in libexec" 1 "$([[ -x $prefix/libexec/tir/tir-worker-runner ]] && echo 1)"
check "no runner beside the worker" 1 "$([[ ! -e $prefix/bin/tir-worker-runner ]] && echo 1)"
port=$(free_port)
server=127.0.0.1:$port
"$prefix/bin/tir-coordinator" --listen="$server" --db="$TEST_TMPDIR/db" 2>coordinator.log &
cpid=$!
# The flags of deploy/systemd/tir-worker@.service, with the host backend.
"$prefix/bin/tir-worker" --coordinator="$server" --backend=host --compile-threads=2 \
  --metrics-port="$(free_port)" --work-dir="$TEST_TMPDIR/worker0" 2>worker.log &
wpid=$!
trap 'kill $wpid $cpid 2>/dev/null; wait 2>/dev/null' EXIT
for _ in $(seq 150); do
  "$prefix/bin/tirctl" workers --server "$server" 2>/dev/null | grep -q 'host.*ready' && break
  sleep 0.2
done
check "installed worker registered" 1 "$("$prefix/bin/tirctl" workers --server "$server" | grep -c 'workers/.*host')"
check "installed worker names its runner" 1 "$(grep -c "^tir-worker: runner $prefix/libexec/tir/tir-worker-runner$" worker.log)"
"$prefix/bin/tirctl" compile add.mlir --server "$server" --arch host --wait -o add.pb --verify >compile.out 2>compile.err
check "compile exit" 0 $?
check "tuned" 1 "$(grep -c ': tuned in' compile.out)"
check "bundle written" 1 "$([[ -s add.pb ]] && echo 1)"
check "every candidate passed" 0 "$(grep -c 'tir-worker: kernel' worker.log)"
kill $wpid
wait $wpid
check "worker drains on SIGTERM" 0 $?

# 2. Bazel's output tree (the worker binary as bazel-bin holds it).
"$runfiles/worker/tir-worker" --coordinator="$server" --backend=host --work-dir="$TEST_TMPDIR/worker1" \
  2>bazel-worker.log &
wpid=$!
for _ in $(seq 150); do
  grep -q "^tir-worker: runner " bazel-worker.log && break
  sleep 0.1
done
check "bazel-bin worker finds runner/" 1 "$(grep -c '^tir-worker: runner .*/worker/runner/tir-worker-runner$' bazel-worker.log)"
kill $wpid
wait $wpid 2>/dev/null

# 3. Without its runner (and outside any runfiles tree).
mkdir -p lonely
cp -L "$runfiles/worker/tir-worker" lonely/
env -u RUNFILES_DIR -u RUNFILES_MANIFEST_FILE timeout 60 lonely/tir-worker --coordinator="$server" --backend=host 2>lonely.log
check "no runner: exit 2" 2 $?
check "no runner: paths named" 1 "$(grep -c "cannot find tir-worker-runner; tried $TEST_TMPDIR/lonely/tir-worker-runner, " lonely.log)"
check "no runner: nothing registered" 0 "$("$prefix/bin/tirctl" workers --server "$server" | grep -c 'lonely')"

# 4. A runner that dies before its hello.
printf '#!/bin/sh\nexit 7\n' >lonely/tir-worker-runner
chmod +x lonely/tir-worker-runner
env -u RUNFILES_DIR -u RUNFILES_MANIFEST_FILE timeout 60 lonely/tir-worker --coordinator="$server" --backend=host 2>broken.log
check "broken runner: exit 2" 2 $?
check "broken runner: why" 1 "$(grep -c 'tir-worker-runner did not start: the runner exited with code 7 before it said hello' broken.log)"

if ((fail)); then
  echo "--- worker.log"; cat worker.log; echo "--- compile.err"; cat compile.err; echo "--- install.log"; cat install.log
fi
exit $fail
