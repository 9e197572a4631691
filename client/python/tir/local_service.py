"""The user's local service from Python: one tir service per user and cache
directory, shared with tirctl and every other process of the user, started
on first use and exiting when idle (client/local_service.h has the design).

    service = tir.local_service.ensure(timeout=30)   # found, or started
    service.address, service.arch                    # "unix:/home/u/.cache/tir/service/sock", "host"

A running service is found through its record (<cache>/service/service.json)
and a call it answers. The record is trusted first, as tirctl trusts it: its
pid is a live process of this user's that has the service's lock file open
while the lock is held, and owns the socket listening at the recorded
address (/proc). Nothing, and no token, is sent to an address before; a
stale record (its service gone, its TCP port perhaps taken by another local
user) is replaced by starting a fresh service. When none runs, `tirctl service start` starts it
(tirctl takes the lock, so simultaneous first users start one service);
tirctl is found in $TIR_BIN_DIR, on PATH (deploy/install.sh puts it in
PREFIX/bin), or in the bazel-bin of the checkout this package came from.
There is never a private store: when the service cannot start, the error
says why (SERVICE_START_FAILED with its log, DEADLINE_EXCEEDED, ...).
"""

import fcntl
import os
import shutil
import socket
import stat
import subprocess
import time

import grpc
from google.protobuf import json_format

from tir import _paths
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
    """`path`, else $XDG_CACHE_HOME/tir, else ~/.cache/tir, else the passwd
    entry's home's (as tirctl's); never a shared directory such as /tmp
    (NO_CACHE_DIRECTORY)."""
    return os.path.abspath(path or _paths.cache_dir())


def service_dir(path=None):
    return os.path.join(cache_dir(path), "service")


def _private(path):
    """An existing service directory must be this user's alone, under
    directories only root and this user can change (UNSAFE_DIRECTORY);
    False when there is none."""
    try:
        _paths.trusted_dir(path, create=False)
    except TirError as e:
        if e.reason == "NOT_FOUND":
            return False
        raise
    return True


def _untrusted(why):
    return TirError(grpc.StatusCode.FAILED_PRECONDITION, "UNTRUSTED_SERVICE_RECORD",
                    "the local service's record is not trusted: " + why)


def _lines(path):
    try:
        with open(path) as f:
            return f.read().splitlines()[1:]  # past the header
    except OSError:
        return []


def _descriptors(pid):
    """What process `pid` has open: files as (device, inode), socket inodes."""
    fd_dir = "/proc/%d/fd" % pid
    try:
        names = os.listdir(fd_dir)
    except OSError as e:
        raise _untrusted("cannot list the descriptors of pid %d (%s)" % (pid, e.strerror)) from None
    files, sockets = set(), set()
    for name in names:
        p = os.path.join(fd_dir, name)
        try:
            target = os.readlink(p)
            if target.startswith("socket:[") and target.endswith("]"):
                sockets.add(int(target[len("socket:["):-1]))
                continue
            st = os.stat(p)
        except (OSError, ValueError):
            continue
        files.add((st.st_dev, st.st_ino))
    return files, sockets


_LOOPBACK = socket.htonl(0x7F000001)


def _tcp_listeners(port):
    """Inodes of the sockets that take connections made to 127.0.0.1:`port`
    (listening there or on the any-address, IPv4 or IPv6)."""
    out = set()
    for table, v6 in (("/proc/net/tcp", False), ("/proc/net/tcp6", True)):
        for line in _lines(table):
            f = line.split()
            if len(f) < 10 or f[3] != "0A":  # 0A: LISTEN
                continue
            addr, _, hex_port = f[1].partition(":")
            try:
                if int(hex_port, 16) != port:
                    continue
                if not v6 and len(addr) == 8:
                    reaches = int(addr, 16) in (0, _LOOPBACK)
                elif v6 and len(addr) == 32:
                    w = [int(addr[i:i + 8], 16) for i in range(0, 32, 8)]
                    reaches = not any(w) or w[:3] == [0, 0, socket.htonl(0xFFFF)] and w[3] == _LOOPBACK
                else:
                    reaches = False
                if reaches:
                    out.add(int(f[9]))
            except ValueError:
                continue
    return out


def _unix_listeners(path):
    """Inodes of the Unix sockets listening at `path`."""
    out = set()
    for line in _lines("/proc/net/unix"):
        f = line.split(None, 7)  # Num RefCount Protocol Flags Type St Inode Path
        try:
            if len(f) == 8 and f[7] == path and int(f[3], 16) & 0x10000:  # __SO_ACCEPTCON
                out.add(int(f[6]))
        except ValueError:
            continue
    return out


def verify(service, path=None):
    """Raises UNTRUSTED_SERVICE_RECORD unless `service` (a LocalService
    record) names this user's running service of cache `path`: its address
    is the service directory's socket (or loopback TCP with the directory's
    token file), its pid a live process of this user's that has the lock
    file open while the lock is held, and every socket listening at the
    address one of that process's."""
    d = service_dir(path)
    sock, lock, token = os.path.join(d, "sock"), os.path.join(d, "lock"), os.path.join(d, "client.token")
    unix = service.address == "unix:" + sock
    port = 0
    if not unix:
        host, _, text = service.address.rpartition(":")
        port = int(text) if host == "127.0.0.1" and text.isdigit() else 0
        if not 0 < port < 65536:
            raise _untrusted("its address %s is neither %s nor a loopback TCP port" % (service.address, sock))
        if service.token_file != token:
            raise _untrusted("it names TCP and not the token file %s" % token)
    elif service.token_file and service.token_file != token:
        raise _untrusted("its token file %s is not %s" % (service.token_file, token))
    pid = service.pid
    if pid <= 0:
        raise _untrusted("it names no process")
    try:
        owner = os.stat("/proc/%d" % pid).st_uid
    except OSError:
        raise _untrusted("its process (pid %d) is gone: the service ended without removing it" % pid) from None
    if owner != os.geteuid():
        raise _untrusted("pid %d is another user's process (uid %d)" % (pid, owner))
    files, sockets = _descriptors(pid)
    try:
        st = os.lstat(lock)
    except OSError:
        st = None
    if st is None or not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
        raise _untrusted("%s is missing or not this user's file" % lock)
    if (st.st_dev, st.st_ino) not in files:
        raise _untrusted("pid %d does not hold %s (it is not the service)" % (pid, lock))
    fd = os.open(lock, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held = False
    except BlockingIOError:
        held = True
    finally:
        os.close(fd)
    if not held:
        raise _untrusted("nobody holds %s" % lock)
    listening = _unix_listeners(sock) if unix else _tcp_listeners(port)
    if not listening:
        raise _untrusted("nothing listens at %s" % service.address)
    if not listening <= sockets:
        raise _untrusted("a socket listening at %s is not pid %d's: another process holds that address"
                         % (service.address, pid))


def _read_token(path):
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        raise TirError(grpc.StatusCode.FAILED_PRECONDITION, "UNSAFE_DIRECTORY",
                       "%s must be a regular file of this user's with mode 0600" % path)
    with open(path) as f:
        return f.read().strip()


def client_for(service, timeout=30.0, **options):
    """A tir.Client of `service` (a LocalService record from find() or
    ensure(), which trust it first): its address, and its token when it
    serves on TCP."""
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
    """The running service's record (tir.v1.LocalService) when it is
    trusted (verify) and answers within `timeout` seconds, else None."""
    if not _private(service_dir(path)):
        return None
    service = _record(path)
    if service is None or not service.address:
        return None
    try:
        verify(service, path)  # before anything is sent to its address
    except (TirError, OSError):
        return None  # stale: ensure() has tirctl replace it
    return service if _answers(service, timeout) else None


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
                "NO_CACHE_DIRECTORY": grpc.StatusCode.FAILED_PRECONDITION,
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
