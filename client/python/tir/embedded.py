"""The embedded default for Python: a coordinator and one worker started by
this process (the service's own binaries, over loopback gRPC), with the store
under the user's cache, stopped when the process exits. What `tirctl compile`
without `--server` does in its own process (client/embedded.h).

The binaries are found in $TIR_BIN_DIR, else on PATH (deploy/install.sh puts
them in PREFIX/bin), else in the checkout's bazel-bin this package was
installed from. RUNNER_NOT_FOUND when none is found.
"""

import atexit
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

import grpc

from tir.client import Client, TirError

_lock = threading.Lock()
_service = None

_BINARIES = {"coordinator": ("tir-coordinator", "server/tir-coordinator"),
             "worker": ("tir-worker", "worker/tir-worker"),
             "runner": ("tir-worker-runner", "worker/runner/tir-worker-runner")}


def _checkouts():
    here = os.path.dirname(os.path.abspath(__file__))
    roots = [os.environ.get("TIR_CHECKOUT", "")]
    # An editable or Bazel layout: client/python/tir/ inside the checkout.
    roots.append(os.path.normpath(os.path.join(here, "..", "..", "..")))
    try:
        from tir import _installed_from  # written by setup.py
        roots.append(_installed_from.CHECKOUT)
    except ImportError:
        pass
    return [r for r in roots if r]


def find_binary(what):
    name, rel = _BINARIES[what]
    bin_dir = os.environ.get("TIR_BIN_DIR")
    candidates = []
    if bin_dir:
        candidates += [os.path.join(bin_dir, name), os.path.join(bin_dir, rel)]
    found = shutil.which(name)
    if found:
        candidates.append(found)
    for root in _checkouts():
        candidates += [os.path.join(root, "bazel-bin", rel), os.path.join(root, rel)]
    for c in candidates:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    raise TirError(grpc.StatusCode.FAILED_PRECONDITION, "RUNNER_NOT_FOUND",
                   "the embedded service needs %s: set TIR_BIN_DIR, put it on PATH (deploy/install.sh) or build the "
                   "checkout (bazel build //server:tir-coordinator //worker:tir-worker //worker/runner:tir-worker-runner)"
                   % name)


def _die_with_parent():
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EmbeddedService:
    """A coordinator and a worker (`backend`: auto, host or cuda) under
    `cache_dir`. `address` and `arch` once started."""

    def __init__(self, cache_dir=None, backend="auto", start_timeout=60.0):
        base = cache_dir or os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "tir")
        self.dir = os.path.join(base, "python")
        os.makedirs(self.dir, exist_ok=True)
        self._procs = []
        self.address, self.arch = None, None
        coordinator, worker, runner = find_binary("coordinator"), find_binary("worker"), find_binary("runner")
        db = os.path.join(self.dir, "db")
        client = None
        for _ in range(2):
            port = _free_port()
            self.address = "127.0.0.1:%d" % port
            proc = self._spawn([coordinator, "--listen=" + self.address, "--db=" + db, "--metrics_port=0",
                                "--dashboard_port=0"], "coordinator.log")
            # Listening, or gone: the store held by another process (another
            # embedded service) makes it exit, and this one keeps its own.
            # (A plain connect: a gRPC channel that failed once backs off.)
            end = time.monotonic() + start_timeout
            while proc.poll() is None and time.monotonic() < end:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                    break
                except OSError:
                    time.sleep(0.02)
            if proc.poll() is None:
                client = Client(self.address, timeout=5.0)
                break
            self._procs.remove(proc)
            db = tempfile.mkdtemp(prefix="db-", dir=self.dir)
        else:
            raise TirError(grpc.StatusCode.UNAVAILABLE, "UNAVAILABLE",
                           "the embedded coordinator did not start; see %s/coordinator.log" % self.dir)
        self._spawn([worker, "--coordinator=" + self.address, "--backend=" + backend,
                     "--work_dir=" + os.path.join(self.dir, "worker"), "--runner=" + runner], "worker.log")
        atexit.register(self.stop)
        end = time.monotonic() + start_timeout
        try:
            while time.monotonic() < end:
                for p in self._procs:
                    if p.poll() is not None:
                        raise TirError(grpc.StatusCode.UNAVAILABLE, "UNAVAILABLE",
                                       "the embedded service exited (status %d); see %s" % (p.returncode, self.dir))
                try:
                    workers = client.workers()
                except TirError:
                    workers = []
                if workers:
                    self.arch = workers[0].arch
                    return
                time.sleep(0.1)
        finally:
            client.close()
        self.stop()
        raise TirError(grpc.StatusCode.DEADLINE_EXCEEDED, "UNAVAILABLE",
                       "the embedded worker did not register within %.0f s; see %s/worker.log" % (start_timeout, self.dir))

    def _spawn(self, argv, log_name):
        """A child that dies with this process (PR_SET_PDEATHSIG), even when
        it ends without running atexit (a crash, SIGKILL)."""
        with open(os.path.join(self.dir, log_name), "ab") as log:
            proc = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        self._procs.append(proc)
        return proc

    def stop(self):
        for p in reversed(self._procs):
            if p.poll() is None:
                p.terminate()
        for p in reversed(self._procs):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        self._procs = []


def default():
    """The process's embedded service, started on first use."""
    global _service
    with _lock:
        if _service is None:
            _service = EmbeddedService()
        return _service
