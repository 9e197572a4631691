"""The deployment files are well-formed and agree with the binaries.

- every YAML document parses; the Kubernetes objects tir needs are there;
- every flag a manifest or systemd unit passes is one the binary accepts
  (from its --helpfull), and every config key is a CoordinatorConfig field;
- ports line up: the config's listen / metrics / dashboard ports, the
  container ports, the Service's target ports, the gRPC probes, and the
  worker's --coordinator address;
- workers ask for a GPU and can be scheduled on GPU nodes.
"""
import glob
import json
import os
import re
import subprocess
import sys

import yaml

root = os.getcwd()
failures = []


def check(name, ok, detail=""):
    print(("ok: " if ok else "FAIL: ") + name + (" (%s)" % detail if detail and not ok else ""))
    if not ok:
        failures.append(name)


def flags_of(binary):
    out = subprocess.run([os.path.join(root, binary), "--helpfull"], capture_output=True, text=True)
    return set(re.findall(r"^\s+--([a-z_0-9]+)", out.stdout + out.stderr, re.M))


binaries = {"tir-coordinator": flags_of("server/tir-coordinator"), "tir-worker": flags_of("worker/tir-worker")}
check("binaries list their flags", all(len(f) > 5 for f in binaries.values()))


def check_flags(where, binary, args):
    accepted = binaries[binary]
    for a in args:
        m = re.match(r"--([a-z0-9-_]+)", a)
        if m:
            name = m.group(1).replace("-", "_")
            check("%s: %s accepts --%s" % (where, binary, m.group(1)), name in accepted)


proto = open(os.path.join(root, "proto/tir/v1/config.proto")).read()
config_fields = {re.sub(r"_([a-z])", lambda m: m.group(1).upper(), f)
                 for f in re.findall(r"^\s+(?:string|uint32|uint64|bool)\s+([a-z_]+)\s*=", proto, re.M)}

docs = []
for path in sorted(glob.glob(os.path.join(root, "deploy/k8s/*.yaml"))):
    try:
        docs += [(os.path.basename(path), d) for d in yaml.safe_load_all(open(path)) if d]
        check(os.path.basename(path) + " parses", True)
    except yaml.YAMLError as e:
        check(os.path.basename(path) + " parses", False, str(e))
kinds = {(d["kind"], d["metadata"]["name"]): d for _, d in docs}
for needed in [("StatefulSet", "tir-coordinator"), ("Service", "tir-coordinator"), ("ConfigMap", "tir-coordinator"),
               ("DaemonSet", "tir-worker")]:
    check("has %s/%s" % needed, needed in kinds)
# Credentials come from Secrets made at deploy time: none is defined here
# with a value to forget to change.
check("no Secret with values is shipped", not any(d["kind"] == "Secret" for _, d in docs))

sts = kinds[("StatefulSet", "tir-coordinator")]
ds = kinds[("DaemonSet", "tir-worker")]
svc = kinds[("Service", "tir-coordinator")]
cm = kinds[("ConfigMap", "tir-coordinator")]
coord = sts["spec"]["template"]["spec"]["containers"][0]
work = ds["spec"]["template"]["spec"]["containers"][0]
check("one image for both", coord["image"] == work["image"], "%s vs %s" % (coord["image"], work["image"]))
check("coordinator runs tir-coordinator", coord["command"][0].endswith("/tir-coordinator"))
check("worker runs tir-worker", work["command"][0].endswith("/tir-worker"))
check_flags("coordinator.yaml", "tir-coordinator", coord.get("args", []))
check_flags("worker.yaml", "tir-worker", work.get("args", []))

config = json.loads(cm["data"]["coordinator.json"])
for key in config:
    check("config key %s is a CoordinatorConfig field" % key, key in config_fields)
ports = {p["name"]: p["containerPort"] for p in coord["ports"]}
check("listen port is the grpc container port", int(config["listen"].rsplit(":", 1)[1]) == ports.get("grpc"))
check("metricsPort is the metrics container port", config.get("metricsPort") == ports.get("metrics"))
check("dashboardPort is the dashboard container port", config.get("dashboardPort") == ports.get("dashboard"))
for probe in ("readinessProbe", "livenessProbe"):
    target = coord.get(probe, {}).get("tcpSocket", {}).get("port")
    check("%s checks the grpc port" % probe, target in ("grpc", ports["grpc"]))
for p in svc["spec"]["ports"]:
    check("Service port %s targets a container port" % p["name"], p["targetPort"] in ports)
mounts = {m["mountPath"] for m in coord["volumeMounts"]}
check("the store is on the persistent volume",
      any(config["db"].startswith(m) for m in mounts) and sts["spec"].get("volumeClaimTemplates"))
check("checkpoints go to a persistent volume of their own",
      config.get("checkpointDir") and any(config["checkpointDir"] == m for m in mounts)
      and not config["checkpointDir"].startswith(config["db"])
      and len(sts["spec"].get("volumeClaimTemplates", [])) >= 2)
check("the config file is mounted where --config points",
      any(a == "--config=" + m for a in coord["args"] for m in mounts))
volumes = {v["name"]: v for v in sts["spec"]["template"]["spec"]["volumes"]}
secret_mounts = {m["mountPath"] for m in coord["volumeMounts"] if "secret" in volumes.get(m["name"], {})}
for key in ("clientTokenFile", "readTokenFile", "workerTokenFile", "bundleKeyFile", "tlsCertFile", "tlsKeyFile"):
    check("%s is under a mounted Secret" % key, key in config and any(config[key].startswith(m) for m in secret_mounts))

wargs = dict(a[2:].split("=", 1) for a in work["args"] if "=" in a)
wports = {p["name"]: p["containerPort"] for p in work["ports"]}
check("worker --metrics-port is its metrics container port", int(wargs["metrics-port"]) == wports.get("metrics"))
# Shards: the StatefulSet's pods under a headless Service, as many as the
# config's shardCount; workers lease from each of them.
shard_svc = kinds.get(("Service", sts["spec"]["serviceName"]), {})
check("the StatefulSet's serviceName is a headless Service", shard_svc.get("spec", {}).get("clusterIP") == "None")
check("shardCount is the replica count", config.get("shardCount") == sts["spec"]["replicas"],
      "%s vs %s" % (config.get("shardCount"), sts["spec"]["replicas"]))
pattern = config.get("shardPattern", "")
check("shardPattern names the pods under the headless Service",
      pattern == "%s-{i}.%s:%d" % (sts["metadata"]["name"], sts["spec"]["serviceName"], ports["grpc"]), pattern)
shard_list = [pattern.replace("{i}", str(i)) for i in range(config.get("shardCount", 0))]
check("worker --coordinator lists every shard", wargs["coordinator"].split(",") == shard_list,
      "%s vs %s" % (wargs["coordinator"], shard_list))
check("the shards trust one another's TLS", config.get("shardCaFile", "").startswith(tuple(secret_mounts)))
check("worker asks for a GPU", work["resources"]["limits"].get("nvidia.com/gpu") == 1)
spec = ds["spec"]["template"]["spec"]
check("worker is scheduled on GPU nodes", "nvidia.com/gpu.present" in spec.get("nodeSelector", {}))
check("worker tolerates the GPU taint", any(t.get("key") == "nvidia.com/gpu" for t in spec.get("tolerations", [])))
check("worker has time to drain", spec.get("terminationGracePeriodSeconds", 30) >= 60)
check("worker token is mounted", any(wargs["token-file"].startswith(m["mountPath"]) for m in work["volumeMounts"]))
check("worker trusts the coordinator's CA", any(wargs.get("tls-ca", "-").startswith(m["mountPath"]) for m in work["volumeMounts"]))
check("the dashboard (plain HTTP, sent the read token) stays on the pod's loopback",
      config.get("dashboardAddress") == "127.0.0.1")
check("metrics are scrapeable off the pod", config.get("httpAddress") == "0.0.0.0" and wargs.get("metrics-address") == "0.0.0.0")

for unit in sorted(glob.glob(os.path.join(root, "deploy/systemd/*.service"))):
    text = open(unit).read()
    exec_start = re.search(r"^ExecStart=(\S+)(.*)$", text, re.M)
    name = os.path.basename(unit)
    check(name + " has ExecStart", exec_start is not None)
    if exec_start:
        binary = os.path.basename(exec_start.group(1))
        check(name + " runs a tir binary", binary in binaries)
        if binary in binaries:
            check_flags(name, binary, exec_start.group(2).split())
    check(name + " stops with SIGTERM", "KillSignal=SIGTERM" in text)

sys.exit(1 if failures else 0)
