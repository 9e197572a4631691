"""The torch.compile backend: regions of a model that tir writes run as tuned
tir bundles, the rest eagerly.

    model = torch.compile(model, backend="tir")                          # the user's local service
    model = torch.compile(model, backend=tir.torch_backend(server="tir:7070", arch="sm_90a"))

On torch >= 2 the backend keeps Dynamo's contract through AOTAutograd: the
graph it is given is functionalized (an in-place update of an input or a
buffer becomes a result that AOTAutograd writes back, once per call) and
lowered to ATen ops; the forward graph's regions that tir writes
(tir.regions) run as bundles, the backward graph runs eagerly, so outputs
carry gradients as eager ones do. Symbolic sizes (a batch that varies,
`dynamic=True`) are tir's dynamic dims: a region is tuned once per shape
bucket and verified at each shape it is called with. Nothing of the user's
graph runs at compile time: shapes come from the graph's FakeTensors.

A region that cannot be written or compiled, a service that is down or
slower than `timeout`, or a bundle that fails at run time makes that region
run eagerly, with one warning per backend (the messages are kept in
`warnings`, at most 32): an error of tir never reaches the user's model.

On torch 1.13 (no torch.compile) the backend is a plain function of
(GraphModule, example inputs) for a symbolically traced module: tir.fx writes
the regions, recorded on copies of the example inputs with the module's
buffers restored after; with gradients required a region's outputs come from
its bundle and its backward recomputes the region eagerly (tir.fx.Compiled).
"""

import copy
import re
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

# torch.compile (Dynamo and AOTAutograd): torch >= 2.
_DYNAMO = hasattr(torch, "compile")

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
    `warnings` (the messages, at most MAX_WARNINGS; one warning is emitted).

    `dynamic`: None or True: symbolic sizes are tir's dynamic dims (one
    tuning per shape bucket); False: a region with symbolic sizes is written
    and compiled for each shape it is called with."""

    MAX_WARNINGS = 32
    MAX_REFUSALS = 4096

    def __init__(self, server=None, client=None, arch=None, token=None, bundle_key=None, timeout=600.0,
                 min_nodes=1, dynamic=None, progress=None, max_candidates=0):
        if server is not None and client is None and not arch:
            # Every region would be refused at its first compile and the
            # model would run eagerly without a word: say so now.
            raise ValueError("tir: a backend with server=%r needs arch (e.g. arch=\"sm_90a\" or \"host\"): only the "
                             "local service knows its worker's arch" % (server,))
        if timeout is not None and not timeout > 0:
            raise ValueError("tir: timeout must be a positive number of seconds, not %r" % (timeout,))
        self.server, self.client, self.arch, self.token, self.bundle_key = server, client, arch, token, bundle_key
        self.timeout, self.min_nodes, self.dynamic, self.progress = timeout, min_nodes, dynamic, progress
        self.max_candidates = max_candidates
        self.regions_compiled = self.regions_eager = self.regions_run = 0
        self.warnings = []
        self.warnings_dropped = 0
        # Every node left eager, and why ("node NAME (OP): REASON"), each once;
        # at most MAX_REFUSALS, the number past it in refusals_dropped.
        self.refusals = []
        self.refusals_dropped = 0
        self._refused = set()
        self._warned = False
        self._lock = threading.Lock()
        self._graphs = 0

    def warn(self, message):
        with self._lock:
            if len(self.warnings) < self.MAX_WARNINGS:
                self.warnings.append(message)
            else:
                self.warnings_dropped += 1
            if self._warned:
                return
            self._warned = True
        warnings.warn("tir: %s (further tir fallbacks are not reported)" % message, RuntimeWarning, stacklevel=3)

    def refuse(self, text):
        """Records a node left eager ("node NAME (OP): REASON"), once."""
        with self._lock:
            if text in self._refused:
                return
            if len(self.refusals) >= self.MAX_REFUSALS:
                self.refusals_dropped += 1
                return
            self._refused.add(text)
            self.refusals.append(text)

    def graph_name(self):
        with self._lock:
            self._graphs += 1
            return "dynamo%d" % self._graphs

    def _client(self):
        if self.client is None:
            self.client = tir.connect(self.server, token=self.token, bundle_key=self.bundle_key,
                                      timeout=self.timeout)
        return self.client

    def compile_graph(self, text, shapes):
        """A tir graph compiled through the service (TirError when it is not)."""
        client = self._client()
        arch = self.arch or getattr(client, "default_arch", None)
        if not arch:
            raise TirError(grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT",
                           "arch is needed with a server (e.g. arch=\"sm_90a\" or \"host\")")
        return tir.compile(text, arch=arch, shapes=shapes, client=client, timeout=self.timeout,
                           max_candidates=self.max_candidates, progress=self.progress)

    def __call__(self, gm, example_inputs, **kwargs):
        # Dynamo's graphs carry each value's FakeTensor; a symbolically traced
        # GraphModule (the torch 1.13 way, also on torch 2) does not.
        traced_by_dynamo = any("example_value" in n.meta or "val" in n.meta for n in gm.graph.nodes)
        if _DYNAMO and traced_by_dynamo:
            try:
                return self._aot(gm, list(example_inputs))
            except Exception as e:  # never fatal: the graph as captured
                self.warn("the graph runs eagerly: %s" % e)
                return gm.forward
        try:
            return self._compile(gm, list(example_inputs))
        except Exception as e:  # never fatal: the graph as captured
            self.warn("the graph runs eagerly: %s" % e)
            return gm.forward

    # -- torch >= 2 -------------------------------------------------------------------

    def _aot(self, gm, example_inputs):
        from torch._dynamo.backends.common import aot_autograd
        from torch._functorch.aot_autograd import make_boxed_func
        from tir import regions

        # Attention's math above autograd: its backward is derived from the
        # same ops its forward runs (and those are ops tir writes).
        _attention_as_math(gm)

        def forward(fw_gm, fw_inputs):
            try:
                fused, _ = regions.fuse(fw_gm, self, self.min_nodes)
            except Exception as e:  # noqa: BLE001 - the forward graph as traced
                self.warn("the graph runs eagerly: %s" % e)
                return make_boxed_func(fw_gm.forward)
            return make_boxed_func(fused.forward)

        def backward(bw_gm, bw_inputs):
            return make_boxed_func(bw_gm.forward)

        compiler = aot_autograd(fw_compiler=forward, bw_compiler=backward, inference_compiler=forward,
                                decompositions=decompositions())
        return compiler(gm, example_inputs)

    # -- torch 1.13: a symbolically traced GraphModule ---------------------------------

    def _compile(self, gm, example_inputs):
        if any(not isinstance(t, torch.Tensor) for t in example_inputs):
            raise TirError(grpc.StatusCode.INVALID_ARGUMENT, "UNSUPPORTED_OP", "the graph takes non-tensor inputs")
        # The caller's GraphModule stays as it is: the regions are fused into
        # a copy that shares its submodules and parameters.
        gm = torch.fx.GraphModule(gm, copy.deepcopy(gm.graph))
        # The graph is run to learn its values: on copies of the inputs, and
        # with every buffer it may update in place restored afterwards.
        inputs = [t.detach().clone() for t in example_inputs]
        saved = [(b, b.detach().clone()) for _, b in gm.named_buffers()]
        try:
            values = tir_fx._record(gm, inputs)
            partitioner = CapabilityBasedPartitioner(gm, _Support(gm, values), allows_single_node_partition=True)
            partitions = [p for p in partitioner.propose_partitions() if len(p.nodes) >= self.min_nodes]
            if not partitions:
                raise TirError(grpc.StatusCode.INVALID_ARGUMENT, "UNSUPPORTED_OP", "no node of the graph is one tir writes")
            fused = partitioner.fuse_partitions(partitions)
            region_inputs = {}

            class _Inputs(torch.fx.Interpreter):
                def call_module(self, target, args, kwargs):
                    if target.startswith("fused_"):
                        region_inputs[target] = args
                    return super().call_module(target, args, kwargs)

            with torch.no_grad():
                _Inputs(fused).run(*inputs)
        finally:
            with torch.no_grad():
                for b, value in saved:
                    b.copy_(value)
        for name, _ in list(fused.named_children()):
            if not name.startswith("fused_") or name not in region_inputs:
                continue
            sub = getattr(fused, name)
            compiled = None
            try:
                client = self._client()
                compiled = tir_fx.compile(sub, region_inputs[name], arch=self.arch, client=client, timeout=self.timeout,
                                          max_candidates=self.max_candidates, progress=self.progress)
                self.regions_compiled += 1
            except TirError as e:
                self.regions_eager += 1
                self.warn("region %s runs eagerly: %s" % (name, e))
            setattr(fused, name, _Region(sub, compiled, self))
        fused.recompile()
        return fused


# Fused ops whose decomposition (in core_aten_decompositions) does not
# produce what their fused backward reads: decomposed, the forward is the
# math and the backward still the fused kernel, fed the math's outputs, and
# the gradients are silently wrong (torch 2.6: relative error 3-18 on q, k
# and v through SDPA's CPU flash path). They stay whole: their autograd
# formula then sees the outputs it was written for.
_KEEP_WHOLE = (
    "_scaled_dot_product_flash_attention_for_cpu",
    "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention",
    "_scaled_dot_product_fused_attention_overrideable",
    "_flash_attention_forward",
    "_efficient_attention_forward",
)


def decompositions():
    """The ATen decompositions AOTAutograd applies: torch's core table less
    the fused ops whose decomposed forward does not match their backward
    (_KEEP_WHOLE)."""
    from torch._decomp import core_aten_decompositions
    whole = set()
    for name in _KEEP_WHOLE:
        packet = getattr(torch.ops.aten, name, None)
        if packet is not None:
            whole.update(getattr(packet, o) for o in packet.overloads())
    return {op: fn for op, fn in core_aten_decompositions().items() if op not in whole}


def _sdpa_math(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, **kwargs):
    """F.scaled_dot_product_attention as its reference math, an op that is
    decomposed above autograd (its gradients come from the ops it runs)."""
    return torch.ops.aten._scaled_dot_product_attention_math(query, key, value, attn_mask, dropout_p, is_causal,
                                                            scale=scale, **kwargs)[0]


def _attention_as_math(gm):
    """Calls of F.scaled_dot_product_attention in Dynamo's graph become
    _sdpa_math: on the CPU SDPA picks a fused kernel whose backward does not
    match any decomposed forward, and its math is what tir writes."""
    import torch.nn.functional as F
    sdpa = getattr(F, "scaled_dot_product_attention", None)
    if sdpa is None or not hasattr(torch.ops.aten, "_scaled_dot_product_attention_math"):
        return
    changed = False
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is sdpa:
            node.target = _sdpa_math
            changed = True
    if changed:
        gm.recompile()


def torch_backend(server=None, client=None, arch=None, token=None, bundle_key=None, timeout=600.0, min_nodes=1,
                  dynamic=None, progress=None, max_candidates=0):
    """A torch.compile backend: torch.compile(model, backend=tir.torch_backend(...)).

    `server` ("host:port") or `client`; neither: the user's local service.
    `arch`: the target ("sm_90a", "host"); None: the local service worker's.
    `timeout`: seconds a region's compile may take, connecting and starting
    the local service included, before it runs eagerly.
    `min_nodes`: smaller regions stay eager.
    `dynamic`: see TirBackend.
    `progress`: each region's compile progress, as tir.compile's (None: on
    stderr when it is a terminal).
    `max_candidates`: candidates measured per kernel (0: the coordinator's
    default); fewer tune faster."""
    return TirBackend(server=server, client=client, arch=arch, token=token, bundle_key=bundle_key, timeout=timeout,
                      min_nodes=min_nodes, dynamic=dynamic, progress=progress, max_candidates=max_candidates)


_entry_backend = None


def dynamo_backend(gm, example_inputs, options=None, **kwargs):
    """torch.compile(model, backend="tir"): the `torch_dynamo_backends` entry
    point. `options` (torch.compile's options=) are torch_backend's
    arguments; without them one backend on the user's local service serves
    every model of the process."""
    global _entry_backend
    if options:
        return torch_backend(**options)(gm, example_inputs)
    if _entry_backend is None:
        _entry_backend = torch_backend()
    return _entry_backend(gm, example_inputs)


class Explanation:
    """tir.explain's answer: `regions` (per region: its name and its ops, in
    order) and `refusals` (every node left eager: "node NAME (OP): REASON")."""

    def __init__(self, regions, refusals):
        self.regions, self.refusals = regions, refusals

    def __str__(self):
        lines = ["%d tir region(s), %d node(s) left eager" % (len(self.regions), len(self.refusals))]
        for name, ops in self.regions:
            lines.append("  region %s: %d ops (%s)" % (name, len(ops), ", ".join(sorted(set(ops)))))
        lines += ["  eager: " + r for r in self.refusals]
        return "\n".join(lines)


class _ExplainBackend(TirBackend):
    """Writes regions as the backend does and keeps their ops, compiling
    nothing: every region then runs eagerly."""

    def __init__(self, dynamic):
        TirBackend.__init__(self, client=object(), arch="host", dynamic=dynamic)
        self.found = []

    def compile_graph(self, text, shapes):
        name = text.split("@", 1)[1].split("(", 1)[0]
        ops = [re.match(r"\s*([\w.]*)", line.split("=", 1)[1]).group(1) for line in text.splitlines() if " = " in line]
        self.found.append((name, ops))
        raise TirError(grpc.StatusCode.OK, "EXPLAIN_ONLY", "explained, not compiled")

    def warn(self, message):
        pass  # every region "fails" to compile: nothing to warn of


def explain(model, *args, dynamic=None, **kwargs):
    """Runs `model(*args, **kwargs)` once under torch.compile with a backend
    that writes tir's regions as torch.compile(backend="tir") would and
    compiles none; returns an Explanation of the regions it would run in tir
    and every node it would leave eager, with the reason."""
    if not _DYNAMO:
        raise RuntimeError("tir.explain needs torch >= 2 (torch.compile)")
    import torch._dynamo
    backend = _ExplainBackend(dynamic)
    torch._dynamo.reset()
    try:
        with torch.no_grad():
            torch.compile(model, backend=backend, dynamic=dynamic)(*args, **kwargs)
    finally:
        torch._dynamo.reset()
    explained = [r for r in backend.refusals if "EXPLAIN_ONLY" not in r]
    return Explanation(backend.found, explained)
