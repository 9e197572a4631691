#!/bin/bash
# tir.Client over TLS: a coordinator serving with a certificate (made here
# with openssl) and a client token; the client connects with the CA, and a
# plaintext client or a missing token is refused.
set -u
root=$PWD
py=/usr/bin/python3
[[ -x $py ]] || py=python3
cd "$TEST_TMPDIR"
export HOME=$TEST_TMPDIR
port=$($py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
  -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout key.pem -out cert.pem >/dev/null 2>&1 || {
  echo "openssl could not make a certificate"; exit 1; }
echo secret-token >client.token
cat >coordinator.json <<JSON
{"listen": "127.0.0.1:$port", "db": "$TEST_TMPDIR/db", "clientTokenFile": "client.token",
 "tlsCertFile": "cert.pem", "tlsKeyFile": "key.pem", "metricsPort": 0, "dashboardPort": 0}
JSON
"$root/server/tir-coordinator" --config=coordinator.json 2>coordinator.log &
pid=$!
trap 'kill $pid 2>/dev/null; wait 2>/dev/null' EXIT
PYTHONPATH="$root/client/python" $py - "$port" <<'PYEOF'
import sys
import time

import tir

port = sys.argv[1]
ca = open("cert.pem").read()
failures = []


def check(name, ok, detail=""):
    print(("ok: " if ok else "FAIL: ") + name + ("" if ok else " (%s)" % detail))
    if not ok:
        failures.append(name)


good = tir.Client("localhost:" + port, token="secret-token", tls_root_certs=ca, timeout=10)
for _ in range(100):
    try:
        good.workers()
        break
    except tir.TirError as e:
        if e.reason != "UNAVAILABLE":
            break
        time.sleep(0.1)
try:
    good.workers()
    check("TLS with the CA and the token connects", True)
except tir.TirError as e:
    check("TLS with the CA and the token connects", False, str(e))
try:
    good.compile("tir.graph @g(", arch="host")
    check("a bad graph over TLS is INVALID_GRAPH", False, "no error")
except tir.TirError as e:
    check("a bad graph over TLS is INVALID_GRAPH", e.reason == "INVALID_GRAPH", str(e))
plain = tir.Client("localhost:" + port, token="secret-token", timeout=5, max_attempts=1)
try:
    plain.workers()
    check("a plaintext client is refused", False, "it connected")
except tir.TirError as e:
    check("a plaintext client is refused (%s)" % e.reason, e.reason == "UNAVAILABLE", str(e))
anonymous = tir.Client("localhost:" + port, tls_root_certs=ca, timeout=5, max_attempts=1)
try:
    anonymous.compile("tir.graph @g(", arch="host")
    check("no token is UNAUTHENTICATED", False, "accepted")
except tir.TirError as e:
    check("no token is UNAUTHENTICATED", e.reason == "UNAUTHENTICATED", str(e))
sys.exit(1 if failures else 0)
PYEOF
