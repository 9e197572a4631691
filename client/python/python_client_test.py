"""The Python client against a live coordinator with a host worker."""
import sys
import time

from tir import Client, TirError, check_bundle

address = sys.argv[1]
KEY = "bundle-key-1"
client = Client(address, token="client-token", bundle_key=KEY, client_name="python-test")
failures = []


def check(name, ok):
    print(("ok: " if ok else "FAIL: ") + name)
    if not ok:
        failures.append(name)


import json  # noqa: E402

from tir import client as tir_client  # noqa: E402

policy = json.loads(tir_client.retry_service_config(8, 0.25))["methodConfig"][0]
retried = {n["method"] for n in policy["name"]}
check("gRPC's retry policy retries reads and Compile, at most 5 attempts, on UNAVAILABLE only",
      {"Compile", "GetOperation", "WaitOperation", "LookupKernel"} <= retried and
      policy["retryPolicy"]["maxAttempts"] == 5 and policy["retryPolicy"]["retryableStatusCodes"] == ["UNAVAILABLE"])
check("DeleteKernel and WatchOperation are not retried", not ({"DeleteKernel", "WatchOperation"} & retried))
check("one attempt: no retry policy", tir_client.retry_service_config(1, 0.1) is None)

for _ in range(150):
    try:
        if any(w.state == "ready" for w in client.workers()):
            break
    except TirError as e:  # the coordinator is still starting
        if e.reason != "UNAVAILABLE":
            raise
    time.sleep(0.2)
check("a worker is registered", len(client.workers()) == 1)

graph = """tir.graph @py(%x: tensor<24x40xf32>, %b: tensor<1x40xf32>) -> tensor<24x40xf32> {
  %y = add %x, %b : (tensor<24x40xf32>, tensor<1x40xf32>) -> tensor<24x40xf32>
  %e = exp %y : tensor<24x40xf32>
  results %e : tensor<24x40xf32>
}
"""
op = client.compile(graph, arch="host")
check("compile starts an operation", op.name.startswith("operations/") and not op.metadata.cache_hit)
states = list(client.watch(op.name, timeout=120))
check("watch ends with the done operation", states and states[-1].done)
op = client.wait(op.name, timeout=120)
check("the bundle is tuned", op.HasField("response") and op.response.tuning.tuned)
check("every kernel verified", all(k.verification.verdict == 1 for k in op.response.kernels))
check("binaries are ELF shared objects", all(k.binary[:4] == b"\x7fELF" for k in op.response.kernels))
key = op.response.key
again = client.compile(graph, arch="host")
check("the repeat is a cache hit", again.done and again.metadata.cache_hit and again.response.key == key)
check("lookup finds it", client.lookup(graph, "host").found)
check("listed", key in [b.key for b in client.list_kernels()])
check("get_kernel", client.get_kernel(key).key == key)
now = client.compile(graph.replace("24x40", "8x40"), arch="host", heuristic_now=True)
check("heuristic-now answers with the default", now.done and not now.response.tuning.tuned)
# A graph with a dynamic dim: compiled at a shape, served sized for it.
dynamic = """tir.graph @pyd(%x: tensor<?x40xf32>) -> tensor<?x40xf32> {
  %e = exp %x : tensor<?x40xf32>
  results %e : tensor<?x40xf32>
}
"""
d = client.wait(client.compile(dynamic, arch="host", shapes={0: [24, 40]}).name, timeout=120)
check("a dynamic graph is served at its shape",
      d.HasField("response") and list(d.response.inputs[0].shape) == [24, 40] and d.response.served_shape.passed)
check("its bucket is shown", d.metadata.shape_bucket == "0:0=17..32")
found = client.lookup(dynamic, "host", shapes={0: [24, 40]})
check("lookup with the shape finds it verified", found.found and found.shape_verified)
try:
    client.compile(dynamic, arch="host")
    check("a dynamic graph without shapes raises", False)
except TirError as e:
    check("a dynamic graph without shapes raises SHAPE_HINT_MISSING", e.reason == "SHAPE_HINT_MISSING")
try:
    client.compile("tir.graph @bad(", arch="host")
    check("a malformed graph raises", False)
except TirError as e:
    check("a malformed graph raises INVALID_GRAPH", e.reason == "INVALID_GRAPH" and "parse" in e.message)
try:
    client.compile(graph, arch="sm_42")
    check("an unknown arch raises", False)
except TirError as e:
    check("an unknown arch raises UNKNOWN_ARCH", e.reason == "UNKNOWN_ARCH")
# Signatures: every bundle answered was checked against the key (or the call
# raised); a client with another key refuses them; a changed bundle fails.
bundle = client.get_kernel(key)
check("the bundle is signed with the key", bundle.signature.algorithm == "hmac-sha256")
try:
    Client(address, token="client-token", bundle_key="another-key").get_kernel(key)
    check("another key is refused", False)
except TirError as e:
    check("another key is refused with BUNDLE_KEY_MISMATCH", e.reason == "BUNDLE_KEY_MISMATCH")
bundle.kernels[0].binary = bundle.kernels[0].binary + b"\0"
try:
    check_bundle(bundle, KEY)
    check("an altered binary is refused", False)
except TirError as e:
    check("an altered binary is refused with BUNDLE_SIGNATURE_INVALID", e.reason == "BUNDLE_SIGNATURE_INVALID")
# Tokens: the read token reads and nothing else; no token, nothing.
reader = Client(address, token="read-token", bundle_key=KEY)
check("the read token reads", reader.get_kernel(key).key == key and len(reader.workers()) == 1)
for who, c, calls in [("no token", Client(address), ["compile", "workers", "get_kernel"]),
                      ("the read token", reader, ["compile", "delete_kernel"])]:
    for name in calls:
        try:
            {"compile": lambda: c.compile(graph, arch="host"), "workers": lambda: c.workers(),
             "get_kernel": lambda: c.get_kernel(key), "delete_kernel": lambda: c.delete_kernel(key)}[name]()
            check("%s with %s is refused" % (name, who), False)
        except TirError as e:
            # The read token is known and may only read: a write is forbidden to it.
            want = "READ_ONLY_ROLE" if c is reader else "UNAUTHENTICATED"
            check("%s with %s is %s" % (name, who, want), e.reason == want)
check("delete", client.delete_kernel(key))
try:
    client.get_kernel(key)
    check("a deleted kernel is gone", False)
except TirError as e:
    check("a deleted kernel is NOT_FOUND", e.reason == "NOT_FOUND")
sys.exit(1 if failures else 0)
