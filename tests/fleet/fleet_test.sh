#!/bin/bash
# The fleet on loopback, as real processes: three coordinator shards (each
# its own RocksDB), four host workers leasing from every shard, two host
# tiers (local services with an upstream) and 64 client processes, some
# through a tier and some straight to a shard. One shard is SIGKILLed while
# it tunes and restarted on its store. Checked: no client fails; no bundle is
# lost (every graph is a hit through every shard and tier afterwards); no
# shard tunes a key twice in one lifetime; the shards agree on each key's
# owner. Printed: the hit latency of a tirctl call through a tier and
# straight to a shard.
set -u
tirctl=$PWD/client/tirctl
coordinator=$PWD/server/tir-coordinator
worker=$PWD/worker/tir-worker
runner=$PWD/worker/runner/tir-worker-runner
cd "$TEST_TMPDIR"
export XDG_CACHE_HOME=$TEST_TMPDIR/cache
fail=0
check() {  # check NAME EXPECTED ACTUAL
  if [[ "$2" != "$3" ]]; then echo "FAIL: $1: expected '$2', got '$3'"; fail=1; else echo "ok: $1"; fi
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

pids=()
cleanup() {
  for c in tierA tierB; do "$tirctl" service stop --cache-dir="$TEST_TMPDIR/$c" >/dev/null 2>&1; done
  kill "${pids[@]}" "${shard_pid[@]}" 2>/dev/null
  wait 2>/dev/null
}
trap cleanup EXIT

shards=() dash=()
for i in 0 1 2; do shards+=("127.0.0.1:$(free_port)"); dash+=("$(free_port)"); done
list=$(printf '"%s",' "${shards[@]}")
list="[${list%,}]"
declare -a shard_pid
start_shard() {  # start_shard I
  local i=$1
  cat >"shard$i.json" <<EOF
{"listen": "${shards[$i]}", "db": "$TEST_TMPDIR/db$i", "shards": $list, "shardSelf": "${shards[$i]}",
 "shardRetryMs": 1000, "dashboardPort": ${dash[$i]}, "heartbeatIntervalMs": 300, "lostAfterMs": 3000,
 "checkpointDir": "$TEST_TMPDIR/backup$i", "checkpointIntervalMs": 2000, "checkpointKeep": 2}
EOF
  "$coordinator" --config="shard$i.json" 2>>"shard$i.log" &
  shard_pid[$i]=$!
}
for i in 0 1 2; do start_shard $i; done
all=$(IFS=,; echo "${shards[*]}")
for w in 1 2 3 4; do
  "$worker" --coordinator="$all" --backend=host --compile-threads=1 --work-dir="$TEST_TMPDIR/w$w" --runner="$runner" \
    2>"worker$w.log" &
  pids+=($!)
done
# Every shard has the four workers.
for i in 0 1 2; do
  for _ in $(seq 150); do
    [[ "$("$tirctl" workers --server "${shards[$i]}" 2>/dev/null | grep -c 'host.*ready')" == 4 ]] && break
    sleep 0.2
  done
  check "shard $i has the four workers" 4 "$("$tirctl" workers --server "${shards[$i]}" | grep -c 'host.*ready')"
done
# Two host tiers, each reading through to a different shard.
"$tirctl" service start --cache-dir="$TEST_TMPDIR/tierA" --backend=host --idle-timeout=0 --upstream="${shards[0]}" >/dev/null
check "tier A starts" 0 $?
"$tirctl" service start --cache-dir="$TEST_TMPDIR/tierB" --backend=host --idle-timeout=0 --upstream="${shards[1]}" >/dev/null
check "tier B starts" 0 $?

# Eight softmax graphs, each tuned for a few seconds on the host.
for g in $(seq 0 7); do
  t="tensor<$((16 + 8 * g))x1024xf32>" c="tensor<$((16 + 8 * g))x1xf32>"
  cat >"g$g.mlir" <<EOF
tir.graph @softmax$g(%x: $t) -> $t {
  %m = reduce(%x)<dimensions = [1], reduction_mode = <max>> : $t -> $c
  %mb = broadcast %m : $c -> $t
  %s = sub %x, %mb : $t
  %e = exp %s : $t
  %z = reduce(%e)<dimensions = [1], reduction_mode = <add>> : $t -> $c
  %zb = broadcast %z : $c -> $t
  %y = div %e, %zb : $t
  results %y : $t
}
EOF
done

# 64 clients: half through the tiers, half straight to shard 0 (as through
# a Service, any shard would do); shard 1 or 2, whichever is tuning, is
# killed while they run and comes back on its store (tier B's upstream, if
# it is shard 1: that tier then tunes here what it followed there).
clients=()
for c in $(seq 0 63); do
  g=$((c % 8))
  case $((c % 4)) in
    0) where=(--cache-dir="$TEST_TMPDIR/tierA") ;;
    1) where=(--cache-dir="$TEST_TMPDIR/tierB") ;;
    *) where=(--server "${shards[0]}") ;;
  esac
  "$tirctl" compile "g$g.mlir" --arch host --timeout 600 "${where[@]}" -o "out$c.pb" >"client$c.txt" 2>&1 &
  clients+=($!)
done
running() {  # running I: jobs shard I is tuning
  curl -s "http://127.0.0.1:${dash[$1]}/api/status" | python3 -c 'import json, sys; print(len(json.load(sys.stdin).get("running", [])))' 2>/dev/null || echo 0
}
victim=2 tuning=0
for _ in $(seq 300); do
  for v in 2 1; do
    tuning=$(running $v)
    if [[ $tuning -gt 0 ]]; then victim=$v; break 2; fi
  done
  sleep 0.2
done
check "a shard is tuning when it is killed" 1 "$([[ $tuning -gt 0 ]] && echo 1)"
kill -KILL "${shard_pid[$victim]}"
wait "${shard_pid[$victim]}" 2>/dev/null
echo "shard $victim killed while tuning $tuning jobs"
sleep 2
start_shard $victim
failed=0
for c in $(seq 0 63); do
  if ! wait "${clients[$c]}"; then
    failed=$((failed + 1))
    echo "client $c failed:"; tail -3 "client$c.txt"
  fi
done
check "no client failed" 0 "$failed"
check "every client wrote its bundle" 64 "$(ls out*.pb 2>/dev/null | wc -l)"

# No bundle lost: every graph is a hit (no tuning) through every shard and
# every tier, the restarted shard included.
hits=0
for g in $(seq 0 7); do
  for i in 0 1 2; do
    "$tirctl" compile "g$g.mlir" --arch host --server "${shards[$i]}" -o hit.pb 2>/dev/null | grep -q 'cache hit' && hits=$((hits + 1))
  done
  for c in tierA tierB; do
    "$tirctl" compile "g$g.mlir" --arch host --cache-dir="$TEST_TMPDIR/$c" -o hit.pb 2>/dev/null | grep -q 'cache hit' &&
      hits=$((hits + 1))
  done
done
check "every graph a hit everywhere" 40 "$hits"

# No shard tuned a key twice in its lifetime (the killed one: since its
# restart), from each dashboard's recent jobs; and over the fleet, a key is
# tuned at most twice (its owner, and the shard that stood in while the
# owner was down).
for i in 0 1 2; do
  twice=$(curl -s "http://127.0.0.1:${dash[$i]}/api/status" | python3 -c '
import json, sys, collections
s = json.load(sys.stdin)
keys = collections.Counter(j.get("key", "") for j in s.get("recent", []) if j.get("state", "") != "cancelled")
print(sum(1 for k, n in keys.items() if n > 1))')
  check "shard $i tuned no key twice" 0 "$twice"
done
fleet_twice=$(for i in 0 1 2; do curl -s "http://127.0.0.1:${dash[$i]}/api/status"; echo; done | python3 -c '
import json, sys, collections
keys = collections.Counter()
for line in sys.stdin:
    if line.strip():
        for j in json.loads(line).get("recent", []):
            if j.get("state", "") != "cancelled": keys[j.get("key", "")] += 1
print(sum(1 for k, n in keys.items() if n > 2))')
check "no key tuned more than twice in the fleet" 0 "$fleet_twice"

# Every shard's status page lists the three shards, itself among them.
for i in 0 1 2; do
  check "shard $i's status lists the fleet" "3 1" "$(curl -s "http://127.0.0.1:${dash[$i]}/api/status" | python3 -c '
import json, sys
s = json.load(sys.stdin).get("shards", [])
print(len(s), sum(1 for h in s if h.get("self")))')"
done

# Backups: each shard's newest checkpoint, taken while it served, is a
# sound store.
sleep 2.5
for i in 0 1 2; do
  newest=$(ls -d "$TEST_TMPDIR/backup$i"/2* 2>/dev/null | sort | tail -1)
  check "shard $i has a checkpoint" 1 "$([[ -n $newest ]] && echo 1)"
  [[ -n $newest ]] && "$coordinator" --verify-store --db="$newest" >verify$i.txt 2>&1
  check "shard $i's checkpoint is a sound store" 0 $?
done

# Hit latency: a tirctl call (process start included) through a tier and
# straight to a shard, median of 15.
median_ms() {  # median_ms ARGS...: a cached compile, timed
  local t=()
  for _ in $(seq 15); do
    local s=$(date +%s%N)
    "$tirctl" compile g0.mlir --arch host "$@" -o lat.pb >/dev/null 2>&1
    t+=($((($(date +%s%N) - s) / 1000)))
  done
  printf '%s\n' "${t[@]}" | sort -n | sed -n 8p | awk '{printf "%.1f", $1 / 1000}'
}
tier=$(median_ms --cache-dir="$TEST_TMPDIR/tierA")
direct=$(median_ms --server "${shards[0]}")
echo "hit latency per tirctl call (process start included), median of 15: through a host tier ${tier} ms, straight to a shard ${direct} ms"

if [[ $fail != 0 ]]; then
  for f in shard0.log shard1.log shard2.log; do echo "== $f"; tail -20 "$f"; done
fi
exit $fail
