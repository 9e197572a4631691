#!/bin/bash
# A Python framework test under PyTorch 2: the script runs in the Debian 13
# chroot tools/torch2-root builds (its python3, python3-torch 2.x,
# python3-grpcio, python3-protobuf), against a coordinator and a host worker
# started here, outside it, on loopback. The tir package is installed into
# the chroot as pip installs it: a wheel built from setup.py (Debian 12's pip,
# offline), unpacked into a directory on the chroot's sys.path, entry points
# (torch.compile(backend="tir")) included.
#
# Usage: torch2_test.sh SCRIPT   (relative to the runfiles root). Needs
# TIR_TORCH2_ROOT (tools/test sets it) and root for chroot; without them the
# test reports a skip, never a pass.
set -u
export PATH="$PATH:/usr/sbin:/sbin"  # chroot and mount
script=$1
root=$PWD
name=$(basename "$script" .py)
py=/usr/bin/python3
[[ -x $py ]] || py=python3
skip() {
  echo "SKIPPED: $1"
  if [[ -n "${XML_OUTPUT_FILE:-}" ]]; then
    cat >"$XML_OUTPUT_FILE" <<EOF
<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="$name" tests="1" failures="0" skipped="1"><testcase name="$name under torch 2" classname="$name"><skipped message="$1"/></testcase></testsuite></testsuites>
EOF
  fi
  exit 0
}
chroot_dir=${TIR_TORCH2_ROOT:-}
[[ -n "$chroot_dir" ]] || skip "TIR_TORCH2_ROOT is not set: tools/test builds the torch 2 chroot (tools/torch2-root) and sets it"
[[ $(id -u) -eq 0 ]] || skip "chroot needs root"
[[ -f "$chroot_dir/.tir-torch2-ready" ]] || skip "no torch 2 chroot at $chroot_dir (tools/torch2-root builds it)"
mountpoint -q "$chroot_dir/proc" || mount -t proc proc "$chroot_dir/proc" || skip "cannot mount /proc in $chroot_dir"

cd "$TEST_TMPDIR"
export HOME=$TEST_TMPDIR XDG_CACHE_HOME=$TEST_TMPDIR/cache
# The wheel, from a copy of what pip reads from the checkout (runfiles are symlinks).
mkdir -p src/client/python/tir src/proto/tir/v1 wheel
cp -L "$root"/client/python/setup.py src/client/python/
cp -L "$root"/client/python/tir/*.py src/client/python/tir/
cp -L "$root"/proto/tir/v1/*.proto src/proto/tir/v1/
if ! $py -m pip wheel --quiet --no-deps --no-build-isolation --no-index -w wheel src/client/python >wheel.log 2>&1; then
  cat wheel.log
  echo "FAILED: building the tir wheel"
  exit 1
fi
# Installed into the chroot: a private directory under its /tmp, removed at exit.
stage=$(mktemp -d "$chroot_dir/tmp/tir-torch2-XXXXXX")
inside=${stage#"$chroot_dir"}
$py -m zipfile -e wheel/*.whl "$stage/site"
mkdir -p "$stage/testing"
cp -L "$root/tests/testing/junit.py" "$stage/testing/"
cp -L "$root/$script" "$stage/"

port=$($py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
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
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf --one-file-system "$stage"' EXIT

# In the chroot: its own python3 and torch; the results XML comes back out.
chroot "$chroot_dir" env -i PATH=/usr/bin:/bin HOME=/tmp PYTHONPATH="$inside/site:$inside/testing" \
  XML_OUTPUT_FILE="$inside/results.xml" PYTHONUNBUFFERED=1 \
  python3 "$inside/$(basename "$script")" 127.0.0.1:$port
rc=$?
if [[ -n "${XML_OUTPUT_FILE:-}" && -f "$stage/results.xml" ]]; then
  cp "$stage/results.xml" "$XML_OUTPUT_FILE"
fi
if ((rc != 0)); then
  echo "--- coordinator.log (tail)"; tail -20 coordinator.log
  echo "--- worker.log (tail)"; tail -20 worker.log
fi
exit $rc
