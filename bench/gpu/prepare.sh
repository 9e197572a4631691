#!/bin/bash
# Run here (with Bazel; no GPU needed: NVRTC compiles for sm_90a on the CPU):
# emits the suite's kernels into bench/gpu/out/<graph>/<candidate>/ (the
# default and the two best-ranked candidates, and for the large and prefill
# GEMMs the sm_90a variants below: launch contract, cubin, CUDA C++ and
# PTX), and a wiring.json beside them (which graph input, output
# or intermediate each kernel argument is, from a heuristic bundle: tir may
# split a graph into several kernels, and a kernel may take the graph's
# inputs in another order). Then checks the result with
# `run.py --dry-run`. Carry bench/gpu/out to the GPU machine and run
# bench/gpu/run.sh there.
#
# Usage: bench/gpu/prepare.sh [ARCH] [GRAPH.mlir ...]   (default sm_90a, the
# whole suite). TIRCTL=path skips the Bazel build.
set -euo pipefail
cd "$(dirname "$0")/../.."
arch="${1:-sm_90a}"
shift || true
graphs=("$@")
((${#graphs[@]})) || graphs=(bench/gpu/suite/*.mlir)
if [[ -z "${TIRCTL:-}" ]]; then
  bazel build //:tirctl //worker/runner:tir-worker-runner >/dev/null
  TIRCTL="$(bazel info bazel-bin)/client/tirctl"
fi
[[ -x "$TIRCTL" ]] || { echo "prepare.sh: no tirctl at $TIRCTL" >&2; exit 2; }
out=bench/gpu/out
scratch=$(mktemp -d)
# The local service `compile` starts in the scratch cache goes with it.
trap 'XDG_CACHE_HOME="$scratch/cache" "$scratch/tirctl" service stop >/dev/null 2>&1; rm -rf "$scratch"' EXIT
# Copies (tirctl, and the runner its local service's worker starts), so that a rebuild in the shared
# checkout cannot pull them away mid-run.
cp "$TIRCTL" "$scratch/tirctl"
runner="$(dirname "$TIRCTL")/../worker/runner/tir-worker-runner"
[[ -x "$runner" ]] || { bazel build //worker/runner:tir-worker-runner >/dev/null && runner="$(bazel info bazel-bin)/worker/runner/tir-worker-runner"; }
cp "$runner" "$scratch/tir-worker-runner"
TIRCTL="$scratch/tirctl"
# Python modules for the bundle, to read its wiring.
protoc -I proto --python_out="$scratch" proto/tir/v1/graph.proto proto/tir/v1/kernel.proto
touch "$scratch/tir/__init__.py" "$scratch/tir/v1/__init__.py"
python=python3
"$python" -c 'import google.protobuf' 2>/dev/null || python=/usr/bin/python3

# The large and prefill GEMMs also get the sm_90a variants, each the best-
# ranked candidate with the named parameters (DIR=KEY=VALUE,...), so that
# one run measures them against the default and cuBLAS.
variants=(
  "raster-n=raster=1"        # bands of tile columns
  "raster-serpentine=raster=2"
  "tma-store-raster-n=tma_store=1,raster=1"
  # The default's exact tile and walk without its TMA store (the output by
  # direct global stores), and without its cluster.
  "no-tma-store=stages=4,group_m=8,raster=0,tma_store=0"
  "no-cluster=cluster_m=1,cluster_n=1,stages=4,group_m=8,raster=0,tma_store=1"
  "cluster-1x2=cluster_n=2"  # two N tiles sharing A
)
variant_graphs=(gemm_m4096_n4096_k4096 gemm_bias_gelu_m4096_n4096_k4096 gemm_m8192_n8192_k8192
  gemm_bias_gelu_m8192_n8192_k8192 gemm_m512_n4096_k4096 gemm_wt_bias_gelu_m512_n14336_k4096)
is_large_gemm() {
  local g
  for g in "${variant_graphs[@]}"; do [[ "$g" == "$1" ]] && return 0; done
  return 1
}

failed=()
for graph in "${graphs[@]}"; do
  name=$(basename "$graph" .mlir)
  rm -rf "${out:?}/$name"
  picks=(default 0 1)
  if [[ "$arch" == sm_90a ]] && is_large_gemm "$name"; then picks+=("${variants[@]}"); fi
  for pick in "${picks[@]}"; do
    candidate="${pick#*=}"
    dir="$out/$name/${pick%%=*}"
    [[ "$pick" == *=* ]] || dir="$out/$name/$pick"
    if ! "$TIRCTL" emit "$graph" --arch "$arch" --candidate "$candidate" -o "$dir" >"$scratch/log" 2>&1; then
      if [[ "$candidate" != default ]] && grep -q -e "--candidate must be" -e NO_SUCH_CANDIDATE "$scratch/log"; then
        echo "  $name: no candidate $candidate (a kernel's space is smaller, or has no such candidate)"
        rm -rf "$dir"
        continue
      fi
      echo "prepare.sh: emit $graph --candidate $candidate failed:" >&2
      cat "$scratch/log" >&2
      failed+=("$name/$candidate")
      continue
    fi
    # run.py reads the launch contracts and cubins; the runtime headers are the same in every directory.
    # tirctl's report stays beside them (--dry-run checks its launch lines against the launch rules).
    rm -f "$dir"/tir_*.h
    cp "$scratch/log" "$dir/emit.txt"
  done
  kernels=$(ls "$out/$name/default"/*.launch.json 2>/dev/null | wc -l)
  # Every graph gets its wiring: even a single kernel may take the graph's inputs in another order.
  if ((kernels > 0)); then
    if ! XDG_CACHE_HOME="$scratch/cache" "$TIRCTL" compile "$graph" --arch "$arch" --heuristic-now \
          -o "$scratch/$name.pb" >"$scratch/log" 2>&1 ||
        ! "$python" bench/gpu/wiring.py "$scratch" "$scratch/$name.pb" "$out/$name/wiring.json"; then
      echo "prepare.sh: no wiring for $name ($kernels kernels):" >&2
      cat "$scratch/log" >&2
      failed+=("$name/wiring")
    fi
  fi
  echo "emitted $name ($kernels kernel(s))"
done
du -sh "$out"
size=$(du -sm "$out" | cut -f1)
if ((size > 40)); then
  echo "prepare.sh: $out is $size MiB; the device machine takes 64 MiB of working tree in all" >&2
fi
if ((${#failed[@]})); then
  echo "prepare.sh: FAILED: ${failed[*]}" >&2
  exit 1
fi
"$python" bench/gpu/run.py --dry-run --kernels "$out"
