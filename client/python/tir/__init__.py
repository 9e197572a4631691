"""tir for Python: the client of a tir coordinator, bundles you can run, and
PyTorch integration.

    import tir
    bundle = tir.compile(open("mlp.mlir").read(), arch="host")   # embedded default
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

import grpc  # noqa: E402

from tir.bundle import Bundle, TensorSpec  # noqa: E402
from tir.client import Client, TirError, bundle_key_id, check_bundle  # noqa: E402

__all__ = ["Bundle", "Client", "TensorSpec", "TirError", "bundle_key_id", "check_bundle", "compile", "connect",
           "torch_backend"]


def connect(server=None, token=None, bundle_key=None, tls_root_certs=None, timeout=30.0):
    """A Client of `server` ("host:port"), or of the embedded default when
    None (started on first use; its worker's arch is `client.default_arch`)."""
    if server is None:
        from tir import embedded
        service = embedded.default()
        client = Client(service.address, timeout=timeout)
        client.default_arch = service.arch
        return client
    client = Client(server, token=token, bundle_key=bundle_key, tls_root_certs=tls_root_certs, timeout=timeout)
    client.default_arch = None
    return client


def compile(graph, arch=None, shapes=None, server=None, client=None, token=None, bundle_key=None,
            heuristic_now=False, timeout=1200.0, max_candidates=0):
    """Compiles `graph` (tir or TensorIR text) and returns its tir.Bundle.

    `client` (a tir.Client) or `server` ("host:port"); neither: the embedded
    default. `arch`: "sm_90a", "host", ...; None: the embedded worker's.
    `shapes`: for a graph with dynamic dims, {input index: shape}; the bundle
    answered is sized for that shape. Waits up to `timeout` seconds for the
    tuning; `max_candidates` bounds the candidates measured per kernel (0:
    the coordinator's default). Errors raise TirError with the coordinator's reason
    (INVALID_GRAPH, UNKNOWN_ARCH, NO_CORRECT_CANDIDATE, SHAPE_HINT_MISSING,
    UNAVAILABLE, ...)."""
    own = client is None
    if own:
        client = connect(server, token=token, bundle_key=bundle_key)
    try:
        arch = arch or getattr(client, "default_arch", None)
        if not arch:
            raise TirError(grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT",
                           "arch is needed with a server (e.g. arch=\"sm_90a\" or \"host\")")
        op = client.compile(graph, arch=arch, shapes=shapes, heuristic_now=heuristic_now,
                            max_candidates_per_kernel=max_candidates)
        if not op.done:
            op = client.wait(op.name, timeout=timeout)
        if not op.done:
            raise TirError(grpc.StatusCode.DEADLINE_EXCEEDED, "DEADLINE_EXCEEDED",
                           "%s did not finish within %.0f s" % (op.name, timeout))
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
