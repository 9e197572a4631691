#!/bin/bash
# Nsight Compute over emitted kernels, on a lent GPU (Firecracker machines read the hardware counters;
# gVisor ones do not): one checked launch of each graph's candidate under `ncu --set full`, clocks left
# alone. Writes $OUT/ncu_<graph>_<candidate>.txt (the details page: speed of light, memory and compute
# workload, warp states, scheduler, occupancy, launch) and the .ncu-rep of the first graph.
#
# Usage: bench/gpu/profile.sh GRAPH[:CANDIDATE] ...   (candidate: default, 0 or 1; default `default`)
# carry bench/gpu/out, as for run.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-bench/gpu/results}"
mkdir -p "$out"
build=/tmp/tir_gpu_runner_build
export PYTHONUNBUFFERED=1
command -v ncu >/dev/null || { echo "profile.sh: ncu is not installed here" >&2; exit 3; }
if [[ ! -f "$build/libtir_gpu.so" ]]; then
  { cmake -S bench/gpu/runner -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build "$build"; } \
    >"$out/build.log" 2>&1 || { tail -20 "$out/build.log" >&2; exit 3; }
fi
first=1
for spec in "$@"; do
  graph="${spec%%:*}"
  cand=default
  [[ "$spec" == *:* ]] && cand="${spec#*:}"
  tag="${graph}_${cand}"
  rep=/tmp/ncu_$tag
  # run.py --only selects the graph; the candidate is picked by giving run.py a kernels dir with just it.
  sel=$(mktemp -d)
  mkdir -p "$sel/$graph"
  cp -r "bench/gpu/out/$graph/$cand" "$sel/$graph/default"
  cp "bench/gpu/out/$graph/wiring.json" "$sel/$graph/"
  echo "== ncu $graph ($cand)"
  if ! timeout -k 5 240 ncu --clock-control none --set full -k regex:tir_kernel -c 1 -f -o "$rep" \
        python3 bench/gpu/run.py --child --check-only --only "^$graph\$" --kernels "$sel" \
        --lib "$build/libtir_gpu.so" --out /tmp/tir_profile >"$out/ncu_$tag.log" 2>&1; then
    echo "   ncu failed: $(tail -3 "$out/ncu_$tag.log")"
    continue
  fi
  ncu --import "$rep.ncu-rep" --page details >"$out/ncu_$tag.txt" 2>&1 || true
  rm -f "$out/ncu_$tag.log"
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|DRAM Throughput|Registers Per|Achieved Occupancy|Issue Slots Busy|No Eligible" \
    "$out/ncu_$tag.txt" | head -14
  if ((first)); then
    cp "$rep.ncu-rep" "$out/ncu_$tag.ncu-rep"
    first=0
  fi
done
