"""tir for Python: the client of a tir coordinator, bundles you can run, and
PyTorch integration.

    import tir
    bundle = tir.compile(open("mlp.mlir").read(), arch="host")   # the user's local service
    (y,) = bundle.run(x, w, b)

    client = tir.Client("tir.internal:7070", token=..., bundle_key=...)
    bundle = tir.compile(graph, arch="sm_90a", client=client)

    import tir.fx
    fast = tir.fx.compile(model, (example,))                       # a callable like model
    model = torch.compile(model, backend=tir.torch_backend())     # torch >= 2

`tir.fx` and `tir.torch_backend` import torch when used.
"""

import pkgutil

# The generated modules (tir.v1) may sit in another `tir` directory on the
# path (Bazel's bazel-bin or runfiles beside this source tree).
__path__ = pkgutil.extend_path(__path__, __name__)

import sys  # noqa: E402
import time  # noqa: E402

import grpc  # noqa: E402

from tir.bundle import Bundle, TensorSpec  # noqa: E402
from tir.client import Client, TirError, bundle_key_id, check_bundle  # noqa: E402

__all__ = ["Bundle", "Client", "Progress", "TensorSpec", "TirError", "bundle_key_id", "check_bundle", "compile",
           "connect", "explain", "torch_backend"]


def connect(server=None, token=None, bundle_key=None, tls_root_certs=None, timeout=30.0):
    """A Client of `server` ("host:port"), or of the user's local service
    when None (found, or started, within `timeout` seconds; its worker's
    arch is `client.default_arch`; tir.local_service)."""
    if server is None:
        from tir import local_service
        service = local_service.ensure(timeout=timeout)
        client = local_service.client_for(service, timeout=timeout, bundle_key=bundle_key)
        client.default_arch = service.arch
        client._local = True
        return client
    client = Client(server, token=token, bundle_key=bundle_key, tls_root_certs=tls_root_certs, timeout=timeout)
    client.default_arch = None
    return client


class Progress:
    """A compile's progress, as `progress=` callbacks receive it.

    `stage` ("planning", "queued", "tuning", "checking the shape", "done"),
    `kernels` (planned), `candidates_total` (to measure), `candidates_measured`,
    `candidates_failed`, `best_seconds` (0 until measured), `bucket` and
    `shape` (a dynamic graph's, else ""), `done`, `cache_hit`, `elapsed`
    (seconds since the compile began), `operation` (its name)."""

    _STAGES = {1: "verifying", 2: "planning", 3: "queued", 4: "tuning", 5: "done", 6: "checking the shape"}

    def __init__(self, op, elapsed):
        p, m = op.metadata.progress, op.metadata
        self.operation = op.name
        self.stage = "done" if op.done else self._STAGES.get(p.stage, "starting")
        self.kernels = p.partitions
        self.candidates_total = p.candidates_total
        self.candidates_compiled = p.candidates_compiled
        self.candidates_measured = p.candidates_measured
        self.candidates_failed = p.candidates_failed
        self.best_seconds = p.best_seconds
        self.bucket, self.shape = m.shape_bucket, m.shape
        self.done, self.cache_hit = op.done, m.cache_hit
        self.elapsed = elapsed

    def __str__(self):
        bucket = " bucket " + self.bucket if self.bucket else ""
        kernels = "%d kernel%s" % (self.kernels, "" if self.kernels == 1 else "s")
        counts = "%d/%d candidates measured (%d failed)" % (self.candidates_measured, self.candidates_total,
                                                            self.candidates_failed)
        if self.done:
            line = "cache hit" + bucket if self.cache_hit else "tuned%s: %s, %s" % (bucket, kernels, counts)
        elif self.stage == "tuning":
            line = "tuning%s: %s planned, %s" % (bucket, kernels, counts)
        elif self.stage == "queued":
            line = "queued%s: %s planned, waiting for a worker" % (bucket, kernels)
        else:
            line = self.stage + bucket
        return "%s  %.1f s" % (line, self.elapsed)

    def __repr__(self):
        return "tir.Progress(%s)" % self


class _StderrProgress:
    """The default on a terminal: one line on stderr, redrawn at most ten
    times a second (always for a new stage and at the end)."""

    def __init__(self, stream):
        self.stream, self.drawn, self.stage = stream, 0.0, None

    def __call__(self, p):
        now = time.monotonic()
        if not p.done and p.stage == self.stage and now - self.drawn < 0.1:
            return
        self.stage, self.drawn = p.stage, now
        self.stream.write("\r\x1b[Ktir: %s%s" % (p, "\n" if p.done else ""))
        self.stream.flush()


class _LoggedProgress:
    """Progress as log records of the "tir" logger (INFO), one per stage
    and at the end: what a log file or a notebook shows, where a progress
    bar drawn with carriage returns would be noise."""

    def __init__(self):
        import logging
        self.log, self.stage = logging.getLogger("tir"), None

    def __call__(self, p):
        if p.done or p.stage != self.stage:
            self.stage = p.stage
            self.log.info("tir: %s", p)


def _reporter(progress):
    """progress=: a callable, False (none), or None (a bar on stderr when it
    is a terminal, else records of the "tir" logger)."""
    if callable(progress):
        return progress
    if progress is None:
        try:
            if sys.stderr is not None and sys.stderr.isatty():
                return _StderrProgress(sys.stderr)
        except (AttributeError, ValueError):
            pass
        return _LoggedProgress()
    return None


def _left(end):
    return max(end - time.monotonic(), 0.0)


def _deadline_error(what, timeout):
    return TirError(grpc.StatusCode.DEADLINE_EXCEEDED, "DEADLINE_EXCEEDED", "%s within %.1f s" % (what, timeout))


def _await(client, op, end, timeout, report, start):
    """The operation once done (progress reported from its watch stream),
    and whether its end was reported."""
    if report is not None:
        try:
            for state in client.watch(op.name, timeout=_left(end)):
                op = state
                report(Progress(op, time.monotonic() - start))
                if op.done:
                    return op, True
        except TirError as e:
            if e.reason == "DEADLINE_EXCEEDED":
                raise _deadline_error("%s did not finish" % op.name, timeout) from None
            # A stream refused (too many) or cut: the long poll goes on.
            if e.reason not in ("UNAVAILABLE", "RESOURCE_EXHAUSTED", "LIMIT_EXCEEDED", "CANCELLED"):
                raise
    try:
        return client.wait(op.name, timeout=_left(end), deadline=end), False
    except TirError as e:
        if e.reason == "DEADLINE_EXCEEDED":
            raise _deadline_error("%s did not finish" % op.name, timeout) from None
        raise


def _refresh_local(client, end):
    """A client of the local service: the service found (or started again,
    after it exited idle), and the client pointed at it."""
    from tir import local_service
    service = local_service.ensure(timeout=_left(end))
    token = local_service._read_token(service.token_file) if service.token_file else None
    if service.address != client.address or token != client._token:
        client._connect(service.address, token)


def compile(graph, arch=None, shapes=None, server=None, client=None, token=None, bundle_key=None,
            heuristic_now=False, timeout=1200.0, max_candidates=0, progress=None):
    """Compiles `graph` (tir or TensorIR text) and returns its tir.Bundle.

    `client` (a tir.Client) or `server` ("host:port"); neither: the user's
    local service (started if none runs). `arch`: "sm_90a", "host", ...;
    None: the local service's worker's. `shapes`: for a graph with dynamic
    dims, {input index: shape}; the bundle answered is sized for that shape.
    `max_candidates` bounds the candidates measured per kernel (0: the
    coordinator's default). `timeout`: seconds for all of it (the local service's start, connecting,
    every call and the tuning): a service that never answers costs no more.
    `progress`: a callable given a tir.Progress at each change (kernels
    planned, candidates measured of those to measure, bucket, done); None
    draws it on stderr when that is a terminal; False: nothing.
    Errors raise TirError with the coordinator's reason (INVALID_GRAPH,
    UNKNOWN_ARCH, NO_CORRECT_CANDIDATE, SHAPE_HINT_MISSING, UNAVAILABLE,
    DEADLINE_EXCEEDED, SERVICE_START_FAILED, ...)."""
    start = time.monotonic()
    end = start + timeout
    report = _reporter(progress)
    own = client is None
    if own:
        client = connect(server, token=token, bundle_key=bundle_key, timeout=timeout)
    elif getattr(client, "_local", False):
        _refresh_local(client, end)
    try:
        arch = arch or getattr(client, "default_arch", None)
        if not arch:
            raise TirError(grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT",
                           "arch is needed with a server (e.g. arch=\"sm_90a\" or \"host\")")
        op = client.compile(graph, arch=arch, shapes=shapes, heuristic_now=heuristic_now,
                            max_candidates_per_kernel=max_candidates,
                            timeout=min(client._timeout, _left(end)))
        at_once, reported = op.done, False
        if not op.done:
            op, reported = _await(client, op, end, timeout, report, start)
        if not op.done:
            raise _deadline_error("%s did not finish" % op.name, timeout)
        # The end, once, to a callback; on a terminal only after a wait.
        if report is not None and not reported and not (
                at_once and isinstance(report, _StderrProgress)):
            report(Progress(op, time.monotonic() - start))
        if op.HasField("error"):
            e = op.error
            code = next((c for c in grpc.StatusCode if c.value[0] == e.code), grpc.StatusCode.UNKNOWN)
            raise TirError(code, e.reason or code.name, e.message)
        return Bundle(op.response, bundle_key=client._key)
    finally:
        if own:
            client.close()


def torch_backend(**options):
    """A torch.compile backend (torch >= 2): see tir.backend.torch_backend."""
    from tir.backend import torch_backend as make
    return make(**options)


def explain(model, *args, dynamic=None, **kwargs):
    """What torch.compile(model, backend="tir") runs in tir and what it
    leaves eager, and why, for these arguments (torch >= 2): see
    tir.backend.explain. Nothing is compiled or sent to a service."""
    from tir.backend import explain as run
    return run(model, *args, dynamic=dynamic, **kwargs)
