"""Regions of an ATen graph that tir runs (torch >= 2).

`fuse(gm, ...)` takes an FX graph of ATen ops whose nodes carry their
FakeTensor results (what AOTAutograd hands a compiler), finds the largest
regions of nodes tir writes (torch.fx's CapabilityBasedPartitioner over
tir.aten's `supported`), writes each as a tir graph, and returns a copy of
the graph in which each region is one call of a `Region` module; the other
nodes stay as they are and run eagerly.

Algorithm:
 1. propose partitions of the supported nodes, without the ones refused so
    far;
 2. fuse them into submodules and write each submodule's graph with
    tir.aten (inputs: its placeholders, row-major; outputs: its results);
 3. a node the writer refuses (a size that is a product of symbols, a slice
    of a dynamic dim, ...) is added to the refused set and the partitioning
    starts again from the original graph; at most `MAX_ROUNDS` rounds;
 4. regions that only move elements (views, copies, conversions) stay eager:
    a kernel would copy what a view does for free.

A Region compiles its graph through the service: a static one when it is
made, one with dynamic dims at its first call of each shape (the service
tunes once per shape bucket and verifies each exact shape). Inputs are
handed over row-major (`contiguous()`, free when they are): the graph is
written for row-major inputs, so the neighbouring eager ops and regions
agree on layouts by construction. A region whose compile or run fails runs
eagerly from then on, with one warning.
"""

import threading

import torch
import torch.fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from tir import aten
from tir.client import TirError

MAX_ROUNDS = 64


class _Support(OperatorSupportBase):
    def __init__(self, refused):
        self.refused = refused

    def is_node_supported(self, submodules, node):
        return node.name not in self.refused and aten.supported(node)


def _copy(gm):
    graph = torch.fx.Graph()
    out = graph.graph_copy(gm.graph, {})
    graph.output(out)
    return torch.fx.GraphModule(gm, graph)


def _outputs(sub):
    """The submodule's results as nodes, and whether it returns a tuple."""
    out = next(n for n in sub.graph.nodes if n.op == "output").args[0]
    if isinstance(out, (tuple, list)):
        return list(out), True
    return [out], False


def write(name, sub, sizes=None):
    """(tir text, result index of each output, whether a dim is dynamic,
    whether it computes anything, the outputs' FakeTensors) of a region
    submodule; `sizes` ({symbol: size}) writes those symbols as static
    sizes. Raises aten.Refused."""
    writer = aten.Writer(name, sizes)
    dynamic = False
    for n in sub.graph.nodes:
        if n.op == "placeholder":
            v = writer.input(n)
            dynamic = dynamic or (v is not None and any(s is not None for s in v.syms))
    computes = False
    for n in sub.graph.nodes:
        if n.op == "call_function":
            try:
                writer.node(n)
            except aten.Refused:
                raise
            except Exception as e:  # noqa: BLE001 - what the writer did not foresee: the node stays eager
                raise aten.Refused(n, "%s: %s" % (type(e).__name__, e))
            computes = computes or aten.op_name(n) not in aten.MOVES
    outs, _ = _outputs(sub)
    text, where = writer.finish(outs)
    return text, where, dynamic, computes, [aten.meta_value(o) for o in outs]


def fuse(gm, owner, min_nodes=1):
    """The graph with its tir regions fused into Region modules (see the
    module's docstring); `owner` is the backend (client, arch, warnings)."""
    refused = set()
    for _ in range(MAX_ROUNDS):
        work = _copy(gm)
        partitioner = CapabilityBasedPartitioner(work, _Support(refused), allows_single_node_partition=True)
        partitions = [p for p in partitioner.propose_partitions() if len(p.nodes) >= min_nodes]
        if not partitions:
            _note_unfused(owner, work, refused, min_nodes)
            return work, 0
        fused = partitioner.fuse_partitions(partitions)
        plans, again = {}, False
        for name, sub in list(fused.named_children()):
            if not name.startswith("fused_"):
                continue
            try:
                plans[name] = write("%s_%s" % (owner.graph_name(), name), sub)
            except aten.Refused as e:
                owner.refuse(str(e))
                if e.node.op == "placeholder":
                    # A region input the writer cannot take (a value no
                    # region computes): its readers in the region are what
                    # stays eager (refusing the input itself would leave the
                    # partition as it was).
                    for user in e.node.users:
                        refused.add(user.name)
                        owner.refuse("%s: its input %s is %s" % (aten.describe(user), e.node.name, e.why))
                else:
                    refused.add(e.node.name)
                if aten.op_name(e.node) == "getitem":
                    # The partitioner keeps a getitem with the node it reads:
                    # that node is refused with it.
                    refused.add(e.node.args[0].name)
                again = True
        if again:
            continue
        count = 0
        for name, (text, where, dynamic, computes, metas) in plans.items():
            sub = getattr(fused, name)
            if not computes:
                # Views and copies alone: eager, where they cost nothing.
                _note_eager(owner, sub, "it only moves elements (a view or a copy), which costs nothing eagerly")
                continue
            _, as_tuple = _outputs(sub)
            try:
                region = Region(name, sub, text, where, dynamic, metas, as_tuple, owner)
            except TirError as e:
                owner.regions_eager += 1
                owner.warn("region %s runs eagerly: %s" % (name, e))
                _note_eager(owner, sub, "its region %s did not compile: %s" % (name, e))
                continue
            setattr(fused, name, region)
            owner.regions_compiled += 1
            count += 1
        _note_unfused(owner, fused, refused, min_nodes)
        fused.recompile()
        return fused, count
    owner.warn("the graph's regions were refused %d times; it runs eagerly" % MAX_ROUNDS)
    work = _copy(gm)
    for n in work.graph.nodes:
        if n.op == "call_function":
            owner.refuse("%s: the graph's regions were refused %d times" % (aten.describe(n), MAX_ROUNDS))
    return work, 0


def _note_eager(owner, sub, why):
    for n in sub.graph.nodes:
        if n.op == "call_function" and aten.op_name(n) != "getitem":
            owner.refuse("%s: %s" % (aten.describe(n), why))


def _note_unfused(owner, fused, refused, min_nodes):
    """Records every op of the final graph outside a region (refused nodes
    were recorded with their reason when refused)."""
    for n in fused.graph.nodes:
        if n.op != "call_function" or n.name in refused or aten.op_name(n) == "getitem":
            continue
        value = aten.meta_value(n)
        values = value if isinstance(value, (tuple, list)) else [value]
        if not any(isinstance(v, torch.Tensor) for v in values):
            continue  # size arithmetic on symbols, not a tensor op
        why = aten.unsupported_reason(n)
        if why is None:
            why = "its region would have fewer than %d nodes (min_nodes)" % min_nodes
        owner.refuse("%s: %s" % (aten.describe(n), why))


def _prod(sizes):
    out = 1
    for s in sizes:
        out *= s
    return out


class Region(torch.nn.Module):
    """One tir region: its graph compiled through the service and run as a
    bundle, else (or once it fails) its eager submodule."""

    def __init__(self, name, eager, text, where, dynamic, metas, as_tuple, owner):
        super().__init__()
        self.eager = eager
        self.name, self.text, self.where, self.dynamic, self.as_tuple = name, text, where, dynamic, as_tuple
        self.owner = owner
        self.ranks = [m.dim() for m in metas]
        # The graph's inputs: the region's tensor arguments (sizes it is
        # given are read through the tensors' shapes).
        placeholders = [aten.meta_value(n) for n in eager.graph.nodes if n.op == "placeholder"]
        # Numbers computed from symbols are run-time scalar inputs (one f32
        # element each, aten.Writer.input).
        self.scalar_args = {i for i, m in enumerate(placeholders) if isinstance(m, (torch.SymFloat, float))}
        self.tensor_args = [i for i, m in enumerate(placeholders)
                            if isinstance(m, torch.Tensor) or i in self.scalar_args]
        self.inputs = [placeholders[i] for i in self.tensor_args]
        self.disabled = False
        self._bundles = {}
        self._lock = threading.Lock()
        if not dynamic:
            self._bundle_for(None)

    def _bundle_for(self, tensors):
        """The bundle for these inputs' shapes (compiled on first use): the
        graph with dynamic dims at a shape hint, or (the backend's
        dynamic=False) the graph written again with this call's sizes."""
        key = None if tensors is None or not self.dynamic else tuple(tuple(t.shape) for t in tensors)
        with self._lock:
            b = self._bundles.get(key)
            if b is None:
                if key is None:
                    b = self.owner.compile_graph(self.text, None)
                elif self.owner.dynamic is False:
                    sizes = {}
                    for meta, shape in zip(self.inputs, key):
                        if not isinstance(meta, torch.Tensor):
                            continue  # a scalar input
                        for d, size in zip(meta.shape, shape):
                            if aten.symbol(d) is not None:
                                sizes[aten.symbol(d)] = size
                    text = write(self.text.split("@", 1)[1].split("(", 1)[0], self.eager, sizes)[0]
                    b = self.owner.compile_graph(text, None)
                else:
                    b = self.owner.compile_graph(self.text, {i: list(s) for i, s in enumerate(key)})
                self._bundles[key] = b
        return b

    def forward(self, *args):
        if not self.disabled:
            try:
                return self._run(args)
            except TirError as e:
                if e.reason == "INPUT_MISMATCH":
                    # Arguments other than the region was compiled for: this call only.
                    self.owner.warn("tir region %s was called with other arguments than it was compiled for (%s); "
                                    "that call runs eagerly" % (self.name, e))
                    return self.eager(*args)
                self.disabled = True
                self.owner.warn("tir region %s failed (%s); it runs eagerly from now on" % (self.name, e))
            except (RuntimeError, ValueError) as e:
                self.disabled = True
                self.owner.warn("tir region %s failed (%s); it runs eagerly from now on" % (self.name, e))
        return self.eager(*args)

    def _run(self, args):
        tensors = []
        for i in self.tensor_args:
            if i in self.scalar_args:
                tensors.append(torch.tensor([float(args[i])], dtype=torch.float32))
                continue
            t = args[i].detach()
            if t.dim() == 0:
                t = t.reshape(1)
            tensors.append(t.contiguous())
        bundle = self._bundle_for(tensors)
        results = bundle.run(*tensors)
        outs = []
        for (i, groups), rank in zip(self.where, self.ranks):
            r = results[i]
            if not isinstance(r, torch.Tensor):  # a region that reads no tensor (an arange) answers in numpy
                r = torch.from_numpy(r)
            if groups is not None:  # a view that merges dims tir could not size: merged here
                r = r.reshape([_prod(r.shape[d] for d in g) for g in groups])
            outs.append(r.reshape(()) if rank == 0 else r)
        self.owner.regions_run += 1
        return tuple(outs) if self.as_tuple else outs[0]
