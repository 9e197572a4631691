"""The user's local service from Python and tirctl at once, with real
processes: simultaneous first users share one service and one store (the
repeat is a cache hit), progress reaches callbacks (and a terminal), a
service that never answers costs the timeout given, a killed or stopped
service comes back with its store, and no process makes a store of its own.

Run by local_service_test.sh (XDG_CACHE_HOME: a short, fresh directory;
TIR_BIN_DIR: the runfiles root with client/tirctl)."""

import fcntl
import json
import os
import pty
import pwd
import signal
import socket
import subprocess
import sys
import threading
import time

import junit  # tests/testing: results as JUnit XML

import tir
from tir import TirError, local_service

results = junit.Results("local_service_test")
root = os.environ["TIR_BIN_DIR"]
tirctl = os.path.join(root, "client", "tirctl")
cache = local_service.cache_dir()
# Time a call may take past the timeout it was given on a loaded machine
# (a Python or tirctl process starting included).
SLACK = 2.5


def check(name, ok, detail=""):
    results.check(name, ok, detail)


def graph(name, rows, cols, op="exp"):
    t = "tensor<%dx%dxf32>" % (rows, cols)
    return "tir.graph @%s(%%x: %s) -> %s {\n  %%y = %s %%x : %s\n  results %%y : %s\n}\n" % (name, t, t, op, t, t)


def write_graph(text, name):
    path = os.path.abspath(name + ".mlir")  # in the test's working directory
    with open(path, "w") as f:
        f.write(text)
    return path


# A child Python process: compiles argv[1] through the local service and
# prints the service's pid, the key and whether it was a cache hit.
CHILD = r"""
import json, sys
import tir
from tir import local_service
client = tir.connect(timeout=60)
op = client.compile(sys.argv[1], arch=client.default_arch)
if not op.done:
    op = client.wait(op.name, 300)
print(json.dumps({"pid": local_service.find().pid, "key": op.response.key, "cache_hit": op.metadata.cache_hit}))
"""


def python(*args, **kwargs):
    return subprocess.Popen([sys.executable, "-c", CHILD] + list(args), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def tirctl_run(*args, timeout=300, **kwargs):
    return subprocess.run([tirctl] + list(args), capture_output=True, text=True, timeout=timeout, **kwargs)


def service_pid():
    done = tirctl_run("service", "status", "-o", "json")
    return int(json.loads(done.stdout)["pid"]) if done.returncode == 0 else None


def lock_free(lock, within):
    """Waits (bounded) until nobody holds the service's lock."""
    end = time.monotonic() + within
    with open(lock, "a") as f:
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(f, fcntl.LOCK_UN)
                return True
            except BlockingIOError:
                if time.monotonic() > end:
                    return False
                time.sleep(0.02)


# -- simultaneous first use: two Python processes and tirctl ------------------

check("no service runs at first", local_service.find() is None)
g1 = graph("shared", 24, 40)
g1_path = write_graph(g1, "shared")
children = [python(g1), python(g1)]
cli = subprocess.Popen([tirctl, "compile", g1_path, "--arch", "host", "--output=json", "-o",
                        os.path.abspath("cli.pb")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
outs = [c.communicate(timeout=300) for c in children]
cli_out, cli_err = cli.communicate(timeout=300)
check("both Python processes compiled", all(c.returncode == 0 for c in children), [o[1][-500:] for o in outs])
check("tirctl compiled", cli.returncode == 0, cli_err[-500:])
got = [json.loads(o[0]) for o in outs if o[0].strip()]
pid = service_pid()
check("all of them used one service", len(got) == 2 and {g["pid"] for g in got} == {pid}, (got, pid))
cli_op = json.loads(cli_out) if cli.returncode == 0 else {}
check("... and compiled to one bundle", len({g["key"] for g in got} | {cli_op.get("response", {}).get("key")}) == 1,
      (got, cli_op.get("response", {}).get("key")))
log = os.path.join(cache, "service", "service.log")
serving = open(log).read().count("serving on ")
check("exactly one service was started", serving == 1 and not os.path.exists(log + ".1"), open(log).read()[-800:])

# The second compile, from another process of either kind, is a cache hit.
again = python(g1)
out, err = again.communicate(timeout=120)
check("a later Python process gets a cache hit", again.returncode == 0 and json.loads(out)["cache_hit"], err[-500:])
done = tirctl_run("compile", g1_path, "--arch", "host")
check("a later tirctl gets a cache hit", done.returncode == 0 and "cache hit" in done.stdout, done.stderr[-500:])
listed = json.loads(tirctl_run("ls", "-o", "json").stdout)
check("one store: tirctl lists the bundle once", [b["key"] for b in listed.get("kernels", [])] == [got[0]["key"]],
      listed)

# What Python compiles, tirctl finds.
b2 = tir.compile(graph("from_python", 16, 32, "tanh_fwd"), progress=False)
done = tirctl_run("get", b2.key)
check("tirctl gets what Python compiled", done.returncode == 0 and b2.key in done.stdout, done.stderr[-300:])

# -- progress --------------------------------------------------------------------

seen = []
tir.compile(graph("progress", 48, 64, "sigmoid_fwd"), progress=seen.append)
measured = [p.candidates_measured for p in seen]
check("the progress callback is called as the compile goes", len(seen) >= 2, [str(p) for p in seen])
check("... with counts that only grow", measured == sorted(measured) and
      [p.elapsed for p in seen] == sorted(p.elapsed for p in seen), [str(p) for p in seen])
last = seen[-1] if seen else None
check("... ending done, every candidate measured", last is not None and last.done and last.kernels >= 1 and
      0 < last.candidates_total == last.candidates_measured, str(last))
check("... and saying it tuned", last is not None and str(last).startswith("tuned: 1 kernel"), str(last))
seen = []
tir.compile(graph("progress", 48, 64, "sigmoid_fwd"), progress=seen.append)
check("a cache hit reports its end once", len(seen) == 1 and seen[0].cache_hit and seen[0].done,
      [str(p) for p in seen])


def on_a_terminal(argv):
    """Runs argv with stderr on a pseudo-terminal: what it drew there."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    drawn = []

    def drain():
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:
                return
            if not data:
                return
            drawn.append(data)

    reader = threading.Thread(target=drain)
    reader.start()
    proc.communicate(timeout=300)
    reader.join(timeout=10)
    os.close(master)
    return proc.returncode, b"".join(drawn).decode(errors="replace")


code = "import tir; tir.compile(%r)" % graph("tty_python", 40, 48, "relu_fwd")
rc, drawn = on_a_terminal([sys.executable, "-c", code])
check("Python draws progress on a terminal's stderr by default",
      rc == 0 and "tir: tuning: 1 kernel planned" in drawn and "candidates measured" in drawn, drawn[-500:])
quiet = subprocess.run([sys.executable, "-c", code.replace("tty_python", "pipe_python")], capture_output=True,
                       text=True, timeout=300)
check("... and nothing when stderr is not a terminal", quiet.returncode == 0 and "candidates" not in quiet.stderr,
      quiet.stderr[-500:])
rc, drawn = on_a_terminal([tirctl, "compile", write_graph(graph("tty_cli", 40, 56, "relu_fwd"), "tty_cli"),
                           "--arch", "host"])
check("tirctl compile draws progress on a terminal", rc == 0 and "candidates measured" in drawn, drawn[-500:])
done = tirctl_run("compile", write_graph(graph("pipe_cli", 40, 64, "relu_fwd"), "pipe_cli"), "--arch", "host")
check("... and not when stderr is not one", done.returncode == 0 and "candidates" not in done.stderr,
      done.stderr[-500:])

# -- a service that never answers costs the timeout ------------------------------


class Silent:
    """Accepts connections (TCP, or a Unix socket at `path`) and never
    answers."""

    def __init__(self, path=None):
        if path:
            self.sock = socket.socket(socket.AF_UNIX)
            self.sock.bind(path)
            self.address = "unix:" + path
        else:
            self.sock = socket.socket()
            self.sock.bind(("127.0.0.1", 0))
            self.address = "127.0.0.1:%d" % self.sock.getsockname()[1]
        self.sock.listen(64)
        self.held = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                self.held.append(self.sock.accept()[0])
            except OSError:
                return


silent = Silent()
start = time.monotonic()
try:
    tir.compile(g1, server=silent.address, arch="host", timeout=2, progress=False)
    check("a server that never answers fails the compile", False)
except tir.TirError as e:
    took = time.monotonic() - start
    check("a server that never answers costs tir.compile its timeout (2 s)",
          e.reason in ("DEADLINE_EXCEEDED", "UNAVAILABLE") and took < 2 + SLACK, "%s after %.1f s" % (e, took))
# A coordinator that takes the call and never answers it (gRPC up, the
# handler stuck): what held a backend with timeout=5 for 23 s.
from concurrent import futures  # noqa: E402

import grpc  # noqa: E402

release = threading.Event()


def stuck(request, context):
    release.wait(60)
    context.abort(grpc.StatusCode.UNAVAILABLE, "released")


stuck_server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
stuck_server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler("tir.v1.CompilerService", {
    m: grpc.unary_unary_rpc_method_handler(stuck, request_deserializer=lambda b: b, response_serializer=lambda b: b)
    for m in ("Compile", "WaitOperation", "GetOperation", "ListWorkers")})])
stuck_address = "127.0.0.1:%d" % stuck_server.add_insecure_port("127.0.0.1:0")
stuck_server.start()
start = time.monotonic()
try:
    tir.compile(g1, server=stuck_address, arch="host", timeout=2, progress=False)
    check("a server whose handler never returns fails the compile", False)
except tir.TirError as e:
    took = time.monotonic() - start
    check("a server whose handler never returns costs tir.compile its timeout (2 s)",
          e.reason == "DEADLINE_EXCEEDED" and took < 2 + SLACK, "%s after %.1f s" % (e, took))
try:
    import torch
    import torch.fx
except ImportError:
    torch = None
if torch is None:
    results.skip("the torch backend with a server that never answers", "no torch")
else:
    class Block(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x) + 1

    import warnings
    for what, address in (("accepts and never answers", silent.address), ("never returns a call", stuck_address)):
        backend = tir.torch_backend(server=address, arch="host", timeout=2)
        x = torch.randn(4, 8)
        start = time.monotonic()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = backend(torch.fx.symbolic_trace(Block()), [x])
            y = run(x)
        took = time.monotonic() - start
        check("the torch backend with a server that %s runs eagerly within its timeout (2 s)" % what,
              torch.allclose(y, torch.relu(x) + 1) and backend.regions_eager == 1 and took < 2 + SLACK,
              "%.1f s, %s" % (took, backend.warnings))
release.set()
stuck_server.stop(0)

# A local service that holds its lock and never answers (another cache).
hung_cache = os.path.join(os.path.dirname(cache), "hung")
hung_dir = os.path.join(hung_cache, "tir", "service")
os.makedirs(hung_dir, mode=0o700)
os.chmod(os.path.dirname(hung_dir), 0o700)
lock = open(os.path.join(hung_dir, "lock"), "a")
fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
hung = Silent(os.path.join(hung_dir, "sock"))
with open(os.path.join(hung_dir, "service.json"), "w") as f:
    json.dump({"address": hung.address, "pid": os.getpid()}, f)
env = dict(os.environ, XDG_CACHE_HOME=hung_cache)
start = time.monotonic()
done = subprocess.run([sys.executable, "-c", "import tir; tir.compile(%r, timeout=2, progress=False)" % g1],
                      capture_output=True, text=True, env=env, timeout=60)
took = time.monotonic() - start
check("a local service that never answers costs tir.compile its timeout (2 s)",
      done.returncode != 0 and "DEADLINE_EXCEEDED" in done.stderr and took < 2 + SLACK,
      "%.1f s: %s" % (took, done.stderr[-400:]))
start = time.monotonic()
done = tirctl_run("compile", g1_path, "--timeout", "2", env=env, timeout=60)
took = time.monotonic() - start
check("... and tirctl compile its --timeout (2 s)",
      done.returncode == 1 and "DEADLINE_EXCEEDED" in done.stderr and took < 2 + SLACK,
      "%.1f s: %s" % (took, done.stderr[-400:]))
check("... and no store is made beside it", not os.path.exists(os.path.join(hung_cache, "tir", "store")))
lock.close()

# -- a killed service is replaced; a stopped one comes back; one store -------------

client = tir.connect()
first = local_service.find()
os.kill(first.pid, signal.SIGKILL)
check("a killed service frees its lock", lock_free(os.path.join(cache, "service", "lock"), 30))
child = python(g1)
out, err = child.communicate(timeout=120)
after = json.loads(out) if child.returncode == 0 else {}
check("the next process starts another service, on the same store (a cache hit)",
      after.get("pid") not in (None, first.pid) and after.get("cache_hit"), (after, err[-500:]))
check("the old process's client reaches the new service", client.workers() != [])
done = tirctl_run("service", "stop")
check("tirctl service stop stops it", done.returncode == 0 and done.stdout.startswith("stopped"), done.stdout)
bundle = tir.compile(g1, client=client, progress=False)
check("a client kept across a stop gets the service back, and its bundle",
      bundle.key == got[0]["key"] and local_service.find() is not None)
client.close()

# -- a stale record whose loopback port another local user took ---------------------
# A cache path too long for a Unix socket: the service serves loopback TCP
# with a token. Killed, it leaves its record; the attacker (nobody, where
# this test can become it) binds the port. Nothing is sent there.

SQUAT = r"""
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    print("connection", c.recv(65536)[:32], flush=True)
"""


def another_user():
    if os.geteuid() == 0:
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
        except OSError:
            pass  # a user namespace that maps nobody else: another process of this user's


long_cache = os.path.join(os.path.dirname(cache), "d" * 60, "e" * 60)
first = local_service.ensure(path=long_cache, backend="host", timeout=60)
check("a long cache path serves loopback TCP", first.address.startswith("127.0.0.1:"), first.address)
os.kill(first.pid, signal.SIGKILL)
check("... and a killed one frees its lock", lock_free(os.path.join(long_cache, "service", "lock"), 30))
squatter = subprocess.Popen([sys.executable, "-c", SQUAT, first.address.rsplit(":", 1)[1]], stdout=subprocess.PIPE,
                            text=True, preexec_fn=another_user)
check("the attacker binds the dead service's port", squatter.stdout.readline().strip() == "ready")
stale = local_service._record(long_cache)
try:
    local_service.verify(stale, long_cache)
    why = "trusted"
except TirError as e:
    why = e.reason
check("the stale record is not trusted", why == "UNTRUSTED_SERVICE_RECORD", why)
check("find() does not use it", local_service.find(long_cache) is None)
fresh = local_service.ensure(path=long_cache, backend="host", timeout=60)
check("ensure() starts a fresh service on a port of its own",
      fresh.pid != first.pid and fresh.address != first.address, (first.address, fresh.address))
with local_service.client_for(fresh) as c:
    check("... which answers", c.workers() != [])
squatter.kill()
got = squatter.communicate()[0]
check("the attacker's listener got no connection (nor the token)", "connection" not in got, got[-300:])
check("that service stops", local_service.stop(long_cache))

# Without HOME and XDG_CACHE_HOME: the passwd entry's home, never /tmp.
env = {k: v for k, v in os.environ.items() if k not in ("HOME", "XDG_CACHE_HOME")}
done = subprocess.run([sys.executable, "-c", "from tir import local_service; print(local_service.cache_dir())"],
                      env=env, capture_output=True, text=True, timeout=60)
want = os.path.join(pwd.getpwuid(os.geteuid()).pw_dir, ".cache", "tir")
check("without HOME and XDG_CACHE_HOME the cache is the passwd entry's home's, never under /tmp",
      done.stdout.strip() == want and not want.startswith("/tmp"), (done.stdout, done.stderr[-300:]))

# -- no private store -------------------------------------------------------------

entries = sorted(os.listdir(cache))
stores = [d for d, _, _ in os.walk(cache) if os.path.exists(os.path.join(d, "CURRENT"))]
check("one store, the service's; nothing private to a process",
      stores == [os.path.join(cache, "store")] and "python" not in entries and
      not any(e.startswith("db-") for e in entries), (entries, stores))
check("stop says so", local_service.stop() and local_service.find() is None)

sys.exit(results.exit())
