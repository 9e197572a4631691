#!/bin/bash
# The local service from Python and tirctl at once (local_service_test.py),
# with Debian's python3. The cache is a fresh directory under /tmp (a Unix
# socket's path must be short), HOME with it, so no user's service is
# touched; whatever service the test leaves is stopped.
set -u
root=$PWD
py=/usr/bin/python3
[[ -x $py ]] || py=python3
work=$(mktemp -d /tmp/tir-pyls.XXXXXX)
export HOME=$work XDG_CACHE_HOME=$work/cache TIR_SERVICE_IDLE_TIMEOUT=300
export TIR_BIN_DIR=$root TIR_WORKER_RUNNER=$root/worker/runner/tir-worker-runner
cleanup() {
  "$root/client/tirctl" service stop --timeout=30 >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
PYTHONPATH="$root/client/python:$root/tests/testing" $py "$root/client/python/local_service_test.py"
