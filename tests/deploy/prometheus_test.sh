#!/bin/bash
# Debian's Prometheus scrapes a live coordinator and worker on loopback with
# tir's alert rules loaded; every metric the Grafana dashboard and the alert
# rules reference must exist in what was scraped, and every rule must
# evaluate.
set -u
coordinator=$PWD/server/tir-coordinator
worker=$PWD/worker/tir-worker
runner=$PWD/worker/runner/tir-worker-runner
tirctl=$PWD/client/tirctl
graph=$PWD/tests/cli/graphs/softmax_fits.mlir
dashboard=$PWD/deploy/grafana/tir.json
alerts=$PWD/deploy/prometheus/alerts.yml
prometheus=$(command -v prometheus || true)
if [[ -z "$prometheus" ]]; then
  echo "FAIL: prometheus is not installed (tools/setup --test-tools installs it)"
  exit 1
fi
cd "$TEST_TMPDIR"
export HOME=$TEST_TMPDIR XDG_CACHE_HOME=$TEST_TMPDIR/cache
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
grpc=$(free_port) cmetrics=$(free_port) wmetrics=$(free_port) web=$(free_port)
"$coordinator" --listen=127.0.0.1:$grpc --db="$TEST_TMPDIR/db" --metrics-port=$cmetrics 2>coordinator.log &
pids=($!)
"$worker" --coordinator=127.0.0.1:$grpc --backend=host --work-dir="$TEST_TMPDIR/w" --runner="$runner" \
  --metrics-port=$wmetrics 2>worker.log &
pids+=($!)
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null' EXIT
# Some traffic: a tuning (histograms, counters) and a cache hit.
for _ in $(seq 100); do "$tirctl" workers --server 127.0.0.1:$grpc 2>/dev/null | grep -q ready && break; sleep 0.2; done
"$tirctl" compile "$graph" --server 127.0.0.1:$grpc --arch host >/dev/null || { echo "FAIL: compile"; exit 1; }
"$tirctl" compile "$graph" --server 127.0.0.1:$grpc --arch host >/dev/null
cat > prometheus.yml <<YAML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $alerts
scrape_configs:
  - job_name: tir-coordinator
    static_configs: [{targets: ["127.0.0.1:$cmetrics"]}]
  - job_name: tir-worker
    static_configs: [{targets: ["127.0.0.1:$wmetrics"]}]
YAML
"$prometheus" --config.file=prometheus.yml --storage.tsdb.path="$TEST_TMPDIR/tsdb" \
  --web.listen-address=127.0.0.1:$web 2>prometheus.log &
pids+=($!)
python3 - "$web" "$dashboard" "$alerts" <<'PY'
import json, re, sys, time, urllib.parse, urllib.request
web, dashboard, alerts = sys.argv[1:4]
api = "http://127.0.0.1:%s/api/v1/" % web
def get(path, **params):
    url = api + path + ("?" + urllib.parse.urlencode(params) if params else "")
    return json.load(urllib.request.urlopen(url, timeout=5))["data"]
deadline = time.time() + 60
while True:
    try:
        up = get("query", query="up")["result"]
        if len(up) == 2 and all(r["value"][1] == "1" for r in up):
            break
    except Exception:
        pass
    if time.time() > deadline:
        sys.exit("FAIL: Prometheus did not scrape both targets")
    time.sleep(0.5)
print("ok: both targets scraped")
text = open(dashboard).read() + open(alerts).read()
names = sorted({re.sub(r"_(bucket|sum|count)$", "", n) for n in re.findall(r"\btir_[a-z_]+", text)})
missing = []
for name in names:
    found = get("query", query='count({__name__=~"%s|%s_bucket"})' % (name, name))["result"]
    print(("ok: " if found else "FAIL: ") + name + (" exists" if found else " is referenced but not exported"))
    if not found:
        missing.append(name)
time.sleep(3)  # a few rule evaluations
rules = [r for g in get("rules")["groups"] for r in g["rules"]]
bad = [r["name"] for r in rules if r.get("health") != "ok"]
print("rules:", len(rules), "loaded,", "all evaluate" if not bad else "failing: %s" % bad)
if missing or bad or len(rules) < 4 or len(names) < 10:
    sys.exit(1)
PY
