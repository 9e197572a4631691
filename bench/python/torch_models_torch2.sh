#!/bin/bash
# torch_models.py under PyTorch 2: in the Debian 13 chroot tools/torch2-root
# builds (python3-torch 2.6), the tir package installed there from a wheel of
# setup.py, against a coordinator and a host worker started here on loopback.
# Prints tir.fx and torch.compile(backend=tir) against eager, same run.
# Usage: bazel run //bench/python:torch_models_torch2 -- [--calls N]
# Needs root (chroot); builds the chroot the first time (about 3 minutes).
set -eu
export PATH="$PATH:/usr/sbin:/sbin"
root=${RUNFILES_DIR:-$0.runfiles}/tir
[[ -d $root ]] || root=$(cd "$(dirname "$0")/../.." && pwd)
checkout=${BUILD_WORKSPACE_DIRECTORY:-$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)}
py=/usr/bin/python3
[[ -x $py ]] || py=python3
chroot_dir=$("$checkout/tools/torch2-root")
work=$(mktemp -d)
stage=$(mktemp -d "$chroot_dir/tmp/tir-bench-XXXXXX")
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf --one-file-system "$work" "$stage"' EXIT

# The wheel, from a copy of the package's sources (runfiles are symlinks).
mkdir -p "$work/src/client/python/tir" "$work/src/proto/tir/v1"
cp -L "$root"/client/python/setup.py "$work/src/client/python/"
cp -L "$root"/client/python/tir/*.py "$work/src/client/python/tir/"
cp -L "$root"/proto/tir/v1/*.proto "$work/src/proto/tir/v1/"
$py -m pip wheel --quiet --no-deps --no-build-isolation --no-index -w "$work/wheel" "$work/src/client/python" >/dev/null
$py -m zipfile -e "$work"/wheel/*.whl "$stage/site"
cp -L "$root/bench/python/torch_models.py" "$stage/"

port=$($py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
tr -dc 'a-z0-9' </dev/urandom | head -c 32 >"$stage/client.token"
cat >"$work/coordinator.json" <<JSON
{"listen": "127.0.0.1:$port", "db": "$work/db", "clientTokenFile": "$stage/client.token"}
JSON
"$root/server/tir-coordinator" --config="$work/coordinator.json" 2>"$work/coordinator.log" &
pids+=($!)
"$root/worker/tir-worker" --coordinator=127.0.0.1:$port --backend=host --work-dir="$work/w" \
  --runner="$root/worker/runner/tir-worker-runner" 2>"$work/worker.log" &
pids+=($!)

inside=${stage#"$chroot_dir"}
chroot "$chroot_dir" env -i PATH=/usr/bin:/bin HOME=/tmp PYTHONPATH="$inside/site" PYTHONUNBUFFERED=1 \
  python3 "$inside/torch_models.py" --server 127.0.0.1:$port --token "$inside/client.token" "$@"
