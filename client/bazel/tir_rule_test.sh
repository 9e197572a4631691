#!/bin/bash
# The test behind tir_compile_test and tir_tune_test (client/bazel/tir.bzl).
#   tir_rule_test.sh compile TIRCTL RUNNER GRAPH ARCH...
#   tir_rule_test.sh tune    TIRCTL RUNNER GRAPH ARCH BUDGET
set -euo pipefail
mode=$1 tirctl=$2 runner=$3 graph=$4
shift 4
export TIR_WORKER_RUNNER="$PWD/$runner"
# The test's own cache, so its local service is its own (stopped at the end).
export XDG_CACHE_HOME="$TEST_TMPDIR/cache" TIR_SERVICE_IDLE_TIMEOUT=300
trap '"$tirctl" service stop --timeout=30 >/dev/null 2>&1' EXIT
case "$mode" in
  compile)
    for arch in "$@"; do
      verify=()
      [[ $arch == host ]] && verify=(--verify)
      echo "== $graph for $arch"
      "$tirctl" emit "$graph" --arch "$arch" -o "$TEST_TMPDIR/$arch" "${verify[@]}"
    done
    ;;
  tune)
    arch=$1 budget=$2
    echo "== tuning $graph for $arch (budget $budget per kernel), through the local service"
    # --verify: the returned bundle, launched from its own records, matches
    # the reference interpreter (a host tuning).
    verify=()
    [[ $arch == host ]] && verify=(--verify)
    "$tirctl" compile "$graph" --arch "$arch" --backend host --budget "$budget" -o "$TEST_TMPDIR/bundle.pb" \
      "${verify[@]}" --output=json > "$TEST_TMPDIR/op.json"
    python3 - "$TEST_TMPDIR/op.json" <<'PY'
import json, sys
op = json.load(open(sys.argv[1]))
bundle = op.get("response") or sys.exit("no bundle: %s" % op.get("error"))
if not bundle.get("tuning", {}).get("tuned"):
    sys.exit("the bundle is not tuned")
for k in bundle["kernels"]:
    v = k.get("verification", {})
    if v.get("verdict") != "VERDICT_PASSED" or v.get("relative_l2_error", 0) > v.get("tolerance", 0):
        sys.exit("kernel %s failed verification: %s" % (k.get("partition", 0), v))
print("tuned: %d kernel(s), %d of %d candidates measured, all verified" % (
    len(bundle["kernels"]), bundle["tuning"].get("candidates_measured", 0), bundle["tuning"]["candidates_total"]))
PY
    # The repeat is a cache hit returning the bundle stored by the first run.
    "$tirctl" compile "$graph" --arch "$arch" --backend host --budget "$budget" -o "$TEST_TMPDIR/again.pb" \
      --output=json > "$TEST_TMPDIR/again.json"
    python3 - "$TEST_TMPDIR/op.json" "$TEST_TMPDIR/again.json" <<'PY'
import json, sys
first, again = (json.load(open(p)) for p in sys.argv[1:3])
if not again["metadata"].get("cache_hit"):
    sys.exit("the repeat was not a cache hit")
for field in ("key", "create_time"):
    if first["response"][field] != again["response"][field]:
        sys.exit("the repeat returned another bundle (%s differs)" % field)
PY
    echo "cache hit on the repeat"
    ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
