#!/usr/bin/env bash
# Installs tir's binaries in the layout the systemd units and the container
# image use:
#   PREFIX/bin/tir-coordinator  PREFIX/bin/tir-worker  PREFIX/bin/tirctl
#   PREFIX/libexec/tir/tir-worker-runner   (found by tir-worker on its own)
#
# Usage: deploy/install.sh [--prefix DIR] [--from DIR]
#   --prefix  where to install (default /opt/tir)
#   --from    a Bazel output tree to copy from (bazel-bin, or a runfiles
#             root holding server/, worker/ and client/); without it the
#             binaries are built first with `bazel build -c opt`.
set -euo pipefail
cd "$(dirname "$0")/.."

prefix=/opt/tir
from=""
while (($#)); do
  case "$1" in
    --prefix) prefix="$2"; shift 2 ;;
    --prefix=*) prefix="${1#*=}"; shift ;;
    --from) from="$2"; shift 2 ;;
    --from=*) from="${1#*=}"; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "deploy/install.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

targets=(//server:tir-coordinator //worker:tir-worker //worker/runner:tir-worker-runner //client:tirctl)
if [[ -z "$from" ]]; then
  bazel build -c opt "${targets[@]}"
  from="$(bazel info -c opt bazel-bin)"
fi

declare -A files=(
  [server/tir-coordinator]=bin/tir-coordinator
  [worker/tir-worker]=bin/tir-worker
  [client/tirctl]=bin/tirctl
  [worker/runner/tir-worker-runner]=libexec/tir/tir-worker-runner
)
for src in "${!files[@]}"; do
  if [[ ! -x "$from/$src" ]]; then
    echo "deploy/install.sh: $from/$src is missing (build ${targets[*]})" >&2
    exit 1
  fi
done
for src in "${!files[@]}"; do
  dst="$prefix/${files[$src]}"
  mkdir -p "$(dirname "$dst")"
  # Copy the file itself (Bazel's trees hold symlinks), then swap it in.
  cp -L "$from/$src" "$dst.tmp.$$"
  chmod 0755 "$dst.tmp.$$"
  mv -f "$dst.tmp.$$" "$dst"
  echo "installed $dst"
done
