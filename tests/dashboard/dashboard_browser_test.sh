#!/bin/bash
# The dashboard in headless Chromium against a coordinator with two host
# workers running a job: the workers are listed, the job's progress moves,
# the charts are drawn. The screenshot goes to the test's outputs
# (bazel-testlogs/tests/dashboard/dashboard_browser_test/test.outputs/).
set -u
coordinator=$PWD/server/tir-coordinator
worker=$PWD/worker/tir-worker
runner=$PWD/worker/runner/tir-worker-runner
tirctl=$PWD/client/tirctl
graph=$PWD/client/examples/matmul_bias_gelu_residual.mlir
dynamic=$PWD/tests/graphs/dynamic/softmax_rows.mlir
chromium=$(command -v chromium || command -v chromium-browser || true)
if [[ -z "$chromium" ]]; then
  echo "FAIL: chromium is not installed (tools/setup --test-tools installs it)"
  exit 1
fi
cd "$TEST_TMPDIR"
export HOME=$TEST_TMPDIR XDG_CACHE_HOME=$TEST_TMPDIR/cache
out=${TEST_UNDECLARED_OUTPUTS_DIR:-$TEST_TMPDIR}
fail=0
check() {  # check NAME CONDITION-RESULT(0 = ok)
  if [[ "$2" != 0 ]]; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
grpc_port=$(free_port) web_port=$(free_port)
cat > config.json <<JSON
{"listen": "127.0.0.1:$grpc_port", "db": "$TEST_TMPDIR/db", "dashboardPort": $web_port,
 "heartbeatIntervalMs": 200, "lostAfterMs": 2000, "tuningBudgetMs": 150}
JSON
"$coordinator" --config=config.json 2>coordinator.log &
pids=($!)
for i in 1 2; do
  "$worker" --coordinator=127.0.0.1:$grpc_port --backend=host --work-dir="$TEST_TMPDIR/w$i" --runner="$runner" \
    2>worker$i.log &
  pids+=($!)
done
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null' EXIT
url=http://127.0.0.1:$web_port/
status() { python3 -c "import json,urllib.request; s=json.load(urllib.request.urlopen('${url}api/status')); print($1)"; }
for _ in $(seq 100); do
  [[ $(status 'len(s["workers"])' 2>/dev/null) == 2 ]] && break
  sleep 0.2
done
"$tirctl" compile "$graph" --server 127.0.0.1:$grpc_port --arch host >compile.log 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  [[ $(status 'sum(j["candidates_measured"] for j in s["running"])' 2>/dev/null) -ge 1 ]] && break
  sleep 0.2
done
page() {  # page FILE: the DOM after the page's scripts ran for a while
  "$chromium" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --user-data-dir="$TEST_TMPDIR/profile" \
    --virtual-time-budget=4000 --dump-dom "$url" >"$1" 2>>chromium.log
}
page dom1.html
# The page again once the job has moved on (more measurements, or finished).
before=$(status 'sum(j["measurements"] for j in s["running"])')
for _ in $(seq 150); do
  now=$(status 'sum(j["measurements"] for j in s["running"]) if s["running"] else 10**9')
  [[ $now -gt $before ]] && break
  sleep 0.2
done
page dom2.html
# A dynamic graph at two shapes of one bucket (a tuning, then a check), and
# the first shape again (a hit): the bucket's row counts them.
"$tirctl" compile "$dynamic" --server 127.0.0.1:$grpc_port --arch host --shape 0=300x256 --shape 0=400x256 \
  --shape 0=300x256 >dynamic.log 2>&1
check "dynamic compiles" $?
page dom3.html
"$chromium" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --user-data-dir="$TEST_TMPDIR/profile" \
  --window-size=1280,1100 --virtual-time-budget=4000 --screenshot="$out/dashboard.png" "$url" 2>>chromium.log

python3 - dom1.html dom2.html "$out/dashboard.png" dom3.html <<'PY'
import re, sys, os
dom1, dom2 = (open(p).read() for p in sys.argv[1:3])
dom3 = open(sys.argv[4]).read()
def check(name, ok):
    print(("ok: " if ok else "FAIL: ") + name)
    return ok
ok = True
workers = re.search(r'<table id="workers">.*?</table>', dom1, re.S).group(0)
ok &= check("both workers listed", "workers/" in workers and len(re.findall(r"<td>workers/[0-9a-f]+</td>", workers)) == 2)
ok &= check("workers show their arch", len(re.findall(r"<td>workers/[0-9a-f]+</td><td>host</td>", workers)) == 2)
running1 = re.search(r'<table id="running">.*?</table>', dom1, re.S).group(0)
ok &= check("the job is shown running", "matmul_bias_gelu_residual" in running1 and "measurements" in running1)
def measured(dom):
    run = re.search(r'<table id="running">.*?</table>', dom, re.S).group(0)
    m = re.search(r'class="progress">(\d+) measurements', run)
    done = "matmul_bias_gelu_residual" in re.search(r'<table id="recent">.*?</table>', dom, re.S).group(0)
    return (int(m.group(1)) if m else None), done
(m1, d1), (m2, d2) = measured(dom1), measured(dom2)
print("progress: first", m1, "done" if d1 else "", "then", m2, "done" if d2 else "")
ok &= check("the job's progress moves", m1 is not None and ((m2 is not None and m2 > m1) or d2))
points = [int(p) for p in re.findall(r'<canvas id="ch-[a-z]+"[^>]*data-points="(\d+)"', dom2)]
ok &= check("four charts drawn", len(points) == 4 and min(points) >= 2)
ok &= check("screenshot written", os.path.getsize(sys.argv[3]) > 10000)
buckets = re.search(r'<table id="buckets">.*?</table>', dom3, re.S).group(0)
row = re.search(r"<td>0:0=257\.\.512</td><td>(\d+)</td><td>(\d+)</td><td>(\d+)</td>", buckets)
print("bucket row:", row.groups() if row else buckets[-400:])
ok &= check("the bucket's hits and verified shapes are shown", row is not None and int(row.group(1)) >= 1 and int(row.group(2)) == 2)
sys.exit(0 if ok else 1)
PY
check "page checks" $?
exit $fail
