"""The user's local service from Python: one tir service per user and cache
directory, shared with tirctl and every other process of the user, started
on first use and exiting when idle (client/local_service.h has the design).

    service = tir.local_service.ensure(timeout=30)   # found, or started
    service.address, service.arch                    # "unix:/home/u/.cache/tir/service/sock", "host"

A running service is found through its record (<cache>/service/service.json)
and a call it answers. When none runs, `tirctl service start` starts it
(tirctl takes the lock, so simultaneous first users start one service);
tirctl is found in $TIR_BIN_DIR, on PATH (deploy/install.sh puts it in
PREFIX/bin), or in the bazel-bin of the checkout this package came from.
There is never a private store: when the service cannot start, the error
says why (SERVICE_START_FAILED with its log, DEADLINE_EXCEEDED, ...).
"""

import os
import shutil
import stat
import subprocess
import time

import grpc
from google.protobuf import json_format

from tir.client import Client, TirError
from tir.v1 import local_service_pb2

_BINARIES = {"tirctl": ("tirctl", "client/tirctl"),
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
    """tirctl (or tir-worker-runner): $TIR_BIN_DIR, PATH, the checkout's
    bazel-bin. RUNNER_NOT_FOUND when none is found."""
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
                   "the local service is started by %s: set TIR_BIN_DIR, put it on PATH (deploy/install.sh) or build "
                   "the checkout (bazel build //client:tirctl)" % name)


def cache_dir(path=None):
    """`path`, else $XDG_CACHE_HOME/tir, else ~/.cache/tir (as tirctl's)."""
    if path:
        return os.path.abspath(path)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.abspath(os.path.join(base, "tir"))


def service_dir(path=None):
    return os.path.join(cache_dir(path), "service")


def _private(path):
    """An existing service directory must be this user's alone."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        raise TirError(grpc.StatusCode.FAILED_PRECONDITION, "UNSAFE_DIRECTORY",
                       "%s must be a directory owned by this user with mode 0700 (the local service's socket and "
                       "lock are in it)" % path)


def _read_token(path):
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        raise TirError(grpc.StatusCode.FAILED_PRECONDITION, "UNSAFE_DIRECTORY",
                       "%s must be a regular file of this user's with mode 0600" % path)
    with open(path) as f:
        return f.read().strip()


def client_for(service, timeout=30.0, **options):
    """A tir.Client of `service` (a LocalService record): its address, and
    its token when it serves on TCP."""
    token = _read_token(service.token_file) if service.token_file else None
    return Client(service.address, token=token, timeout=timeout, **options)


def _record(path):
    try:
        with open(os.path.join(service_dir(path), "service.json")) as f:
            text = f.read()
        return json_format.Parse(text, local_service_pb2.LocalService(), ignore_unknown_fields=True)
    except (OSError, json_format.ParseError):
        return None


def _answers(service, timeout):
    try:
        with client_for(service, timeout=timeout, max_attempts=1) as client:
            client.workers()
        return True
    except (TirError, OSError):
        return False


def find(path=None, timeout=2.0):
    """The running service's record (tir.v1.LocalService) when it answers
    within `timeout` seconds, else None."""
    _private(service_dir(path))
    service = _record(path)
    if service is not None and service.address and _answers(service, timeout):
        return service
    return None


def ensure(path=None, backend=None, timeout=60.0):
    """The running service, started first (through tirctl) when none runs.
    Takes at most `timeout` seconds in all. `backend` (auto, host, cuda):
    the worker's, for a service started here."""
    end = time.monotonic() + timeout
    service = find(path, timeout=min(2.0, timeout))
    if service is not None:
        return service
    left = max(end - time.monotonic(), 0.001)
    argv = [find_binary("tirctl"), "service", "start", "-o", "json", "--cache-dir=" + cache_dir(path),
            "--timeout=%.3f" % left]
    if backend:
        argv.append("--backend=" + backend)
    env = dict(os.environ)
    if "TIR_WORKER_RUNNER" not in env:
        try:
            env["TIR_WORKER_RUNNER"] = find_binary("runner")
        except TirError:
            pass  # tirctl finds its own (beside it, in its runfiles)
    try:
        # tirctl honours its --timeout; the margin only covers its own start.
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env,
                              timeout=left + 5.0)
    except subprocess.TimeoutExpired:
        raise TirError(grpc.StatusCode.DEADLINE_EXCEEDED, "DEADLINE_EXCEEDED",
                       "the local service did not answer within %.1f s" % timeout) from None
    if done.returncode != 0:
        message = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "tirctl exited %d" % done.returncode
        if message.startswith("tirctl: "):
            message = message[len("tirctl: "):]
        reason, _, detail = message.partition(": ")
        if not reason.isupper() or not detail:
            reason, detail = "SERVICE_START_FAILED", message
        code = {"DEADLINE_EXCEEDED": grpc.StatusCode.DEADLINE_EXCEEDED,
                "UNSAFE_DIRECTORY": grpc.StatusCode.FAILED_PRECONDITION,
                "SERVICE_MISMATCH": grpc.StatusCode.FAILED_PRECONDITION}.get(reason, grpc.StatusCode.UNAVAILABLE)
        raise TirError(code, reason, detail)
    return json_format.Parse(done.stdout, local_service_pb2.LocalService(), ignore_unknown_fields=True)


def stop(path=None, timeout=60.0):
    """Stops the running service (`tirctl service stop`); False when none ran."""
    done = subprocess.run([find_binary("tirctl"), "service", "stop", "--cache-dir=" + cache_dir(path),
                           "--timeout=%.3f" % timeout], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout + 5.0)
    if done.returncode != 0:
        raise TirError(grpc.StatusCode.UNAVAILABLE, "UNAVAILABLE", done.stderr.strip())
    return done.stdout.startswith("stopped")
