#!/bin/bash
# Run here (with Bazel): emits the suite's kernels for sm_90a into
# bench/gpu/out/<graph>/<candidate>/ (the default and the two best-ranked
# candidates). Then run bench/gpu/run.sh on the GPU machine, carrying
# bench/gpu/out.
set -euo pipefail
cd "$(dirname "$0")/../.."
arch="${1:-sm_90a}"
bazel build -c opt //client:tirctl >/dev/null
tirctl="$(bazel info -c opt bazel-bin)/client/tirctl"
rm -rf bench/gpu/out
for graph in bench/gpu/suite/*.mlir; do
  name=$(basename "$graph" .mlir)
  for candidate in default 0 1; do
    "$tirctl" emit "$graph" --arch "$arch" --candidate "$candidate" -o "bench/gpu/out/$name/$candidate" > /dev/null
  done
  echo "emitted $name"
done
du -sh bench/gpu/out
