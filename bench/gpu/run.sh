#!/bin/bash
# The GPU run, one prepared command for a lent machine (CUDA toolkit, CMake,
# PyTorch; no Bazel, no network): checks that a GPU is there, builds the
# runner library, and runs run.py over bench/gpu/out (which prepare.sh
# emitted and the device call carries) inside a time budget. Results land
# in $OUT (else bench/gpu/results): gpu_results.json (rewritten after every
# kernel, so a cut-short run keeps its figures), gpu_table.md, run.log,
# build.log, nvidia-smi.txt, sass.tar.gz (cuobjdump of each default kernel), sanitizer.log (a wrong or
# faulting default kernel under compute-sanitizer, when one was). Exit 0 only when every kernel ran, was correct
# and nothing was skipped; 3 when there is no GPU (nothing is measured).
#
# Usage: bench/gpu/run.sh [--dry-run] [--budget SECONDS]
#   --budget  seconds for the whole script, the build included (default 480:
#             it ends well inside a 600 s device call)
#   --dry-run no GPU: builds the runner library if a CUDA toolkit is here, and
#             runs run.py --dry-run (launch contracts, argument structs,
#             wiring, the table's shape); prints no figures
set -euo pipefail
start=$(date +%s)
cd "$(dirname "$0")/../.."
budget=480
dry=0
while (($#)); do
  case "$1" in
    --dry-run) dry=1 ;;
    --budget) budget="$2"; shift ;;
    *) echo "usage: bench/gpu/run.sh [--dry-run] [--budget SECONDS]" >&2; exit 2 ;;
  esac
  shift
done
out="${OUT:-bench/gpu/results}"
mkdir -p "$out"
build=/tmp/tir_gpu_runner_build
export PYTHONUNBUFFERED=1
fail() {
  echo "run.sh: $*" >&2
  exit "${code:-3}"
}
[[ -d bench/gpu/out ]] || code=2 fail "bench/gpu/out is missing: run bench/gpu/prepare.sh where Bazel is, and carry bench/gpu/out"

build_runner() {
  command -v cmake >/dev/null || fail "cmake is not installed: cannot build the runner library"
  local generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  if ! { cmake -S bench/gpu/runner -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release &&
         cmake --build "$build"; } >"$out/build.log" 2>&1; then
    tail -25 "$out/build.log" >&2
    fail "building the runner library failed (CUDA toolkit with CUPTI and cuBLASLt needed); log: $out/build.log"
  fi
  echo "runner library built in $(($(date +%s) - start)) s"
}

if ((dry)); then
  if command -v nvcc >/dev/null || [[ -d /usr/local/cuda ]]; then
    build_runner
  else
    echo "no CUDA toolkit here: the runner library is not built (the GPU machine builds it)"
  fi
  exec python3 bench/gpu/run.py --dry-run --kernels bench/gpu/out
fi

# No GPU, no figures: stop here, loudly, before anything is timed.
command -v nvidia-smi >/dev/null || fail "nvidia-smi is not installed: no NVIDIA driver on this machine; nothing measured"
if ! nvidia-smi -L >"$out/nvidia-smi.txt" 2>&1 || ! grep -q "^GPU " "$out/nvidia-smi.txt"; then
  cat "$out/nvidia-smi.txt" >&2
  fail "nvidia-smi sees no GPU; nothing measured"
fi
nvidia-smi >>"$out/nvidia-smi.txt" 2>&1 || true
head -1 "$out/nvidia-smi.txt"
build_runner
# Stop starting kernels 60 s before the budget ends; a hung kernel is killed 60 s after its last progress.
deadline=$((start + budget - 60))
left=$((start + budget + 30 - $(date +%s)))
set -o pipefail
rc=0
timeout -k 10 "$left" python3 bench/gpu/run.py --kernels bench/gpu/out --lib "$build/libtir_gpu.so" --out "$out" \
  --deadline "$deadline" --stall-s 60 2>&1 | tee "$out/run.log" || rc=$?

# The machine code of each graph's default kernels (cuobjdump: SASS and the resource usage), to read beside
# the figures: $OUT/sass.tar.gz, one file per graph.
if command -v cuobjdump >/dev/null; then
  sass=$(mktemp -d)
  for dir in bench/gpu/out/*/default; do
    g=$(basename "$(dirname "$dir")")
    for cubin in "$dir"/*.cubin; do
      { echo "== $cubin"; cuobjdump -res-usage -sass "$cubin" 2>&1; } >>"$sass/$g.sass"
    done
  done
  tar -C "$sass" -czf "$out/sass.tar.gz" . && echo "SASS of the default kernels: $out/sass.tar.gz"
fi

# A default kernel that was wrong or faulted is run once more under compute-sanitizer (memcheck, then
# racecheck), checked launch only, while the budget lasts: up to two graphs, smallest first.
if ((rc != 0)) && command -v compute-sanitizer >/dev/null && [[ -f "$out/gpu_results.json" ]]; then
  bad=$(python3 - "$out/gpu_results.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
bad = [r for r in doc["results"] if r.get("candidate") == "default" and ("error" in r or r.get("correct") is False)]
bad.sort(key=lambda r: r.get("moved_bytes", 1 << 62))
print(" ".join(r["graph"] for r in bad[:2]))
PY
)
  for g in $bad; do
    for tool in memcheck racecheck; do
      left=$((start + budget - 20 - $(date +%s)))
      ((left > 30)) || { echo "compute-sanitizer: no time left for $g ($tool)"; continue; }
      ((left > 90)) && left=90
      echo "== compute-sanitizer --tool $tool on $g (at most $left s)" | tee -a "$out/sanitizer.log"
      timeout -k 5 "$left" compute-sanitizer --tool "$tool" --print-limit 20 python3 bench/gpu/run.py --child \
        --check-only --only "^$g\$" --kernels bench/gpu/out --lib "$build/libtir_gpu.so" --out /tmp/tir_sanitize \
        >>"$out/sanitizer.log" 2>&1 || echo "   exit $?" | tee -a "$out/sanitizer.log"
      grep -E "ERROR SUMMARY|RACECHECK SUMMARY|checked:" "$out/sanitizer.log" | tail -3
    done
  done
fi
exit "$rc"
