"""PyTorch models as tir graphs, through torch.fx.

    exported = tir.fx.export(model, (x,))        # .text: the tir graph, .inputs: its input order
    fast = tir.fx.compile(model, (x,))           # callable like model(x), runs the tuned bundle
    y = fast(x)

`export` traces the module (torch.fx.symbolic_trace; a GraphModule is taken as
is), runs it once on the example inputs to learn every value's shape and
dtype, and writes one `tir.graph`: the user's inputs first, then the
module's parameters and buffers it reads, lifted to graph inputs
(`Exported.inputs` names them). Input strides come from the example inputs.
Dims named in `dynamic` ({input index: [dims]}) are `?` in the graph, and so is
every dim of every value that follows them (found by running the module at a
second size). A node the exporter cannot write raises TirError UNSUPPORTED_OP
naming the node and its target.

What is written: linear / addmm / matmul / bmm; add, sub, mul, div, pow (also
with numbers); relu, gelu (erf and tanh), silu, sigmoid, tanh, softplus,
exp, log, sqrt, rsqrt, abs, neg, erf, sin, cos, reciprocal; softmax and
log_softmax; layer_norm; RMS norm as models write it (pow, mean, rsqrt, mul);
sum / mean / amax over dims (keepdim or not); view / reshape / flatten /
unsqueeze / squeeze / permute / transpose / t / expand / cat / slicing /
the pieces of split, chunk and unbind;
type conversions (to, float, half, bfloat16, type); contiguous, clone,
dropout in eval, identity. The modules nn.Linear, nn.LayerNorm, nn.Softmax,
nn.LogSoftmax, the activation modules, nn.Dropout and nn.Identity.
"""

import inspect
import math
import operator
import threading
import warnings

import grpc

from tir.client import TirError

try:
    import torch
    import torch.fx
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover - torch is what this module is for
    raise ImportError("tir.fx needs PyTorch (python3-torch): %s" % e)

_INVALID = grpc.StatusCode.INVALID_ARGUMENT

_DTYPE = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16", torch.float64: "f64",
          torch.int32: "si32", torch.int64: "si64", torch.int16: "si16", torch.int8: "si8", torch.uint8: "ui8",
          torch.bool: "i1"}
_FLOAT = {"f32", "f16", "bf16", "f64"}


def unsupported(node, why):
    target = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", repr(node.target))
    return TirError(_INVALID, "UNSUPPORTED_OP", "node %s (%s %s): %s" % (node.name, node.op, target, why))


class Exported:
    """The tir graph of a module: `text`, and `inputs`: what each graph input
    is, in order ("input", i) for the i-th argument of the call or
    ("param", qualified name) for a parameter or buffer. `outputs`: how the
    graph's results make the module's return value (see `unflatten`)."""

    def __init__(self, text, inputs, output_tree, dynamic, input_specs):
        self.text, self.inputs, self.output_tree = text, inputs, output_tree
        self.dynamic = dynamic            # {graph input index: [dims]}
        self.input_specs = input_specs    # [(shape, dtype, strides or None)]

    def unflatten(self, results, graph_inputs=()):
        """The module's return value from the bundle's `results` and the
        graph's input tensors (for results that are inputs)."""
        def build(t):
            if isinstance(t, dict):
                return {k: build(x) for k, x in t.items()}
            if isinstance(t, tuple) and t and t[0] in ("result", "input") and not isinstance(t[0], tuple):
                if t[0] == "input":
                    return graph_inputs[t[1]]
                r = results[t[1]]
                return r.reshape(()) if t[2] == 0 else r
            return type(t)(build(x) for x in t)
        return build(self.output_tree)

    def __repr__(self):
        return self.text


class _Val:
    """A tensor value of the graph being written."""

    __slots__ = ("name", "shape", "dtype")

    def __init__(self, name, shape, dtype):
        self.name, self.shape, self.dtype = name, list(shape), dtype

    @property
    def rank(self):
        return len(self.shape)

    @property
    def type(self):
        return _type(self.shape, self.dtype)


def _type(shape, dtype):
    dims = "x".join("?" if d is None else str(d) for d in shape)
    return "tensor<%s%s%s>" % (dims, "x" if dims else "", dtype)


def _float_literal(v, dtype):
    if dtype in _FLOAT:
        if math.isinf(v):
            return "0x7F800000" if v > 0 else "0xFF800000"
        return "%.17e" % float(v)  # MLIR wants a '.' in a float literal
    if dtype == "i1":
        return "true" if v else "false"
    return str(int(v))


class _Parts:
    """The pieces of a split along `dim`: piece i starts at starts[i] and
    spans sizes[i] (unbind: the dim is dropped)."""

    def __init__(self, v, dim, starts, sizes, drop):
        self.v, self.dim, self.starts, self.sizes, self.drop = v, dim, starts, sizes, drop

    def part(self, w, i, node):
        if not isinstance(i, int) or not -len(self.starts) <= i < len(self.starts):
            raise unsupported(node, "piece %r of %d" % (i, len(self.starts)))
        v, d = self.v, self.dim
        lo, size = self.starts[i], self.sizes[i]
        if v.shape[d] is None:
            raise unsupported(node, "a split along a dynamic dim")
        starts = [0] * v.rank
        limits = [0 if x is None else x for x in v.shape]  # a dim of run-time extent is kept whole (limit 0)
        starts[d], limits[d] = lo, lo + size
        shape = list(v.shape)
        shape[d] = size
        r = w.emit("slice %s starts = [%s] limits = [%s] strides = [%s] : %s -> $T"
                   % (v.name, ", ".join(map(str, starts)), ", ".join(map(str, limits)), ", ".join(["1"] * v.rank),
                      v.type), shape, v.dtype)
        return w.reshape(r, w.shape_of(node), node)


class _Recorder(torch.fx.Interpreter):
    """Runs the graph and keeps every node's value."""

    def __init__(self, gm):
        super().__init__(gm)
        self.values = {}

    def run_node(self, n):
        v = super().run_node(n)
        self.values[n] = v
        return v


def _trace(module, concrete_args=None):
    if isinstance(module, torch.fx.GraphModule):
        return module
    if not isinstance(module, torch.nn.Module):
        raise TirError(_INVALID, "INVALID_ARGUMENT", "tir.fx takes a torch.nn.Module or a torch.fx.GraphModule, got %s"
                       % type(module).__name__)
    try:
        return torch.fx.symbolic_trace(module, concrete_args=concrete_args or None)
    except Exception as e:  # torch.fx's own errors (data-dependent control flow, ...)
        raise TirError(_INVALID, "UNSUPPORTED_OP", "torch.fx cannot trace %s: %s" % (type(module).__name__, e))


def _record(gm, inputs):
    rec = _Recorder(gm)
    with torch.no_grad():
        rec.run(*inputs)
    return rec.values


def _resized(inputs, dynamic):
    """The example inputs with every dynamic dim doubled (to tell which dims
    of each value follow them)."""
    out = []
    for i, t in enumerate(inputs):
        dims = dynamic.get(i, ())
        if not dims or not isinstance(t, torch.Tensor):
            out.append(t)
            continue
        shape = list(t.shape)
        for d in dims:
            shape[d] = max(2, 2 * shape[d])
        if t.dtype.is_floating_point:
            out.append(torch.randn(shape, dtype=t.dtype))
        else:
            out.append(torch.zeros(shape, dtype=t.dtype))
    return out


class _Writer:
    def __init__(self, gm, values, other):
        self.gm, self.values, self.other = gm, values, other
        self.lines, self.args, self.env = [], [], {}
        self.inputs, self.params = [], {}
        self.count = 0
        self.modules = dict(gm.named_modules())
        self.dims = {}           # (value name, dim) -> index value
        self.placeholders = []   # (node, _Val) of the user's inputs
        self.fixed = {}          # argument index -> the constant it was traced with

    # -- values ---------------------------------------------------------------

    def fresh(self, hint="v"):
        self.count += 1
        return "%%%s%d" % (hint, self.count)

    def shape_of(self, node):
        """The node's shape in the graph: a `?` where the resized run differs;
        a rank-0 value is written with shape [1] (Exported.unflatten gives
        it back its rank)."""
        v = self.values[node]
        if any(d == 0 for d in v.shape):
            raise unsupported(node, "its result has a zero-size dim %s" % list(v.shape))
        o = self.other.get(node) if self.other is not None else None
        if o is None or not isinstance(o, torch.Tensor):
            shape = list(v.shape)
        else:
            shape = [a if a == b else None for a, b in zip(v.shape, o.shape)]
        return shape or [1]

    def emit(self, text, shape, dtype, hint="v"):
        name = self.fresh(hint)
        self.lines.append("  %s = %s" % (name, text.replace("$T", _type(shape, dtype))))
        return _Val(name, shape, dtype)

    def lift(self, qualname, tensor, node):
        """A parameter or buffer as a graph input (once)."""
        if qualname in self.params:
            return self.params[qualname]
        if not isinstance(tensor, torch.Tensor):
            raise unsupported(node, "attribute %s is not a tensor" % qualname)
        dtype = _DTYPE.get(tensor.dtype)
        if dtype is None:
            raise unsupported(node, "parameter %s has dtype %s" % (qualname, tensor.dtype))
        name = "%%p%d" % len(self.params)
        v = _Val(name, list(tensor.shape) or [1], dtype)
        self.args.append((name, v, _strides_attr(tensor)))
        self.inputs.append(("param", qualname))
        self.params[qualname] = v
        return v

    def const(self, value, rank, dtype):
        return self.emit("constant dense<%s> : $T" % _float_literal(value, dtype), [1] * rank, dtype, "c")

    def convert(self, v, dtype):
        if v.dtype == dtype:
            return v
        return self.emit("convert %s : %s -> $T" % (v.name, v.type), v.shape, dtype)

    def reshape(self, v, shape, node=None):
        """`v` reshaped to `shape`. A `?` dim of the result takes its size
        from a `dim` of `v` (when the reshape only adds or drops unit dims)
        or of a graph input whose dim has the same sizes in both runs."""
        shape = list(shape) or [1]
        if shape == v.shape:
            return v
        dynamic = [i for i, d in enumerate(shape) if d is None]
        if not dynamic:
            if any(d is None for d in v.shape):
                raise unsupported(node, "a reshape of a dynamic dim to a static size") if node is not None else \
                    TirError(_INVALID, "UNSUPPORTED_OP", "a reshape of a dynamic dim to a static size")
            return self.emit("reshape %s : %s -> $T" % (v.name, v.type), shape, v.dtype)
        sizes = []
        if [d for d in shape if d != 1] == [d for d in v.shape if d != 1]:
            sizes = [self.dim_of(v, j) for j, d in enumerate(v.shape) if d is None]
        elif node is not None and self.other is not None and node in self.other:
            a, b = self.values[node].shape, self.other[node].shape
            for i in dynamic:
                found = self.input_dim(a[i], b[i])
                if found is None:
                    raise unsupported(node, "a reshape whose dynamic dim %d (%d, then %d) is no input's dim (a product "
                                            "of dynamic dims is not written)" % (i, a[i], b[i]))
                sizes.append(found)
        else:
            raise TirError(_INVALID, "UNSUPPORTED_OP", "a reshape that moves a dynamic dim (%s -> %s)"
                           % (_type(v.shape, v.dtype), _type(shape, v.dtype)))
        return self.emit("reshape %s dynamic_dims(%s) : %s -> $T" % (v.name, ", ".join(sizes), v.type), shape, v.dtype)

    def dim_of(self, v, j):
        """The index value of `v`'s dim `j` (a `dim` op, once)."""
        key = (v.name, j)
        if key not in self.dims:
            name = self.fresh("d")
            self.lines.append("  %s = dim %s dimension = %d : %s" % (name, v.name, j, v.type))
            self.dims[key] = name
        return self.dims[key]

    def input_dim(self, a, b):
        """A graph input's dynamic dim that is `a` in the example run and `b`
        in the resized one, as an index value; None when there is none."""
        for node, val in self.placeholders:
            for j, d in enumerate(val.shape):
                if d is None and self.values[node].shape[j] == a and self.other[node].shape[j] == b:
                    return self.dim_of(val, j)
        return None

    def to_rank(self, v, rank):
        return v if v.rank >= rank else self.reshape(v, [1] * (rank - v.rank) + v.shape)

    def operand(self, a, like, dtype, node):
        """An argument of a pointwise op as a value of `dtype`."""
        if isinstance(a, torch.fx.Node):
            return self.convert(self.value(a, node), dtype)
        if isinstance(a, (int, float, bool)):
            return self.const(a, like, dtype)
        raise unsupported(node, "an operand of type %s" % type(a).__name__)

    def value(self, a, node):
        if a not in self.env:
            raise unsupported(node, "reads %s, which is not a tensor value" % a)
        v = self.env[a]
        if not isinstance(v, _Val):
            raise unsupported(node, "reads %s, which is not a tensor value" % a)
        return v

    def binary(self, op, a, b, node, out_dtype=None):
        shape, dtype = self.shape_of(node), self.dtype_of(node)
        compute = out_dtype or dtype
        x = self.to_rank(self.operand(a, len(shape), compute, node), len(shape))
        y = self.to_rank(self.operand(b, len(shape), compute, node), len(shape))
        types = x.type if x.shape == y.shape == shape else "(%s, %s) -> %s" % (x.type, y.type, _type(shape, compute))
        return self.emit("%s %s, %s : %s" % (op, x.name, y.name, types), shape, compute)

    def unary(self, op, v, node, attrs=""):
        return self.emit("%s%s %s : $T" % (op, attrs, v.name), v.shape, v.dtype)

    def reduce(self, v, dims, mode):
        """Reduced over `dims`, kept as extent 1."""
        dims = sorted(set(d % v.rank for d in dims))
        shape = [1 if i in dims else d for i, d in enumerate(v.shape)]
        return self.emit("reduce(%s)<dimensions = [%s], reduction_mode = <%s>> : %s -> $T"
                         % (v.name, ", ".join(map(str, dims)), mode, v.type), shape, v.dtype)

    def dtype_of(self, node):
        v = self.values[node]
        if not isinstance(v, torch.Tensor):
            raise unsupported(node, "its result is not a tensor")
        d = _DTYPE.get(v.dtype)
        if d is None:
            raise unsupported(node, "dtype %s" % v.dtype)
        return d

    def matmul(self, a, b, node):
        """torch.matmul: batch dims broadcast, vectors are not written."""
        if a.rank < 2 or b.rank < 2:
            raise unsupported(node, "matmul of a vector (rank 1)")
        rank = max(a.rank, b.rank)
        a, b = self.to_rank(a, rank), self.to_rank(b, rank)
        shape = self.shape_of(node)
        acc = "f32" if a.dtype in ("f16", "bf16", "f32") else a.dtype
        out = self.emit("matmul(%s, %s) : (%s, %s) -> $T" % (a.name, b.name, a.type, b.type), shape, acc)
        return self.convert(out, self.dtype_of(node))

    def transpose(self, v, perm):
        if list(perm) == list(range(v.rank)):
            return v
        shape = [v.shape[p] for p in perm]
        return self.emit("transpose %s permutation = [%s] : %s -> $T" % (v.name, ", ".join(map(str, perm)), v.type),
                         shape, v.dtype)

    def linear(self, x, w, b, node):
        x = self.convert(x, w.dtype) if x.dtype != w.dtype else x
        wt = self.transpose(w, [1, 0])
        y = self.matmul(x, wt, node)
        if b is not None:
            shape = self.shape_of(node)
            bb = self.to_rank(self.convert(b, y.dtype), len(shape))
            y = self.emit("add %s, %s : (%s, %s) -> $T" % (y.name, bb.name, y.type, bb.type), shape, y.dtype)
        return y

    def softmax(self, x, dim, node, log=False):
        """A half-precision softmax is computed in f32 and rounded once at
        the end, as PyTorch computes it (and as tir's online max and sum
        takes it for rows too long to keep on chip)."""
        dtype = self.dtype_of(node)
        compute = "f32" if dtype in ("f16", "bf16") else dtype
        x = self.convert(x, compute)
        dim = dim % x.rank
        m = self.reduce(x, [dim], "max")
        s = self.emit("sub %s, %s : (%s, %s) -> $T" % (x.name, m.name, x.type, m.type), x.shape, compute)
        e = self.unary("exp", s, node)
        z = self.reduce(e, [dim], "add")
        if log:
            lz = self.unary("log", z, node)
            y = self.emit("sub %s, %s : (%s, %s) -> $T" % (s.name, lz.name, s.type, lz.type), x.shape, compute)
        else:
            y = self.emit("div %s, %s : (%s, %s) -> $T" % (e.name, z.name, e.type, z.type), x.shape, compute)
        return self.convert(y, dtype)

    def mean(self, v, dims, node):
        n = 1
        for d in dims:
            if v.shape[d % v.rank] is None:
                raise unsupported(node, "a mean over a dynamic dim")
            n *= v.shape[d % v.rank]
        s = self.reduce(v, dims, "add")
        c = self.const(1.0 / n, s.rank, s.dtype)
        return self.emit("mul %s, %s : (%s, %s) -> $T" % (s.name, c.name, s.type, c.type), s.shape, s.dtype)

    def layer_norm(self, x, normalized, w, b, eps, node):
        dtype = self.dtype_of(node)
        x = self.convert(x, "f32" if dtype in ("f16", "bf16") else dtype)
        dims = list(range(x.rank - len(normalized), x.rank))
        mu = self.mean(x, dims, node)
        d = self.emit("sub %s, %s : (%s, %s) -> $T" % (x.name, mu.name, x.type, mu.type), x.shape, x.dtype)
        sq = self.emit("mul %s, %s : $T" % (d.name, d.name), d.shape, d.dtype)
        var = self.mean(sq, dims, node)
        c = self.const(eps, var.rank, var.dtype)
        ve = self.emit("add %s, %s : (%s, %s) -> $T" % (var.name, c.name, var.type, c.type), var.shape, var.dtype)
        r = self.unary("rsqrt", ve, node)
        y = self.emit("mul %s, %s : (%s, %s) -> $T" % (d.name, r.name, d.type, r.type), d.shape, d.dtype)
        for p, op in ((w, "mul"), (b, "add")):
            if p is not None:
                pp = self.to_rank(self.convert(p, y.dtype), y.rank)
                y = self.emit("%s %s, %s : (%s, %s) -> $T" % (op, y.name, pp.name, y.type, pp.type), y.shape, y.dtype)
        return self.convert(y, dtype)

    def keep_or_drop(self, r, dims, keepdim, node):
        if keepdim:
            return r
        dims = set(d % r.rank for d in dims)
        return self.reshape(r, [d for i, d in enumerate(r.shape) if i not in dims])

    # -- nodes ----------------------------------------------------------------

    def write(self, inputs):
        gm = self.gm
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(inputs):
            raise TirError(_INVALID, "INVALID_ARGUMENT", "the module takes %d inputs, %d examples given"
                           % (len(placeholders), len(inputs)))
        for i, n in enumerate(placeholders):
            t = inputs[i]
            if not isinstance(t, torch.Tensor):
                if t is None or isinstance(t, (bool, int, float, str)):
                    self.fixed[i] = t  # traced as a constant (concrete_args); calls must pass the same
                    continue
                raise unsupported(n, "input %d is a %s; tir.fx exports tensor inputs" % (i, type(t).__name__))
            dtype = _DTYPE.get(t.dtype)
            if dtype is None:
                raise unsupported(n, "input %d has dtype %s" % (i, t.dtype))
            v = _Val("%%in%d" % i, self.shape_of(n), dtype)
            self.args.append((v.name, v, _strides_attr(t)))
            self.inputs.append(("input", i))
            self.env[n] = v
            self.placeholders.append((n, v))
        for n in gm.graph.nodes:
            if n.op == "placeholder":
                continue
            if n.op == "output":
                return self.finish(n)
            self.env[n] = self.node(n)
        raise TirError(_INVALID, "INVALID_GRAPH", "the traced graph has no output")

    def finish(self, n):
        """(graph text or None when every result is an input, output tree).
        Tree leaves: ("result", i, rank) for the graph's i-th result (each
        value once), ("input", j) for a graph input returned as it is."""
        flat, index = [], {}
        inputs = {v.name: j for j, (_, v, _) in enumerate(self.args)}

        def tree(a):
            if isinstance(a, dict):
                return {k: tree(x) for k, x in a.items()}
            if isinstance(a, (tuple, list)):
                return type(a)(tree(x) for x in a)
            if not isinstance(a, torch.fx.Node) or not isinstance(self.env.get(a), _Val):
                raise unsupported(n, "the module returns %r, not tensors" % (a,))
            v = self.env[a]
            if v.name in inputs:
                return ("input", inputs[v.name])
            if v.name not in index:
                index[v.name] = len(flat)
                flat.append(v)
            return ("result", index[v.name], self.values[a].dim())

        output_tree = tree(n.args[0])
        if not flat:
            return None, output_tree
        sig = []
        for name, v, strides in self.args:
            attr = ' {tir.stride = "(%s)"}' % ",".join(map(str, strides)) if strides else ""
            sig.append("%s: %s%s" % (name, v.type, attr))
        results = ", ".join(v.type for v in flat)
        text = "tir.graph @%s(%s) -> %s {\n%s\n  results %s : %s\n}\n" % (
            _graph_name(self.gm), ", ".join(sig), results if len(flat) == 1 else "(%s)" % results,
            "\n".join(self.lines), ", ".join(v.name for v in flat), results)
        return text, output_tree

    def node(self, n):
        if n.op == "get_attr":
            return self.lift(n.target, _attr(self.gm, n.target), n)
        v = self.values.get(n)
        if isinstance(v, (tuple, list)) and v and all(isinstance(t, torch.Tensor) for t in v):
            return self.parts(n, v)
        if not isinstance(v, torch.Tensor):
            return None  # a Python value (a size, a dim): read where it is used
        if n.op == "call_module":
            return self.module(n, self.modules[n.target])
        if n.op == "call_method":
            return self.method(n)
        if n.op == "call_function":
            return self.function(n)
        raise unsupported(n, "unknown node kind")

    def parts(self, n, pieces):
        """split / chunk / tensor_split / unbind: the pieces, sliced when a
        getitem reads one."""
        name = n.target if n.op == "call_method" else getattr(n.target, "__name__", "")
        if n.op not in ("call_method", "call_function") or name not in ("split", "chunk", "tensor_split", "unbind"):
            raise unsupported(n, "it returns several tensors")
        v = self.value(n.args[0], n)
        dim = n.kwargs.get("dim", 0)
        if name == "unbind":
            dim = n.args[1] if len(n.args) > 1 else dim
        elif len(n.args) > 2:
            dim = n.args[2]
        dim = self.concrete(dim, n) % v.rank
        if v.shape[dim] is None:
            raise unsupported(n, "%s along a dynamic dim" % name)
        starts, at = [], 0
        for t in pieces:
            starts.append(at)
            at += 1 if name == "unbind" else t.shape[dim]
        return _Parts(v, dim, starts, [1 if name == "unbind" else t.shape[dim] for t in pieces], name == "unbind")

    def concrete(self, a, node):
        """A Python argument (a size read from a tensor becomes its example
        value, unless the dim is dynamic)."""
        if isinstance(a, torch.fx.Node):
            if isinstance(self.env.get(a), _Val):
                raise unsupported(node, "a tensor where a number is needed")
            if self.other is not None and self.other.get(a) != self.values.get(a):
                raise unsupported(node, "uses %s, a size that follows a dynamic dim" % a.name)
            return self.values[a]
        if isinstance(a, (tuple, list)):
            return type(a)(self.concrete(x, node) for x in a)
        if isinstance(a, slice):
            return slice(self.concrete(a.start, node), self.concrete(a.stop, node), self.concrete(a.step, node))
        return a

    def module(self, n, m):
        x = self.value(n.args[0], n) if n.args else None
        prefix = n.target + "."
        if isinstance(m, torch.nn.Linear):
            w = self.lift(prefix + "weight", m.weight, n)
            b = self.lift(prefix + "bias", m.bias, n) if m.bias is not None else None
            return self.linear(x, w, b, n)
        if isinstance(m, torch.nn.LayerNorm):
            w = self.lift(prefix + "weight", m.weight, n) if m.weight is not None else None
            b = self.lift(prefix + "bias", m.bias, n) if m.bias is not None else None
            return self.layer_norm(x, m.normalized_shape, w, b, m.eps, n)
        if isinstance(m, (torch.nn.Softmax, torch.nn.LogSoftmax)):
            if m.dim is None:
                raise unsupported(n, "softmax without dim")
            return self.softmax(x, m.dim, n, log=isinstance(m, torch.nn.LogSoftmax))
        if isinstance(m, torch.nn.GELU):
            return self.activation("gelu", x, n, approximate=m.approximate)
        if isinstance(m, torch.nn.Softplus):
            return self.activation("softplus", x, n, beta=m.beta, threshold=m.threshold)
        simple = {torch.nn.ReLU: "relu", torch.nn.SiLU: "silu", torch.nn.Sigmoid: "sigmoid", torch.nn.Tanh: "tanh"}
        for cls, name in simple.items():
            if isinstance(m, cls):
                return self.activation(name, x, n)
        if isinstance(m, (torch.nn.Dropout, torch.nn.Identity)):
            if isinstance(m, torch.nn.Dropout) and m.training and m.p > 0:
                raise unsupported(n, "dropout in training mode (call model.eval())")
            return x
        raise unsupported(n, "module %s is not written to tir" % type(m).__name__)

    def activation(self, name, x, n, approximate="none", beta=1.0, threshold=20.0):
        x = self.convert(x, self.dtype_of(n))
        if name == "relu":
            return self.unary("relu_fwd", x, n)
        if name == "gelu":
            if approximate not in ("none", "tanh"):
                raise unsupported(n, "gelu approximate=%r" % approximate)
            return self.unary("gelu_fwd" if approximate == "none" else "gelu_approx_tanh_fwd", x, n)
        if name == "silu":
            return self.unary("swish_fwd", x, n, "<beta = 1.0 : f32>")
        if name == "sigmoid":
            return self.unary("sigmoid_fwd", x, n)
        if name == "tanh":
            return self.unary("tanh_fwd", x, n)
        if name == "softplus":
            return self.unary("softplus_fwd", x, n, "<beta = %r : f32>" % float(beta))
        raise unsupported(n, "activation %s" % name)

    _UNARY = {"exp": "exp", "log": "log", "sqrt": "sqrt", "rsqrt": "rsqrt", "abs": "abs", "neg": "neg",
              "erf": "erf", "sin": "sin", "cos": "cos", "reciprocal": "reciprocal", "tan": "tan",
              "floor": "floor", "ceil": "ceil"}
    _ACT = {"relu": "relu", "gelu": "gelu", "silu": "silu", "sigmoid": "sigmoid", "tanh": "tanh",
            "softplus": "softplus"}
    _BINARY = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "true_divide": "div", "pow": "pow",
               "maximum": "max", "minimum": "min"}

    def common(self, name, n, args, kwargs):
        """A call by its name (torch.X, F.X, Tensor.X share one meaning)."""
        a0 = args[0] if args else None
        if name in self._BINARY:
            a, b = args[0], args[1] if len(args) > 1 else kwargs.get("other", kwargs.get("exponent"))
            alpha = kwargs.get("alpha", 1)
            if name in ("add", "sub") and alpha != 1:
                if isinstance(b, torch.fx.Node):
                    raise unsupported(n, "%s with alpha and a tensor" % name)
                b = b * alpha
            if name == "div" and kwargs.get("rounding_mode") is not None:
                raise unsupported(n, "div rounding_mode=%r" % kwargs["rounding_mode"])
            if name == "pow" and not isinstance(a, torch.fx.Node):
                return self.binary("pow", a, b, n)
            if name == "pow" and isinstance(b, (int, float)) and b == 2:
                return self.binary("mul", a, a, n)
            if name == "pow" and isinstance(b, (int, float)) and b == 0.5:
                return self.unary("sqrt", self.convert(self.value(a, n), self.dtype_of(n)), n)
            return self.binary(self._BINARY[name], a, b, n)
        if name in self._UNARY:
            return self.unary(self._UNARY[name], self.convert(self.value(a0, n), self.dtype_of(n)), n)
        if name in self._ACT:
            extra = {}
            if name == "gelu":
                extra["approximate"] = kwargs.get("approximate", args[1] if len(args) > 1 else "none")
            if name == "softplus":
                extra["beta"] = kwargs.get("beta", args[1] if len(args) > 1 else 1.0)
            return self.activation(name, self.value(a0, n), n, **extra)
        if name in ("softmax", "log_softmax"):
            dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
            if dim is None:
                raise unsupported(n, "softmax without dim")
            return self.softmax(self.value(a0, n), self.concrete(dim, n), n, log=name == "log_softmax")
        if name in ("matmul", "bmm", "mm"):
            return self.matmul(self.value(a0, n), self.value(args[1], n), n)
        if name == "linear":
            b = args[2] if len(args) > 2 else kwargs.get("bias")
            return self.linear(self.value(a0, n), self.value(args[1], n), self.value(b, n) if b is not None else None, n)
        if name == "addmm":
            beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)
            if beta != 1 or alpha != 1:
                raise unsupported(n, "addmm with beta/alpha")
            m = self.matmul(self.value(args[1], n), self.value(args[2], n), n)
            bias = self.to_rank(self.convert(self.value(a0, n), m.dtype), m.rank)
            return self.emit("add %s, %s : (%s, %s) -> $T" % (m.name, bias.name, m.type, bias.type), m.shape, m.dtype)
        if name == "layer_norm":
            shape = self.concrete(args[1] if len(args) > 1 else kwargs["normalized_shape"], n)
            w = args[2] if len(args) > 2 else kwargs.get("weight")
            b = args[3] if len(args) > 3 else kwargs.get("bias")
            eps = args[4] if len(args) > 4 else kwargs.get("eps", 1e-5)
            return self.layer_norm(self.value(a0, n), list(shape), self.value(w, n) if w is not None else None,
                                   self.value(b, n) if b is not None else None, eps, n)
        if name in ("sum", "mean", "amax", "max"):
            v = self.value(a0, n)
            dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
            keepdim = kwargs.get("keepdim", args[2] if len(args) > 2 else False)
            if name == "max" and (dim is None or isinstance(dim, torch.fx.Node)):
                raise unsupported(n, "max: use amax (max over a dim returns indices too)")
            dim = self.concrete(dim, n)
            dims = list(range(v.rank)) if dim is None else [dim] if isinstance(dim, int) else list(dim)
            if kwargs.get("dtype") is not None:
                v = self.convert(v, _DTYPE[kwargs["dtype"]])
            if name == "mean":
                r = self.mean(v, dims, n)
            else:
                r = self.reduce(v, dims, "add" if name == "sum" else "max")
            return self.keep_or_drop(r, dims, keepdim, n)
        if name in ("view", "reshape", "flatten", "unsqueeze", "squeeze", "expand", "expand_as", "view_as",
                    "reshape_as"):
            v = self.value(a0, n)
            if name == "view" and any(isinstance(a, torch.dtype) for a in list(args[1:]) + list(kwargs.values())):
                raise unsupported(n, "view as another dtype (a bitcast) is not written")
            shape = self.shape_of(n)
            if name in ("expand", "expand_as"):
                v = self.to_rank(v, len(shape))
                if v.shape == shape:
                    return v
                return self.emit("broadcast %s : %s -> $T" % (v.name, v.type), shape, v.dtype)
            return self.reshape(v, shape, n)
        if name in ("permute", "transpose", "t", "swapaxes"):
            v = self.value(a0, n)
            if name == "permute":
                dims = args[1:] if len(args) > 2 or not isinstance(args[1], (list, tuple)) else args[1]
                perm = [d % v.rank for d in self.concrete(list(dims), n)]
            elif name == "t":
                perm = [1, 0] if v.rank == 2 else list(range(v.rank))
            else:
                d0, d1 = [self.concrete(d, n) % v.rank for d in args[1:3]]
                perm = list(range(v.rank))
                perm[d0], perm[d1] = perm[d1], perm[d0]
            return self.transpose(v, perm)
        if name in ("cat", "concat", "concatenate"):
            parts = [self.convert(self.value(p, n), self.dtype_of(n)) for p in a0]
            dim = self.concrete(kwargs.get("dim", args[1] if len(args) > 1 else 0), n) % parts[0].rank
            if len(parts) == 1:
                return parts[0]
            types = ", ".join(p.type for p in parts)
            return self.emit("concatenate %s dimension = %d : (%s) -> $T" % (", ".join(p.name for p in parts), dim, types),
                             self.shape_of(n), parts[0].dtype)
        if name in ("to", "type", "float", "half", "bfloat16", "double", "int", "long", "bool", "type_as"):
            return self.convert(self.value(a0, n), self.dtype_of(n))
        if name in ("contiguous", "clone", "detach", "dropout", "identity"):
            if name == "dropout" and (kwargs.get("training", args[2] if len(args) > 2 else True)
                                      and kwargs.get("p", args[1] if len(args) > 1 else 0.5) > 0):
                raise unsupported(n, "dropout in training mode")
            return self.value(a0, n)
        if name == "getitem":
            if isinstance(self.env.get(a0), _Parts):
                return self.env[a0].part(self, self.concrete(args[1], n), n)
            return self.getitem(self.value(a0, n), args[1], n)
        raise unsupported(n, "%s is not written to tir" % name)

    def getitem(self, v, index, n):
        index = self.concrete(index, n)
        if not isinstance(index, tuple):
            index = (index,)
        starts, limits, steps, out_shape = [], [], [], []
        dim = 0
        expanded = []
        for i, ix in enumerate(index):
            if ix is Ellipsis:
                rest = sum(1 for x in index[i + 1:] if x is not None)
                expanded += [slice(None)] * (v.rank - dim - rest)
                dim = v.rank - rest
                continue
            expanded.append(ix)
            if ix is not None:
                dim += 1
        expanded += [slice(None)] * (v.rank - sum(1 for x in expanded if x is not None))
        d = 0
        for ix in expanded:
            if ix is None:
                out_shape.append(1)
                continue
            extent = v.shape[d]
            if isinstance(ix, int):
                if extent is None:
                    raise unsupported(n, "indexing a dynamic dim")
                i0 = ix % extent
                starts.append(i0), limits.append(i0 + 1), steps.append(1)
            elif isinstance(ix, slice):
                if extent is None:
                    if ix != slice(None):
                        raise unsupported(n, "slicing a dynamic dim")
                    # a dim of run-time extent is kept whole (tir's limit 0)
                    starts.append(0), limits.append(0), steps.append(1)
                    out_shape.append(None)
                    d += 1
                    continue
                s0, s1, st = ix.indices(extent)
                if st <= 0:
                    raise unsupported(n, "a negative slice step")
                starts.append(s0), limits.append(max(s0, s1)), steps.append(st)
                out_shape.append(max(0, (max(s0, s1) - s0 + st - 1) // st))
            else:
                raise unsupported(n, "indexing with %s" % type(ix).__name__)
            d += 1
        sliced_shape = [None if e is None else (lim - s + st - 1) // st
                        for s, lim, st, e in zip(starts, limits, steps, v.shape)]
        r = v
        if sliced_shape != v.shape:
            r = self.emit("slice %s starts = [%s] limits = [%s] strides = [%s] : %s -> $T"
                          % (v.name, ", ".join(map(str, starts)), ", ".join(map(str, limits)),
                             ", ".join(map(str, steps)), v.type), sliced_shape, v.dtype)
        return self.reshape(r, self.shape_of(n), n)

    def function(self, n):
        t = n.target
        args, kwargs = list(n.args), dict(n.kwargs)
        ops = {operator.add: "add", operator.sub: "sub", operator.mul: "mul", operator.truediv: "div",
               operator.pow: "pow", operator.matmul: "matmul", operator.neg: "neg", operator.getitem: "getitem"}
        if t in ops:
            name = ops[t]
            if name in ("add", "sub", "mul", "div", "pow") and not isinstance(args[0], torch.fx.Node):
                # 2 - x, 1 / x: the number on the left
                return self.binary(self._BINARY[name], self.concrete(args[0], n), args[1], n)
            if name in ("add", "sub", "mul", "div", "pow"):
                args[1] = args[1] if isinstance(args[1], torch.fx.Node) and isinstance(self.env.get(args[1]), _Val) \
                    else self.concrete(args[1], n)
            return self.common(name, n, args, kwargs)
        name = getattr(t, "__name__", None)
        module = getattr(t, "__module__", "") or ""
        if name is None or not (module.startswith("torch") or t in (getattr(torch, name, None), getattr(F, name, None))):
            raise unsupported(n, "function %s.%s is not written to tir" % (module, name))
        if name not in self._SHAPED:
            for i, a in enumerate(args[1:], 1):
                if isinstance(a, torch.fx.Node) and not isinstance(self.env.get(a), _Val):
                    args[i] = self.concrete(a, n)
        return self.common(name, n, args, kwargs)

    # Ops whose result's shape is read from the recorded runs: their size
    # arguments (x.size(0), -1, ...) are not needed, dynamic or not.
    _SHAPED = {"view", "reshape", "flatten", "unsqueeze", "squeeze", "expand", "expand_as", "view_as", "reshape_as"}

    def method(self, n):
        args = list(n.args)
        if n.target in self._SHAPED:
            return self.common(n.target, n, args, dict(n.kwargs))
        for i, a in enumerate(args[1:], 1):
            if isinstance(a, torch.fx.Node) and not isinstance(self.env.get(a), _Val):
                args[i] = self.concrete(a, n)
        return self.common(n.target, n, args, dict(n.kwargs))


def _attr(gm, target):
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def _strides_attr(t):
    if t.dim() == 0 or t.is_contiguous():
        return None
    return list(t.stride())


def _graph_name(gm):
    name = type(gm).__name__
    if name == "GraphModule" and hasattr(gm, "_tir_name"):
        name = gm._tir_name
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "module"


def export(module, example_inputs, dynamic=None):
    """The tir graph of `module` at `example_inputs` (a tuple of tensors).
    `dynamic`: {input index: [dims]} written as `?`. Returns Exported.

    On torch >= 2 a module (not a GraphModule) is traced by torch.export and
    lowered to ATen ops (tir.aten writes them): models export as they are
    written (size() unpacking, split, slices by shape, dict / namedtuple /
    dataclass outputs, buffers updated in place). On torch 1.13,
    torch.fx.symbolic_trace."""
    inputs = tuple(example_inputs)
    if _TORCH_EXPORT and isinstance(module, torch.nn.Module) and not isinstance(module, torch.fx.GraphModule):
        return _export_program(module, _with_defaults(module, inputs), dynamic)
    concrete = {}
    if isinstance(module, torch.nn.Module) and not isinstance(module, torch.fx.GraphModule):
        # Arguments left to their defaults, and numbers, flags or None given
        # as examples, are traced as constants (calls must pass the same).
        try:
            params = [p for p in inspect.signature(module.forward).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            params = []
        if len(inputs) < len(params) and all(p.default is not p.empty for p in params[len(inputs):]):
            inputs = inputs + tuple(p.default for p in params[len(inputs):])
        for p, v in zip(params, inputs):
            if v is None or isinstance(v, (bool, int, float, str)):
                concrete[p.name] = v
    gm = _trace(module, concrete)
    if isinstance(module, torch.nn.Module) and not isinstance(module, torch.fx.GraphModule):
        gm._tir_name = type(module).__name__
    dynamic = {int(k): [int(d) for d in (v if isinstance(v, (list, tuple)) else [v])]
               for k, v in (dynamic or {}).items()}
    for i, dims in dynamic.items():
        if i >= len(inputs) or not isinstance(inputs[i], torch.Tensor):
            raise TirError(_INVALID, "INVALID_ARGUMENT", "dynamic names input %d, which is not a tensor input" % i)
        for d in dims:
            if not -inputs[i].dim() <= d < inputs[i].dim():
                raise TirError(_INVALID, "INVALID_ARGUMENT", "dynamic: input %d has no dim %d" % (i, d))
        dynamic[i] = sorted(d % inputs[i].dim() for d in dims)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(inputs):
        raise TirError(_INVALID, "INVALID_ARGUMENT", "the module takes %d inputs (%s), %d examples given"
                       % (len(placeholders), ", ".join(n.name for n in placeholders), len(inputs)))
    try:
        values = _record(gm, inputs)
    except Exception as e:  # the model itself fails on its examples
        raise TirError(_INVALID, "INVALID_ARGUMENT", "the module does not run on the example inputs: %s: %s"
                       % (type(e).__name__, e))
    other = None
    if dynamic:
        try:
            other = _record(gm, _resized(inputs, dynamic))
        except Exception as e:
            raise TirError(_INVALID, "INVALID_ARGUMENT", "the module does not run with the dynamic dims resized: %s" % e)
    writer = _Writer(gm, values, other)
    text, tree = writer.write(inputs)
    specs = [(tuple(v.shape), v.dtype, s) for _, v, s in writer.args]
    exported = Exported(text, writer.inputs, tree, dynamic, specs)
    exported.fixed = writer.fixed
    exported.arguments = len(placeholders)
    return exported


_TORCH_EXPORT = hasattr(torch, "export") and hasattr(getattr(torch, "export", None), "export")


class ExportedProgram(Exported):
    """Exported through torch.export: `inputs` as Exported's (("input", i),
    ("param", name), ("constant", name)); the results are the program's
    outputs (user outputs, then in-place updates, in the program's order):
    `outputs` says for each where it is among the graph's results (result
    index and the dims merged at run time, or ("input", graph input index)),
    `mutations` which of them update a buffer or an input."""

    def __init__(self, text, inputs, out_spec, outputs, mutations, dynamic, input_specs, ranks):
        super().__init__(text, inputs, None, dynamic, input_specs)
        self.out_spec, self.outputs, self.mutations, self.ranks = out_spec, outputs, mutations, ranks

    def _value(self, j, results, graph_inputs):
        where, rank = self.outputs[j], self.ranks[j]
        if where[0] == "input":
            return graph_inputs[where[1]]
        r = results[where[0]]
        if where[1] is not None:
            r = r.reshape([math.prod(r.shape[d] for d in g) for g in where[1]])
        return r.reshape(()) if rank == 0 else r

    def unflatten(self, results, graph_inputs=()):
        import torch.utils._pytree as pytree
        values = [self._value(j, results, graph_inputs) for j in range(len(self.outputs))
                  if j not in self.mutations]
        return pytree.tree_unflatten(values, self.out_spec)

    def apply_mutations(self, results, graph_inputs, targets):
        """Writes each in-place update into its tensor (`targets`: the
        graph inputs' original tensors, by graph input index)."""
        with torch.no_grad():
            for j, g in self.mutations.items():
                targets[g].copy_(self._value(j, results, graph_inputs).reshape(targets[g].shape))


def _register_dataclass_from(error):
    """torch.export refuses an output type that pytree cannot flatten; a
    dataclass named in the error is registered and True returned."""
    import dataclasses
    import importlib
    import re
    m = re.search(r"<class '([\w.]+)'>", str(error))
    if not m:
        return False
    module_name, _, qualname = m.group(1).rpartition(".")
    try:
        cls = importlib.import_module(module_name)
        for part in qualname.split("."):
            cls = getattr(cls, part)
    except (ImportError, AttributeError):
        return False
    if not dataclasses.is_dataclass(cls):
        return False
    torch.export.register_dataclass(cls)
    return True


def _with_defaults(module, inputs):
    """The example arguments with the forward's defaults after them (a
    compiled module binds its calls the same way)."""
    try:
        params = [p for p in inspect.signature(module.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return inputs
    if len(inputs) < len(params) and all(p.default is not p.empty for p in params[len(inputs):]):
        inputs = inputs + tuple(p.default for p in params[len(inputs):])
    return inputs


def _export_program(module, inputs, dynamic):
    from torch._decomp import core_aten_decompositions
    from tir import aten

    dynamic = {int(k): sorted(int(d) for d in (v if isinstance(v, (list, tuple)) else [v]))
               for k, v in (dynamic or {}).items()}
    for i, ds in dynamic.items():
        if i >= len(inputs) or not isinstance(inputs[i], torch.Tensor):
            raise TirError(_INVALID, "INVALID_ARGUMENT", "dynamic names input %d, which is not a tensor input" % i)
        for d in ds:
            if not -inputs[i].dim() <= d < inputs[i].dim():
                raise TirError(_INVALID, "INVALID_ARGUMENT", "dynamic: input %d has no dim %d" % (i, d))
        dynamic[i] = sorted(d % inputs[i].dim() for d in ds)
    shapes = None
    if dynamic:
        auto = getattr(torch.export.Dim, "AUTO", None)
        shapes = tuple({d: auto if auto is not None else torch.export.Dim("d%d_%d" % (i, d)) for d in dynamic[i]}
                       if i in dynamic else None for i in range(len(inputs)))
    for _ in range(8):
        try:
            # Traced for inference (bundles compute values, not gradients): a
            # buffer updated in place from values that would need grad is fine.
            with torch.no_grad():
                program = torch.export.export(module, inputs, dynamic_shapes=shapes)
            break
        except Exception as e:  # torch.export's own errors name what it cannot trace
            if _register_dataclass_from(e):
                continue
            raise TirError(_INVALID, "UNSUPPORTED_OP", "torch.export cannot trace %s: %s: %s"
                           % (type(module).__name__, type(e).__name__, str(e)[:2000]))
    program = program.run_decompositions(core_aten_decompositions())
    gm, sig = program.graph_module, program.graph_signature
    writer = aten.Writer(type(module).__name__)
    graph_inputs, specs, fixed = [], [], {}
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    # The call's tensors first, then the parameters, buffers and constants
    # it reads (as on torch 1.13).
    sources, user = [], 0
    for node, spec in zip(placeholders, sig.input_specs):
        kind = spec.kind.name
        if kind == "USER_INPUT":
            index = user
            user += 1
            if not isinstance(inputs[index], torch.Tensor):
                fixed[index] = inputs[index]  # specialized by torch.export: calls must pass the same
                continue
            sources.append((0, node, ("input", index)))
        elif kind in ("PARAMETER", "BUFFER"):
            sources.append((1, node, ("param", spec.target)))
        elif kind == "CONSTANT_TENSOR":
            sources.append((1, node, ("constant", spec.target)))
        else:
            raise TirError(_INVALID, "UNSUPPORTED_OP", "the program takes a %s input (%s)" % (kind, spec.target))
    graph_index = {}
    for _, node, source in sorted(sources, key=lambda s: s[0]):
        example = inputs[source[1]] if source[0] == "input" else None
        # An input laid out otherwise than row-major keeps the example's
        # layout (the bundle checks it at each call), as on torch 1.13.
        strides = _strides_attr(example) if isinstance(example, torch.Tensor) and dynamic.get(source[1]) is None \
            else None
        v = writer.input(node, strides)
        if v is None:
            continue
        graph_index[node] = len(graph_inputs)
        graph_inputs.append(source)
        specs.append((tuple(v.shape), v.dtype, strides))
    for node in gm.graph.nodes:
        if node.op == "call_function":
            if isinstance(aten.meta_value(node), (torch.SymInt, torch.SymFloat, torch.SymBool, int, float, bool)):
                continue  # a size (x.size(1), T // n): read through the shapes of the values that use it
            try:
                writer.node(node)
            except aten.Refused as e:
                raise TirError(_INVALID, "UNSUPPORTED_OP", str(e))
    out_nodes = list(next(n for n in gm.graph.nodes if n.op == "output").args[0])
    tensors = [o for o in out_nodes if isinstance(o, torch.fx.Node) and isinstance(aten.meta_value(o), torch.Tensor)]
    if len(tensors) != len(out_nodes):
        raise TirError(_INVALID, "UNSUPPORTED_OP", "the module returns values that are not tensors")
    # An output that is an input, as it is or through ops that only relabel
    # it (a clone, dropout in eval), is handed back as that input.
    by_val = {writer.env[n].name: i for n, i in graph_index.items()}
    by_input = {}
    for o in out_nodes:
        v = writer.env.get(o)
        if o in graph_index:
            by_input[o] = graph_index[o]
        elif isinstance(v, aten.Val) and v.phys is None and v.name in by_val and \
                tuple(aten.meta_value(o).shape) == tuple(aten.meta_value(
                    next(n for n, i in graph_index.items() if i == by_val[v.name])).shape):
            by_input[o] = by_val[v.name]
    computed = [o for o in out_nodes if o not in by_input]
    text, where = writer.finish(computed) if computed else (None, [])
    outputs, k = [], 0
    for o in out_nodes:
        if o in by_input:
            outputs.append(("input", by_input[o]))
        else:
            outputs.append(where[k])
            k += 1
    ranks = [aten.meta_value(o).dim() for o in out_nodes]
    mutations = {}
    for j, spec in enumerate(sig.output_specs):
        kind = spec.kind.name
        if kind == "BUFFER_MUTATION":
            mutations[j] = graph_inputs.index(("param", spec.target))
        elif kind == "USER_INPUT_MUTATION":
            name = spec.target
            node = next(n for n in placeholders if n.name == name)
            mutations[j] = graph_index[node]
        elif kind != "USER_OUTPUT":
            raise TirError(_INVALID, "UNSUPPORTED_OP", "the program has a %s output" % kind)
    exported = ExportedProgram(text, graph_inputs, program.call_spec.out_spec, outputs, mutations, dynamic, specs,
                               ranks)
    exported.fixed = fixed
    exported.arguments = len(inputs)
    exported.constants = dict(program.constants)
    return exported


class Compiled:
    """A compiled module: call it like the module. Each new shape of the
    dynamic dims compiles (once) through the service; bundles are kept per
    shape. When a gradient is required (an input or parameter that requires
    grad, outside no_grad) the bundle still computes the outputs, and their
    backward recomputes the module eagerly and differentiates it; a module
    that also updates tensors in place then runs eagerly, with one warning.
    In-place updates the module makes (a buffer, an input) are written back
    after each run, once."""

    def __init__(self, module, exported, arch, client, timeout, max_candidates=0, progress=None):
        self.module, self.exported, self.arch, self.timeout = module, exported, arch, timeout
        self.max_candidates, self.progress = max_candidates, progress
        self._client = client
        self._bundles = {}
        self._lock = threading.Lock()
        self._warned_grad = False
        forward = module.forward if isinstance(module, torch.nn.Module) else module
        try:
            self._signature = inspect.signature(forward)
        except (TypeError, ValueError):
            self._signature = None

    @property
    def bundle(self):
        """The bundle of the example shape (the first one compiled)."""
        return next(iter(self._bundles.values()), None)

    def bundle_for(self, args):
        """The bundle for these arguments' shapes (None when the module
        computes nothing: every result is an input)."""
        import tir
        if self.exported.text is None:
            return None
        shapes = {}
        key = []
        for g, (kind, which) in enumerate(self.exported.inputs):
            if kind == "input" and self.exported.dynamic.get(which):
                shapes[g] = list(args[which].shape)
                key.append(tuple(args[which].shape))
        key = tuple(key)
        with self._lock:
            b = self._bundles.get(key)
            if b is None:
                b = tir.compile(self.exported.text, arch=self.arch, shapes=shapes or None, client=self._client,
                                timeout=self.timeout, max_candidates=self.max_candidates, progress=self.progress)
                self._bundles[key] = b
        return b

    def __call__(self, *args, **kwargs):
        if self._signature is not None:
            try:
                bound = self._signature.bind(*args, **kwargs)
            except TypeError as e:
                raise TirError(_INVALID, "INVALID_ARGUMENT", "the compiled module is called as the module is: %s" % e)
            bound.apply_defaults()
            args = tuple(bound.arguments.values())
        if len(args) != self.exported.arguments:
            raise TirError(_INVALID, "INVALID_ARGUMENT", "the module was compiled for %d arguments, got %d"
                           % (self.exported.arguments, len(args)))
        for i, t in enumerate(args):
            if i in self.exported.fixed:
                want = self.exported.fixed[i]
                if not (t is want or (want is not None and type(t) == type(want) and t == want)):
                    raise TirError(_INVALID, "INVALID_ARGUMENT", "argument %d was %r when the module was compiled, "
                                   "now %r: compile it again for that value" % (i, want, t))
            elif not isinstance(t, torch.Tensor):
                raise TirError(_INVALID, "INVALID_ARGUMENT", "argument %d is a %s, not a tensor" % (i, type(t).__name__))
        tensors, originals = [], []
        for g, (kind, which) in enumerate(self.exported.inputs):
            # Parameters and buffers are read at each call: an update, or a
            # replaced Parameter or submodule, is what runs.
            if kind == "input":
                t = args[which]
            elif kind == "constant":
                t = self.exported.constants[which]
            else:
                t = _attr(self.module, which)
            originals.append(t)
            t = t.detach()
            shape, dtype, strides = self.exported.input_specs[g]
            if t.dim() == 0:
                t = t.reshape(1)  # a rank-0 tensor is written as shape [1]
            if strides is None and not t.is_contiguous():
                t = t.contiguous()
            tensors.append(t)
        if torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad for t in originals):
            if getattr(self.exported, "mutations", None):
                # A recomputed forward would update the buffers twice: the
                # module runs as it is.
                if not self._warned_grad:
                    self._warned_grad = True
                    warnings.warn("tir: gradients are required by a module that updates tensors in place, so it "
                                  "runs eagerly (torch.compile(backend=\"tir\") keeps gradients through tir)",
                                  RuntimeWarning, stacklevel=2)
                return self.module(*args)
            return _EagerBackward.run(self, args, tensors, originals)
        return self._forward(args, tensors, originals)

    def _forward(self, args, tensors, originals):
        """The module's return value from the bundle (values only)."""
        bundle = self.bundle_for(args)
        results = ()
        if bundle is not None:
            with torch.no_grad():
                results = bundle.run(*tensors)
        results = list(results)
        if getattr(self.exported, "mutations", None):
            self.exported.apply_mutations(results, tensors, originals)
        return self.exported.unflatten(results, originals)


class _EagerBackward(torch.autograd.Function):
    """tir's bundle computes the forward values; the backward recomputes the
    module eagerly from the saved arguments and differentiates that, so the
    outputs carry the gradients eager ones do (at the cost of a second
    forward when backward runs)."""

    @staticmethod
    def forward(ctx, compiled, args, tensors, originals, holder, *wrt):
        import torch.utils._pytree as pytree
        out = compiled._forward(args, tensors, originals)
        flat, spec = pytree.tree_flatten(out)
        holder["spec"], holder["tensor"] = spec, [isinstance(t, torch.Tensor) for t in flat]
        ctx.compiled, ctx.args, ctx.count = compiled, args, len(wrt)
        ctx.wrt_params = holder["params"]
        return tuple(t for t in flat if isinstance(t, torch.Tensor))

    @staticmethod
    def backward(ctx, *grads):
        import torch.utils._pytree as pytree
        with torch.enable_grad():
            args = [a.detach().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a
                    for a in ctx.args]
            out = ctx.compiled.module(*args)
            flat = [t for t in pytree.tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
            wrt = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad] + ctx.wrt_params
            pairs = [(o, g) for o, g in zip(flat, grads) if o.requires_grad and g is not None]
            got = torch.autograd.grad([o for o, _ in pairs], wrt, [g for _, g in pairs], allow_unused=True) \
                if pairs else [None] * len(wrt)
        return (None, None, None, None, None) + tuple(got)

    @staticmethod
    def run(compiled, args, tensors, originals):
        import torch.utils._pytree as pytree
        params = [p for p in (compiled.module.parameters() if isinstance(compiled.module, torch.nn.Module) else ())
                  if p.requires_grad]
        holder = {"params": params}
        wrt = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad] + params
        flat = _EagerBackward.apply(compiled, args, tensors, originals, holder, *wrt)
        it = iter(flat)
        leaves = [next(it) if is_tensor else None for is_tensor in holder["tensor"]]
        return pytree.tree_unflatten(leaves, holder["spec"])


def compile(module, example_inputs, arch=None, server=None, client=None, dynamic=None, token=None, bundle_key=None,
            timeout=1200.0, max_candidates=0, progress=None):
    """`module` compiled through tir: a callable with its call signature.

    `server` ("host:port") or `client` (tir.Client); neither: the user's
    local service (its worker's arch when `arch` is None). The example shape
    is compiled now, so errors (UNSUPPORTED_OP, INVALID_GRAPH, ...) raise
    here. `timeout` bounds each shape's compile, connecting included;
    `progress` is tir.compile's (a callable given tir.Progress; None: drawn
    on stderr when it is a terminal; False: none)."""
    import tir
    exported = export(module, example_inputs, dynamic=dynamic)
    if client is None:
        client = tir.connect(server, token=token, bundle_key=bundle_key, timeout=timeout)
    arch = arch or getattr(client, "default_arch", None)
    if not arch:
        raise TirError(_INVALID, "INVALID_ARGUMENT", "arch is needed with a server (e.g. arch=\"sm_90a\" or \"host\")")
    compiled = Compiled(module, exported, arch, client, timeout, max_candidates, progress)
    compiled.bundle_for(tuple(example_inputs))
    return compiled
