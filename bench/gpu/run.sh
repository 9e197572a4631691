#!/bin/bash
# Run on the GPU machine (CUDA toolkit, CMake, ninja, PyTorch; no Bazel):
# builds the runner library and runs the suite. Results go to $OUT (or
# bench/gpu/results) as gpu_results.json and a printed table.
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-bench/gpu/results}"
mkdir -p "$out"
if [[ ! -d bench/gpu/out ]]; then
  echo "bench/gpu/out is missing: run bench/gpu/prepare.sh where Bazel is, and carry bench/gpu/out" >&2
  exit 2
fi
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S bench/gpu/runner -B "$out/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$out/build" >/dev/null
python3 bench/gpu/run.py --kernels bench/gpu/out --lib "$out/build/libtir_gpu.so" --out "$out"
