"""A torch.compile backend (torch >= 2) that runs the regions of a model tir
can write as tuned tir bundles, and the rest eagerly.

    model = torch.compile(model, backend=tir.torch_backend())             # the user's local service
    model = torch.compile(model, backend=tir.torch_backend(server="tir:7070", arch="sm_90a"))

The backend is called with each FX graph the compiler captures. It records
every value once on the example inputs, partitions the graph into the
largest regions of nodes tir writes (torch.fx's CapabilityBasedPartitioner),
exports each region (tir.fx.export) and compiles it through the service.
A region that cannot be exported or compiled, a service that is down or
slower than `timeout`, or a bundle that fails at run time makes that region
run eagerly, with one warning per backend: an error of tir never reaches the
user's model. The backend is a plain function of (GraphModule, example
inputs), so it also runs on torch 1.13 (without torch.compile) on a
symbolically traced module.
"""

import copy
import operator
import threading
import warnings

import grpc
import torch
import torch.fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

import tir
from tir import fx as tir_fx
from tir.client import TirError

# What tir.fx writes, by the name torch.X / F.X / Tensor.X share.
SUPPORTED_NAMES = {
    "add", "sub", "mul", "div", "true_divide", "pow", "maximum", "minimum", "matmul", "bmm", "mm", "linear", "addmm",
    "exp", "log", "sqrt", "rsqrt", "abs", "neg", "erf", "sin", "cos", "tan", "reciprocal", "floor", "ceil",
    "relu", "gelu", "silu", "sigmoid", "tanh", "softplus", "softmax", "log_softmax", "layer_norm",
    "sum", "mean", "amax", "view", "reshape", "flatten", "unsqueeze", "squeeze", "expand", "expand_as", "view_as",
    "reshape_as", "permute", "transpose", "t", "swapaxes", "cat", "concat", "concatenate",
    "to", "type", "float", "half", "bfloat16", "double", "type_as", "contiguous", "clone", "detach", "dropout",
    "getitem",
}
_OPERATORS = {operator.add: "add", operator.sub: "sub", operator.mul: "mul", operator.truediv: "div",
              operator.pow: "pow", operator.matmul: "matmul", operator.neg: "neg", operator.getitem: "getitem"}
SUPPORTED_MODULES = (torch.nn.Linear, torch.nn.LayerNorm, torch.nn.Softmax, torch.nn.LogSoftmax, torch.nn.GELU,
                     torch.nn.Softplus, torch.nn.ReLU, torch.nn.SiLU, torch.nn.Sigmoid, torch.nn.Tanh,
                     torch.nn.Dropout, torch.nn.Identity)


def _name(node):
    if node.op == "call_method":
        return node.target
    if node.op == "call_function":
        if node.target in _OPERATORS:
            return _OPERATORS[node.target]
        module = getattr(node.target, "__module__", "") or ""
        name = getattr(node.target, "__name__", None)
        if name and (module.startswith("torch") or module == "_operator"):
            return name
    return None


class _Support(OperatorSupportBase):
    """Nodes tir.fx writes: a known op with tensor results and tensors of
    dtypes tir has, on one device."""

    def __init__(self, gm, values):
        self.modules = dict(gm.named_modules())
        self.values = values

    def is_node_supported(self, submodules, node):
        v = self.values.get(node)
        if not isinstance(v, torch.Tensor) or v.dtype not in tir_fx._DTYPE:
            return False
        for a in node.all_input_nodes:
            av = self.values.get(a)
            if isinstance(av, torch.Tensor) and av.dtype not in tir_fx._DTYPE:
                return False
        if node.op == "call_module":
            return isinstance(self.modules.get(node.target), SUPPORTED_MODULES)
        name = _name(node)
        if name == "getitem":
            return isinstance(self.values.get(node.args[0]), torch.Tensor)
        return name in SUPPORTED_NAMES


class _Region(torch.nn.Module):
    """One fused region: the tir bundle, else (or when it fails) the eager
    submodule."""

    def __init__(self, eager, compiled, owner):
        super().__init__()
        self.eager, self.compiled, self.owner = eager, compiled, owner

    def forward(self, *args):
        if self.compiled is not None:
            try:
                out = self.compiled(*args)
                self.owner.regions_run += 1
                return out
            except TirError as e:
                if e.reason in ("INPUT_MISMATCH", "LAYOUT_CONTRACT_VIOLATED"):
                    # Arguments other than the region was compiled for (a new
                    # shape, a layout): eager for this call only.
                    self.owner.warn("a tir region was called with other arguments than it was compiled for (%s); "
                                    "that call runs eagerly" % e)
                else:
                    self.owner.warn("a tir region failed at run time (%s); it runs eagerly from now on" % e)
                    self.compiled = None
        return self.eager(*args)


class TirBackend:
    """The backend object (callable as a torch.compile backend). Counters for
    tests and logs: `regions_compiled`, `regions_eager`, `regions_run`,
    `warnings` (the messages; one warning is emitted)."""

    def __init__(self, server=None, client=None, arch=None, token=None, bundle_key=None, timeout=600.0,
                 min_nodes=1, dynamic=None, progress=None):
        self.server, self.client, self.arch, self.token, self.bundle_key = server, client, arch, token, bundle_key
        self.timeout, self.min_nodes, self.dynamic, self.progress = timeout, min_nodes, dynamic, progress
        self.regions_compiled = self.regions_eager = self.regions_run = 0
        self.warnings = []
        self._warned = False
        self._lock = threading.Lock()

    def warn(self, message):
        with self._lock:
            self.warnings.append(message)
            if not self._warned:
                self._warned = True
                warnings.warn("tir: %s (further tir fallbacks are not reported)" % message, RuntimeWarning,
                              stacklevel=3)

    def _client(self):
        if self.client is None:
            self.client = tir.connect(self.server, token=self.token, bundle_key=self.bundle_key,
                                      timeout=min(30.0, self.timeout))
        return self.client

    def __call__(self, gm, example_inputs):
        try:
            return self._compile(gm, list(example_inputs))
        except Exception as e:  # never fatal: the graph as captured
            self.warn("the graph runs eagerly: %s" % e)
            return gm.forward

    def _compile(self, gm, example_inputs):
        if any(not isinstance(t, torch.Tensor) for t in example_inputs):
            raise TirError(grpc.StatusCode.INVALID_ARGUMENT, "UNSUPPORTED_OP", "the graph takes non-tensor inputs (symbolic sizes)")
        # The caller's GraphModule stays as it is: the regions are fused into
        # a copy that shares its submodules and parameters.
        gm = torch.fx.GraphModule(gm, copy.deepcopy(gm.graph))
        values = tir_fx._record(gm, example_inputs)
        partitioner = CapabilityBasedPartitioner(gm, _Support(gm, values), allows_single_node_partition=True)
        partitions = [p for p in partitioner.propose_partitions() if len(p.nodes) >= self.min_nodes]
        if not partitions:
            raise TirError(grpc.StatusCode.INVALID_ARGUMENT, "UNSUPPORTED_OP", "no node of the graph is one tir writes")
        fused = partitioner.fuse_partitions(partitions)
        # Example inputs of each region: run the fused graph once.
        inputs = {}

        class _Inputs(torch.fx.Interpreter):
            def call_module(self, target, args, kwargs):
                if target.startswith("fused_"):
                    inputs[target] = args
                return super().call_module(target, args, kwargs)

        with torch.no_grad():
            _Inputs(fused).run(*example_inputs)
        for name, _ in list(fused.named_children()):
            if not name.startswith("fused_") or name not in inputs:
                continue
            sub = getattr(fused, name)
            compiled = None
            try:
                client = self._client()
                compiled = tir_fx.compile(sub, inputs[name], arch=self.arch, client=client, timeout=self.timeout,
                                          progress=self.progress)
                self.regions_compiled += 1
            except TirError as e:
                self.regions_eager += 1
                self.warn("region %s runs eagerly: %s" % (name, e))
            setattr(fused, name, _Region(sub, compiled, self))
        fused.recompile()
        return fused


def torch_backend(server=None, client=None, arch=None, token=None, bundle_key=None, timeout=600.0, min_nodes=1,
                  progress=None):
    """A torch.compile backend: torch.compile(model, backend=tir.torch_backend(...)).

    `server` ("host:port") or `client`; neither: the user's local service.
    `arch`: the target ("sm_90a", "host"); None: the local service worker's.
    `timeout`: seconds a region's compile may take, connecting and starting
    the local service included, before it runs eagerly.
    `min_nodes`: smaller regions stay eager.
    `progress`: each region's compile progress, as tir.compile's (None: on
    stderr when it is a terminal)."""
    return TirBackend(server=server, client=client, arch=arch, token=token, bundle_key=bundle_key, timeout=timeout,
                      min_nodes=min_nodes, progress=progress)
