#!/bin/bash
# `pip install ./client/python` as the README says (a venv over Debian's
# python3 packages, offline), then the installed package from another
# directory: tir.v1 generated at install, tir.compile through the local
# service (started by the checkout's tirctl, stopped at the end).
set -eu
root=$PWD
py=/usr/bin/python3
[[ -x $py ]] || py=python3
cd "$TEST_TMPDIR"
export HOME=$TEST_TMPDIR XDG_CACHE_HOME=$TEST_TMPDIR/cache TIR_SERVICE_IDLE_TIMEOUT=300
trap '"$root/client/tirctl" service stop --timeout=30 >/dev/null 2>&1' EXIT
# A copy of what pip reads from the checkout (runfiles are symlinks).
mkdir -p src/client/python/tir src/proto/tir/v1
cp -L "$root"/client/python/setup.py src/client/python/
cp -L "$root"/client/python/tir/*.py src/client/python/tir/
cp -L "$root"/proto/tir/v1/*.proto src/proto/tir/v1/
$py -m venv --system-site-packages --without-pip venv
venv/bin/python -m pip install --quiet --no-build-isolation --no-index src/client/python
mkdir elsewhere && cd elsewhere
# -I: not the script's directory (the checkout's package) on sys.path
TIR_BIN_DIR="$root" ../venv/bin/python -I "$root/client/python/pip_install_check.py" "$TEST_TMPDIR/venv"
