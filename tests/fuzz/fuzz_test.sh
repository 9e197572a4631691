#!/bin/bash
# Runs each fuzzer from seeds made of tir's test graphs. Fails on any crash,
# sanitizer report or broken invariant.
# By default the run is reproducible (fixed seed, fixed number of inputs), so
# CI never fails by chance; set TIR_FUZZ_SECONDS to explore for that long
# with a random seed instead.
set -eu
if [[ -n "${TIR_FUZZ_SECONDS:-}" ]]; then
  budget=(-max_total_time="$TIR_FUZZ_SECONDS")
  what="${TIR_FUZZ_SECONDS}s"
else
  budget=(-seed=1 -runs=60000)
  what="60000 inputs, seed 1"
fi
work="${TEST_TMPDIR:-$(mktemp -d)}/fuzz"
mkdir -p "$work/proto" "$work/text"
tests/fuzz/seed_gen "$work" tests/graphs/*.mlir tests/lit/ir/roundtrip.mlir >/dev/null
cp tests/lit/ir/*.mlir "$work/text/"
# Inputs that once broke an invariant run first, every time.
cp tests/fuzz/regressions/proto/* "$work/proto/"
cp tests/fuzz/regressions/text/* "$work/text/" 2>/dev/null || true
for fuzzer in graph_text_fuzzer graph_proto_fuzzer; do
  corpus="$work/text"
  [[ $fuzzer == graph_proto_fuzzer ]] && corpus="$work/proto"
  echo "== $fuzzer for $what on $(ls "$corpus" | wc -l) seeds"
  ASAN_OPTIONS=detect_leaks=0 "tests/fuzz/$fuzzer" "${budget[@]}" -timeout=10 \
    -rss_limit_mb=3000 -print_final_stats=1 -artifact_prefix="${TEST_UNDECLARED_OUTPUTS_DIR:-$work}/" \
    "$corpus" > "$work/$fuzzer.log" 2>&1 && status=0 || status=$?
  grep -E "stat::number_of_executed_units|stat::new_units_added|Done" "$work/$fuzzer.log" || true
  if [[ $status -ne 0 ]]; then
    grep -v libprotobuf "$work/$fuzzer.log" | tail -80 >&2
    echo "$fuzzer failed (exit $status); the crashing input is in the test outputs" >&2
    exit 1
  fi
done
