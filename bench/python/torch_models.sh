#!/bin/bash
# The bench with Debian's python3 (python3-torch) and the package from runfiles.
set -eu
root=${RUNFILES_DIR:-$0.runfiles}/tir
[[ -d $root ]] || root=$(cd "$(dirname "$0")/../.." && pwd)
py=/usr/bin/python3
[[ -x $py ]] || py=python3
export TIR_BIN_DIR="$root"
export XDG_CACHE_HOME="${TIR_BENCH_CACHE:-$(mktemp -d)}"
# The bench's local service (its own cache) ends with it.
trap '"$root/client/tirctl" service stop >/dev/null 2>&1' EXIT
PYTHONPATH="$root/client/python" $py "$root/bench/python/torch_models.py" "$@"
