"""Python client of a tir coordinator (tir.v1.CompilerService).

Every call has a deadline; reads and compile (idempotent by the request id
this client sets) are retried by gRPC's retry policy (the channel's service
config) while the coordinator is UNAVAILABLE, nothing else is. Errors raise TirError with the coordinator's
code and stable reason (INVALID_GRAPH, UNKNOWN_ARCH, UNAUTHENTICATED, ...).
Given the coordinator's bundle key, every bundle answered is checked against
its HMAC-SHA256 signature before it is returned (BUNDLE_UNSIGNED,
BUNDLE_KEY_MISMATCH, BUNDLE_SIGNATURE_INVALID), as the C++ client does.

    client = Client("tir.internal:7070", token=..., tls_root_certs=open("ca.pem").read())
    op = client.compile(open("mlp.mlir").read(), arch="sm_90a")
    op = client.wait(op.name, timeout=1200)
    bundle = op.response          # tir.v1.KernelBundle: cubins and launch rules

The same verbs and errors as the C++ client (client/client.h). Needs the
generated modules (tir.v1, built by setup.py or Bazel's
//client/python:python), python3-grpcio and python3-protobuf.
"""

import json
import copy
import hashlib
import hmac
import time
import uuid

import grpc

from tir.v1 import compiler_service_pb2 as pb
from tir.v1 import compiler_service_pb2_grpc as pb_grpc
from tir.v1 import error_pb2
from tir.v1 import graph_pb2


class TirError(Exception):
    """A failed call: gRPC status code, tir reason and message."""

    def __init__(self, code, reason, message):
        super().__init__("%s: %s" % (reason, message))
        self.code, self.reason, self.message = code, reason, message

    @staticmethod
    def from_rpc(error):
        details = dict(error.trailing_metadata() or ()).get("grpc-status-details-bin")
        if details:
            e = error_pb2.Error()
            e.ParseFromString(details)
            if e.reason:
                return TirError(error.code(), e.reason, e.message)
        return TirError(error.code(), error.code().name, error.details())


def _key_bytes(key):
    return key.encode() if isinstance(key, str) else bytes(key)


def bundle_key_id(key):
    """The first 16 hex digits of SHA-256(key): which key signed a bundle."""
    return hashlib.sha256(_key_bytes(key)).hexdigest()[:16]


def check_bundle(bundle, key):
    """Raises TirError unless `bundle` (tir.v1.KernelBundle) is signed with `key`.

    The MAC is HMAC-SHA256 over the bundle's deterministic serialization with
    `signature` cleared (client/bundle_signature.h)."""
    name = bundle.key or "(no key)"
    precondition = grpc.StatusCode.FAILED_PRECONDITION
    if not bundle.HasField("signature") or not bundle.signature.mac:
        raise TirError(precondition, "BUNDLE_UNSIGNED", "bundle %s: it carries no signature" % name)
    sig = bundle.signature
    if sig.algorithm != "hmac-sha256":
        raise TirError(precondition, "BUNDLE_SIGNATURE_INVALID", "bundle %s: unknown algorithm %r" % (name, sig.algorithm))
    if sig.key_id != bundle_key_id(key):
        raise TirError(precondition, "BUNDLE_KEY_MISMATCH",
                       "bundle %s: signed with key %s, this client holds key %s" % (name, sig.key_id, bundle_key_id(key)))
    unsigned = copy.deepcopy(bundle)
    unsigned.ClearField("signature")
    want = hmac.new(_key_bytes(key), unsigned.SerializeToString(deterministic=True), hashlib.sha256).digest()
    if not hmac.compare_digest(want, sig.mac):
        raise TirError(precondition, "BUNDLE_SIGNATURE_INVALID",
                       "bundle %s: its signature does not match its contents (altered after signing)" % name)


def _set_shapes(options, shapes):
    """CompileOptions.shape_hints from {input index: shape}."""
    for index, shape in sorted((shapes or {}).items()):
        hint = options.shape_hints.add()
        hint.input = int(index)
        hint.shape.extend(int(d) for d in shape)


# The calls retried while the coordinator is UNAVAILABLE: all but
# DeleteKernel (a write that is not idempotent) and WatchOperation (a stream).
RETRIED = ("Compile", "GetOperation", "WaitOperation", "CancelOperation", "GetKernel", "LookupKernel",
           "ListKernels", "ListWorkers")


def retry_service_config(max_attempts, initial_backoff):
    """The channel's service config that retries the client's calls (None for
    one attempt); gRPC retries at most 5 attempts."""
    attempts = min(int(max_attempts), 5)
    if attempts < 2:
        return None
    return json.dumps({"methodConfig": [{
        "name": [{"service": "tir.v1.CompilerService", "method": m} for m in RETRIED],
        "retryPolicy": {"maxAttempts": attempts, "initialBackoff": "%gs" % initial_backoff, "maxBackoff": "10s",
                        "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]})


class Client:
    def __init__(self, address, token=None, timeout=30.0, max_attempts=4, initial_backoff=0.1,
                 max_message_bytes=64 << 20, bundle_key=None, client_name=None, tls_root_certs=None,
                 tls_server_name=None):
        """`token`: the client (or read) token; `bundle_key`: the coordinator's
        bundle key (str or bytes), checked on every bundle answered;
        `client_name`: a label for the coordinator's logs (jobs are counted by address);
        `tls_root_certs`: PEM root certificates (str or bytes) for a TLS
        channel (None: plaintext), `tls_server_name` the name the
        certificate must carry when it is not the address's host."""
        options = [("grpc.max_receive_message_length", max_message_bytes),
                   ("grpc.max_send_message_length", max_message_bytes),
                   ("grpc.initial_reconnect_backoff_ms", int(initial_backoff * 1000)),
                   ("grpc.min_reconnect_backoff_ms", int(initial_backoff * 1000)),
                   ("grpc.max_reconnect_backoff_ms", 10000)]
        config = retry_service_config(max_attempts, initial_backoff)
        if config:
            options += [("grpc.enable_retries", 1), ("grpc.service_config", config)]
        if tls_root_certs:
            roots = tls_root_certs.encode() if isinstance(tls_root_certs, str) else bytes(tls_root_certs)
            if tls_server_name:
                options.append(("grpc.ssl_target_name_override", tls_server_name))
            self._credentials = grpc.ssl_channel_credentials(root_certificates=roots)
        else:
            self._credentials = None
        self._options = options
        self._client_name = client_name
        self._key = bundle_key.strip() if isinstance(bundle_key, str) else bundle_key
        self._timeout = timeout
        self._channel = None
        self._connect(address, token)

    def _connect(self, address, token):
        """(Re)points the client at `address` with `token`: the local
        service may come back elsewhere (a new TCP port) after it exited."""
        if self._channel is not None:
            self._channel.close()
        self.address, self._token = address, token
        if self._credentials is not None:
            self._channel = grpc.secure_channel(address, self._credentials, options=self._options)
        else:
            self._channel = grpc.insecure_channel(address, options=self._options)
        self._stub = pb_grpc.CompilerServiceStub(self._channel)
        metadata = [("authorization", "Bearer " + token)] if token else []
        if self._client_name:
            metadata.append(("tir-client", self._client_name))
        self._metadata = tuple(metadata)

    def _checked(self, op):
        if self._key and op.HasField("response"):
            check_bundle(op.response, self._key)
        return op

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _call(self, method, request, timeout=None):
        # One call; gRPC retries it under the channel's retry policy, all
        # within its deadline (`timeout`, else the client's).
        timeout = self._timeout if timeout is None else max(timeout, 0.0)
        try:
            return method(request, timeout=timeout, metadata=self._metadata)
        except grpc.RpcError as e:
            raise TirError.from_rpc(e) from None

    def compile(self, mlir_text, arch, heuristic_now=False, max_candidates_per_kernel=0, priority=0, shapes=None,
                timeout=None):
        """Submits a graph (tir or TensorIR text); returns the Operation.
        `timeout`: this call's deadline in seconds (default the client's).

        A graph with dynamic dims takes `shapes`: {input index: shape} (an
        index input: {index: [value]}). The answer is its shape bucket's
        bundle, sized for the shape and verified there before it is served.
        """
        request = pb.CompileRequest(request_id="py-" + uuid.uuid4().hex,
                                    graph=graph_pb2.GraphSource(mlir_text=mlir_text))
        request.options.target_arch = arch
        _set_shapes(request.options, shapes)
        request.options.mode = pb.COMPILE_MODE_HEURISTIC_NOW if heuristic_now else pb.COMPILE_MODE_WAIT
        request.options.budget.max_candidates_per_kernel = max_candidates_per_kernel
        request.options.priority = priority
        return self._checked(self._call(self._stub.Compile, request, timeout=timeout))

    def get_operation(self, name):
        return self._checked(self._call(self._stub.GetOperation, pb.GetOperationRequest(name=name)))

    def wait(self, name, timeout, deadline=None):
        """The operation once done, or as it is when `timeout` seconds passed.
        A coordinator that does not answer costs the timeout and the time a
        long poll's answer may take to come back (a tenth of the poll, 1 to
        10 s); with `deadline` (a time.monotonic() value) never past it:
        the coordinator is asked to answer a little before it."""
        end = time.monotonic() + timeout
        hard = float("inf") if deadline is None else deadline
        while True:
            # Long polls of at most a minute.
            now = time.monotonic()
            margin = max(0.0, min((hard - now) / 10, 1.0))
            poll = max(0.0, min(end - now, 60.0, hard - now - margin))
            request = pb.WaitOperationRequest(name=name)
            request.timeout.FromMilliseconds(int(poll * 1000))
            call = min(poll + min(max(poll / 10, 1.0), 10.0), max(hard - time.monotonic(), 0.0))
            op = self._checked(self._call(self._stub.WaitOperation, request, timeout=call))
            now = time.monotonic()
            if op.done or now >= end or now >= hard - margin:
                return op

    def watch(self, name, timeout=3600.0):
        """Yields the operation each time its progress changes, until done."""
        try:
            for op in self._stub.WatchOperation(pb.WatchOperationRequest(name=name), timeout=timeout,
                                                metadata=self._metadata):
                yield self._checked(op)
                if op.done:
                    return
        except grpc.RpcError as e:
            raise TirError.from_rpc(e) from None

    def cancel(self, name):
        return self._call(self._stub.CancelOperation, pb.CancelOperationRequest(name=name))

    def get_kernel(self, key, metadata_only=False):
        name = key if key.startswith("kernels/") else "kernels/" + key
        bundle = self._call(self._stub.GetKernel, pb.GetKernelRequest(name=name, metadata_only=metadata_only))
        if self._key:
            check_bundle(bundle, self._key)
        return bundle

    def lookup(self, mlir_text, arch, shapes=None):
        """The stored bundle, if any; for a dynamic graph `shapes` finds its
        bucket's (shape_verified: sized for that shape)."""
        request = pb.LookupKernelRequest(graph=graph_pb2.GraphSource(mlir_text=mlir_text))
        request.options.target_arch = arch
        _set_shapes(request.options, shapes)
        found = self._call(self._stub.LookupKernel, request)
        if self._key and found.found:
            check_bundle(found.bundle, self._key)
        return found

    def list_kernels(self, arch=""):
        """Every stored bundle (metadata), following the pages."""
        token, out = "", []
        while True:
            page = self._call(self._stub.ListKernels, pb.ListKernelsRequest(page_size=500, page_token=token, arch=arch))
            for bundle in page.kernels:
                if self._key:
                    check_bundle(bundle, self._key)
                out.append(bundle)
            token = page.next_page_token
            if not token:
                return out

    def delete_kernel(self, key):
        name = key if key.startswith("kernels/") else "kernels/" + key
        # Not retried: a retry after a lost answer would say "did not exist".
        return self._call(self._stub.DeleteKernel, pb.DeleteKernelRequest(name=name)).deleted

    def workers(self, arch="", timeout=None):
        return list(self._call(self._stub.ListWorkers, pb.ListWorkersRequest(arch=arch), timeout=timeout).workers)
