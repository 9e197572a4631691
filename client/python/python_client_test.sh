#!/bin/bash
# A Python test (Debian's python3 with python3-grpcio, python3-torch) against a
# live coordinator and a host worker. Usage: python_client_test.sh [SCRIPT]
# (relative to the runfiles root; default the client test).
set -u
script=${1:-client/python/python_client_test.py}
root=$PWD
py=/usr/bin/python3
[[ -x $py ]] || py=python3
cd "$TEST_TMPDIR"
export HOME=$TEST_TMPDIR XDG_CACHE_HOME=$TEST_TMPDIR/cache
port=$($py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# Tokens and a bundle key: every call needs a token, every bundle is signed.
echo client-token >client.token
echo read-token >read.token
echo bundle-key-1 >bundle.key
cat >coordinator.json <<EOF
{"listen": "127.0.0.1:$port", "db": "$TEST_TMPDIR/db", "clientTokenFile": "client.token",
 "readTokenFile": "read.token", "bundleKeyFile": "bundle.key"}
EOF
"$root/server/tir-coordinator" --config=coordinator.json 2>coordinator.log &
pids=($!)
"$root/worker/tir-worker" --coordinator=127.0.0.1:$port --backend=host --work-dir="$TEST_TMPDIR/w" \
  --runner="$root/worker/runner/tir-worker-runner" 2>worker.log &
pids+=($!)
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null' EXIT
# Runfiles hold the generated modules inside the package (client/python/tir/v1/);
# the local service's tirctl is found under TIR_BIN_DIR.
PYTHONPATH="$root/client/python:$root/tests/testing" TIR_BIN_DIR="$root" $py "$root/$script" 127.0.0.1:$port
