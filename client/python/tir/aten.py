"""PyTorch 2 graphs of ATen ops (torch.export, make_fx, AOTAutograd) as tir graphs.

The torch.compile backend and tir.fx's torch.export path write tir from the
same place: an FX graph whose nodes call ATen operators and carry their
result in `node.meta["val"]` (a FakeTensor, its sizes ints or SymInts).
Nothing runs: shapes, dtypes and the symbolic sizes come from the metadata.

    writer = Writer("region")
    args = [writer.input(n) for n in region_inputs]
    for n in region_nodes:
        writer.node(n)
    text = writer.finish(region_outputs)

A dim whose size is a symbol (Dynamo's s0, torch.export's Dim) is `?` in the
graph; an op that needs its size at run time (reshape, broadcast, a filled
tensor) takes it from a `dim` of a graph input of the same symbol, so every
symbol a region uses must be some input's dim: a size that is a product of
symbols (a flatten of a dynamic dim) is refused, and the node stays eager.

`supported(node)` tells whether a node is one the writer takes (the target,
the dtypes); the writer may still refuse a node (`Refused`, naming it) for a
reason only writing it shows, and the caller then leaves that node out.
"""

import math
import operator

import grpc
import torch

from tir.client import TirError

_DTYPE = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16", torch.float64: "f64",
          torch.int32: "si32", torch.int64: "si64", torch.int16: "si16", torch.int8: "si8", torch.uint8: "ui8",
          torch.bool: "i1"}
_FLOAT = ("f32", "f16", "bf16", "f64")
_HALF = ("f16", "bf16")
# The dtype torch computes a half-precision reduction or normalization in.
_WIDER = {"f16": "f32", "bf16": "f32"}


def describe(node):
    """"node NAME (OP)", as refusals name a node."""
    return "node %s (%s)" % (node.name, _target_name(node))


class Refused(Exception):
    """The writer cannot write `node` (the caller leaves it eager)."""

    def __init__(self, node, why):
        super().__init__("node %s (%s): %s" % (node.name, _target_name(node), why))
        self.node, self.why = node, why


def _target_name(node):
    t = node.target
    if isinstance(t, str):
        return t
    name = getattr(t, "name", None)
    if callable(name):
        try:
            return name()
        except Exception:  # noqa: BLE001 - a name for a message only
            pass
    return getattr(t, "__name__", repr(t))


def meta_value(node):
    """The node's result as recorded in its metadata (a FakeTensor, a SymInt,
    a tuple of them), or None."""
    if not isinstance(node, torch.fx.Node):
        return node
    v = node.meta.get("val")
    return node.meta.get("example_value") if v is None else v


def symbol(d):
    """None for a static size, else the symbolic size's expression (a sympy
    expression: equal sizes compare equal)."""
    if isinstance(d, int):
        return None
    expr = d.node.expr
    if getattr(expr, "is_number", False):
        return None
    return expr


def static_size(d):
    return int(d) if isinstance(d, int) else int(d.node.expr)


def dims(t):
    """(shape with None for symbolic sizes, the symbols) of a FakeTensor."""
    shape, syms = [], []
    for d in t.shape:
        s = symbol(d)
        shape.append(None if s is not None else static_size(d))
        syms.append(s)
    return shape, syms


def _size(shape, syms, j):
    """Dim j's size as a sympy expression (an Integer when static)."""
    import sympy
    return syms[j] if syms[j] is not None else sympy.Integer(shape[j])


def merge_groups(shape, syms, tshape, tsyms):
    """How the dims of (shape, syms) merge, in order, into the target's dims:
    a list of lists of source dims, one per target dim; None when the
    target is no such merge."""
    import sympy
    groups, j, n = [], 0, len(shape)
    for i in range(len(tshape)):
        target = _size(tshape, tsyms, i)
        group, prod = [], sympy.Integer(1)
        while j < n and (not group or sympy.simplify(prod - target) != 0):
            group.append(j)
            prod = prod * _size(shape, syms, j)
            j += 1
        if not group or sympy.simplify(prod - target) != 0:
            return None
        groups.append(group)
    # trailing unit dims of the source join the last group
    while j < n and shape[j] == 1:
        groups[-1].append(j)
        j += 1
    return groups if j == n else None


def tir_dtype(dtype):
    return _DTYPE.get(dtype)


def _type(shape, dtype):
    d = "x".join("?" if s is None else str(s) for s in shape)
    return "tensor<%s%s%s>" % (d, "x" if d else "", dtype)


def _literal(v, dtype):
    if dtype in _FLOAT:
        v = float(v)
        if math.isnan(v):
            return "0x7FC00000" if dtype == "f32" else "0x7FF8000000000000" if dtype == "f64" else \
                "0x7FC0" if dtype == "bf16" else "0x7E00"
        if math.isinf(v):
            bits = {"f32": ("0x7F800000", "0xFF800000"), "f64": ("0x7FF0000000000000", "0xFFF0000000000000"),
                    "bf16": ("0x7F80", "0xFF80"), "f16": ("0x7C00", "0xFC00")}[dtype]
            return bits[0] if v > 0 else bits[1]
        return "%.17e" % v
    if dtype == "i1":
        return "true" if v else "false"
    return str(int(v))


class Val:
    """A tensor value of the graph being written: its SSA name, shape (None:
    dynamic), the symbol of each dynamic dim, tir dtype. A folded value
    (`phys`, `groups`) is a view of `phys` whose dims merge phys's dims
    (`groups`, in order): what a reshape to a product of symbolic sizes
    gives, which tir cannot size. Ops that keep the merged dims intact run
    on `phys`; a folded result is handed out as `phys` and viewed at run
    time."""

    __slots__ = ("name", "shape", "syms", "dtype", "phys", "groups")

    def __init__(self, name, shape, syms, dtype, phys=None, groups=None):
        self.name, self.shape, self.syms, self.dtype = name, list(shape), list(syms), dtype
        self.phys, self.groups = phys, groups

    @property
    def rank(self):
        return len(self.shape)

    @property
    def type(self):
        return _type(self.shape, self.dtype)

    @staticmethod
    def folded(phys, shape, syms, groups):
        return Val(None, shape, syms, phys.dtype, phys, groups)


class _Pieces:
    """The results of split / split_with_sizes / unbind: getitem picks one."""

    def __init__(self, v, dim, starts, sizes, drop):
        self.v, self.dim, self.starts, self.sizes, self.drop = v, dim, starts, sizes, drop


def _schema_args(node):
    """The node's arguments by schema name, defaults filled in."""
    schema = getattr(node.target, "_schema", None)
    if schema is None:
        return None
    out = {}
    for i, a in enumerate(schema.arguments):
        if i < len(node.args):
            out[a.name] = node.args[i]
        elif a.name in node.kwargs:
            out[a.name] = node.kwargs[a.name]
        elif a.has_default_value():
            out[a.name] = a.default_value
        else:
            out[a.name] = None
    return out


def _packet(node):
    """'add.Tensor' for torch.ops.aten.add.Tensor; None for other targets."""
    t = node.target
    if isinstance(t, torch._ops.OpOverload) and t.namespace in ("aten", "prims"):
        return "%s.%s" % (t._schema.name.split("::")[1], t._overloadname)
    return None


_UNARY = {"neg": "neg", "exp": "exp", "log": "log", "sqrt": "sqrt", "rsqrt": "rsqrt", "abs": "abs", "erf": "erf",
          "sin": "sin", "cos": "cos", "tan": "tan", "reciprocal": "reciprocal", "floor": "floor", "ceil": "ceil",
          "relu": "relu_fwd", "sigmoid": "sigmoid_fwd", "tanh": "tanh_fwd"}
_BINARY = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "maximum": "max", "minimum": "min",
           "pow": "pow"}
_CMP = {"eq": ("oeq", "eq"), "ne": ("une", "neq"), "lt": ("olt", "lt"), "le": ("ole", "le"), "gt": ("ogt", "gt"),
        "ge": ("oge", "ge")}
_VIEWS = {"view", "_unsafe_view", "reshape", "permute", "t", "transpose", "expand", "unsqueeze", "squeeze",
          "slice", "select", "alias", "detach", "clone", "lift_fresh_copy", "split", "split_with_sizes", "unbind",
          "_to_copy", "convert_element_type", "contiguous"}
# Targets written (by name before the overload), for supported().
_WRITTEN = set(_UNARY) | set(_BINARY) | set(_CMP) | _VIEWS | {
    "rsub", "gelu", "silu", "softplus", "clamp", "clamp_min", "clamp_max", "where", "masked_fill", "logical_not",
    "logical_and", "logical_or", "bitwise_not", "bitwise_and", "bitwise_or", "mm", "addmm", "bmm", "matmul",
    "linear", "_softmax", "_log_softmax", "softmax", "log_softmax", "native_layer_norm",
    "_native_batch_norm_legit_no_training", "sum", "mean", "amax", "amin", "any", "var", "std", "cat",
    "full", "full_like", "zeros_like", "ones_like", "scalar_tensor", "zeros", "ones", "arange", "floor_divide",
    "embedding"}
# Ops that only move or relabel elements: a region of these alone computes
# nothing worth a kernel.
MOVES = _VIEWS


def op_name(node):
    """The ATen op's name without its overload ('add' for aten.add.Tensor),
    or operator.getitem's 'getitem'; None for anything else."""
    if node.op != "call_function":
        return None
    if node.target is operator.getitem:
        return "getitem"
    p = _packet(node)
    return p.split(".")[0] if p else None


def _zero_sized(node):
    """Whether the node's result (the first of several: batch norm's other
    two are empty in inference) has a dim of size 0."""
    out = meta_value(node)
    if isinstance(out, (tuple, list)):
        out = out[0] if out else None
    return isinstance(out, torch.Tensor) and any(isinstance(d, int) and d == 0 for d in out.shape)


def supported(node):
    """Whether the writer takes `node`: an ATen op it writes, tensors of
    dtypes tir has in and out, numbers where numbers go."""
    return unsupported_reason(node) is None


def unsupported_reason(node):
    """Why the writer does not take `node` (None: it does)."""
    name = op_name(node)
    if name is None or (name not in _WRITTEN and name != "getitem"):
        return "%s is not an op tir writes" % _target_name(node)
    if name != "getitem" and _zero_sized(node):
        return "a zero-sized tensor"
    out = meta_value(node)
    outs = out if isinstance(out, (tuple, list)) else [out]
    for o in outs:
        if o is None:
            continue
        if not isinstance(o, torch.Tensor):
            return "its result is a %s, not a tensor" % type(o).__name__
        if tir_dtype(o.dtype) is None:
            return "its result's dtype %s is not one tir has" % o.dtype

    for a in node.all_input_nodes:
        v = meta_value(a)
        if isinstance(v, torch.Tensor):
            if tir_dtype(v.dtype) is None:
                return "its input %s has dtype %s, not one tir has" % (a.name, v.dtype)
        elif isinstance(v, (tuple, list)) and name == "getitem":
            continue
        elif not (isinstance(v, (torch.SymInt, torch.SymFloat, int, float, bool))):
            return "its input %s is a %s" % (a.name, type(v).__name__)
    if name == "getitem":
        src = node.args[0]
        if not (isinstance(src, torch.fx.Node) and op_name(src) in ("split", "split_with_sizes", "unbind",
                                                                      "native_layer_norm",
                                                                      "_native_batch_norm_legit_no_training")):
            return "an item of %s's results" % (_target_name(src) if isinstance(src, torch.fx.Node) else src)
    return None


class Writer:
    """Writes one tir graph. `input(node)` declares the graph's next input;
    `node(n)` writes a node whose tensor operands are inputs or nodes
    written before; `finish(outputs)` returns the text."""

    def __init__(self, name, sizes=None):
        self.name = "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "graph"
        self.sizes = sizes or {}  # symbol -> a size to write it as (a static graph for one shape)
        self.lines, self.args, self.env = [], [], {}
        self.count = 0
        self.symbols = {}   # symbol -> (input Val, dim)
        self.dim_values = {}  # (value name, dim) -> index SSA name
        self.fold = None  # the folded operands' Val while a pointwise node runs on their phys
        self.scalars = []  # indices of the graph inputs that are run-time scalars

    # -- values -----------------------------------------------------------------

    def dims(self, t):
        shape, syms = dims(t)
        for j, s in enumerate(syms):
            if s is not None and s in self.sizes:
                shape[j], syms[j] = self.sizes[s], None
        return shape, syms

    def fresh(self, hint="v"):
        self.count += 1
        return "%%%s%d" % (hint, self.count)

    def emit(self, text, shape, syms, dtype, hint="v"):
        name = self.fresh(hint)
        self.lines.append("  %s = %s" % (name, text.replace("$T", _type(shape, dtype))))
        return Val(name, shape, syms, dtype)

    def input(self, node, strides=None):
        """The graph's next input: `node`'s tensor (strides: a tir.stride
        list for a laid-out input, None for row-major)."""
        t = meta_value(node)
        if isinstance(t, (torch.SymInt, int)) and not isinstance(t, bool):
            self.env[node] = t  # a size: read through the shapes of the values that use it
            return None
        if isinstance(t, (torch.SymFloat, float)):
            # A number computed from symbols (a softmax scale from a symbolic
            # head size): a run-time scalar input, one f32 element, that the
            # region is handed at each call (Region.scalar_args).
            v = Val("%%in%d" % len(self.args), [1], [None], "f32")
            self.args.append((v, None))
            self.scalars.append(len(self.args) - 1)
            self.env[node] = v
            return v
        if not isinstance(t, torch.Tensor):
            raise Refused(node, "a region input that is not a tensor")
        dtype = tir_dtype(t.dtype)
        if dtype is None:
            raise Refused(node, "dtype %s" % t.dtype)
        shape, syms = self.dims(t)
        if not shape:
            shape, syms = [1], [None]
        v = Val("%%in%d" % len(self.args), shape, syms, dtype)
        self.args.append((v, strides))
        for j, s in enumerate(syms):
            if s is not None and s not in self.symbols:
                self.symbols[s] = (v, j)
        self.env[node] = v
        return v

    def dim_value(self, sym, node):
        """An index SSA value holding the size of symbol `sym`."""
        if sym not in self.symbols:
            raise Refused(node, "its size %s is no input's dim (a product of dynamic sizes is not written)" % sym)
        v, j = self.symbols[sym]
        key = (v.name, j)
        if key not in self.dim_values:
            name = self.fresh("d")
            self.lines.append("  %s = dim %s dimension = %d : %s" % (name, v.name, j, v.type))
            self.dim_values[key] = name
        return self.dim_values[key]

    def dynamic_dims(self, syms, node):
        names = [self.dim_value(s, node) for s in syms if s is not None]
        return " dynamic_dims(%s)" % ", ".join(names) if names else ""

    def value(self, a, node, folded=False):
        """The Val of an operand node; a folded one is unfolded (a reshape
        of its phys, when tir can size it) unless `folded`, and while a
        pointwise node runs on phys (self.fold) an operand is brought to
        phys's rank."""
        if not isinstance(a, torch.fx.Node) or a not in self.env or not isinstance(self.env[a], Val):
            raise Refused(node, "reads %s, which is not a tensor of this graph" % (a,))
        v = self.env[a]
        if self.fold is not None:
            return self.to_phys(v, node)
        if v.phys is not None and not folded:
            return self.unfold(v, node)
        return v

    def unfold(self, v, node):
        if any(s is not None and s not in self.symbols for s in v.syms):
            raise Refused(node, "reads a view whose sizes are products of dynamic sizes")
        return self.reshape(v.phys, v.shape, v.syms, node)

    def to_phys(self, v, node):
        """An operand of a pointwise node over the fold's phys: the folded
        operand's phys, or a tensor broadcast along the merged dims (size 1
        there) reshaped to phys's rank."""
        f = self.fold
        if v.phys is not None:
            if v.groups != f.groups or v.phys.shape != f.phys.shape or v.phys.syms != f.phys.syms:
                raise Refused(node, "two views that merge dims differently")
            return v.phys
        v = self.to_rank(v, len(f.groups), node)
        if v.rank != len(f.groups):
            raise Refused(node, "an operand of rank %d with a view of rank %d" % (v.rank, len(f.groups)))
        shape, syms = [], []
        for d, g in enumerate(f.groups):
            if v.shape[d] == 1:
                shape += [1] * len(g)
                syms += [None] * len(g)
            elif len(g) == 1:
                shape.append(v.shape[d])
                syms.append(v.syms[d])
            else:
                raise Refused(node, "an operand that varies along dims a view merges")
        return self.reshape(v, shape, syms, node)

    def result(self, node, index=None):
        """(shape, symbols, tir dtype) of the node's result (rank 0 written as
        [1]); while a pointwise node runs on a fold's phys, phys's shape."""
        t = meta_value(node)
        if index is not None:
            t = t[index]
        dtype = tir_dtype(t.dtype)
        if dtype is None:
            raise Refused(node, "dtype %s" % t.dtype)
        if self.fold is not None:
            return list(self.fold.phys.shape), list(self.fold.phys.syms), dtype
        shape, syms = self.dims(t)
        return (shape, syms, dtype) if shape else ([1], [None], dtype)

    def number(self, a, node):
        if isinstance(a, torch.fx.Node):
            v = meta_value(a)
            raise Refused(node, "a number computed at run time (%s)" % (v,))
        if isinstance(a, (torch.SymInt, torch.SymFloat)):
            raise Refused(node, "a symbolic number")
        return a

    def const(self, value, rank, dtype):
        return self.emit("constant dense<%s> : $T" % _literal(value, dtype), [1] * rank, [None] * rank, dtype, "c")

    def convert(self, v, dtype):
        if v.dtype == dtype:
            return v
        return self.emit("convert %s : %s -> $T" % (v.name, v.type), v.shape, v.syms, dtype)

    def reshape(self, v, shape, syms, node):
        if shape == v.shape and syms == v.syms:
            return v
        return self.emit("reshape %s%s : %s -> $T" % (v.name, self.dynamic_dims(syms, node), v.type), shape, syms,
                         v.dtype)

    def to_rank(self, v, rank, node):
        if v.rank >= rank:
            return v
        pad = rank - v.rank
        return self.reshape(v, [1] * pad + v.shape, [None] * pad + v.syms, node)

    def broadcast(self, v, shape, syms, node):
        v = self.to_rank(v, len(shape), node)
        if v.shape == shape and v.syms == syms:
            return v
        return self.emit("broadcast %s%s : %s -> $T" % (v.name, self.dynamic_dims(syms, node), v.type), shape, syms,
                         v.dtype)

    def operand(self, a, rank, dtype, node):
        """A pointwise operand (a tensor or a number) as `dtype` at `rank`."""
        if isinstance(a, torch.fx.Node):
            return self.to_rank(self.convert(self.value(a, node), dtype), rank, node)
        return self.const(self.number(a, node), rank, dtype)

    def binary(self, op, a, b, node, compute=None, shape=None, syms=None, dtype=None):
        rshape, rsyms, rdtype = self.result(node)
        shape, syms, dtype = shape or rshape, syms or rsyms, dtype or rdtype
        compute = compute or dtype
        x = self.operand(a, len(shape), compute, node)
        y = self.operand(b, len(shape), compute, node)
        types = x.type if x.shape == y.shape == shape else "(%s, %s) -> %s" % (x.type, y.type, _type(shape, compute))
        r = self.emit("%s %s, %s : %s" % (op, x.name, y.name, types), shape, syms, compute)
        return self.convert(r, dtype)

    def unary(self, op, v, attrs=""):
        return self.emit("%s%s %s : $T" % (op, attrs, v.name), v.shape, v.syms, v.dtype)

    def reduce(self, v, rdims, mode):
        rdims = sorted(set(d % v.rank for d in rdims))
        shape = [1 if i in rdims else d for i, d in enumerate(v.shape)]
        syms = [None if i in rdims else s for i, s in enumerate(v.syms)]
        return self.emit("reduce(%s)<dimensions = [%s], reduction_mode = <%s>> : %s -> $T"
                         % (v.name, ", ".join(map(str, rdims)), mode, v.type), shape, syms, v.dtype)

    def keep_or_drop(self, r, rdims, keepdim, node):
        if keepdim:
            return r
        shape, syms, _ = self.result(node)
        return self.reshape(r, shape, syms, node)

    def compare(self, pred, a, b, node):
        """cmp of two operands broadcast to the result shape, in their
        promoted dtype."""
        shape, syms, _ = self.result(node)
        dt = [meta_value(x).dtype for x in (a, b) if isinstance(x, torch.fx.Node)]
        promoted = dt[0] if len(dt) == 1 else torch.promote_types(dt[0], dt[1])
        if promoted == torch.bool:
            promoted = torch.int32
        if not promoted.is_floating_point and any(isinstance(x, float) for x in (a, b)):
            promoted = torch.float32
        compute = tir_dtype(promoted)
        x = self.broadcast(self.operand(a, len(shape), compute, node), shape, syms, node)
        y = self.broadcast(self.operand(b, len(shape), compute, node), shape, syms, node)
        p = _CMP[pred][0 if compute in _FLOAT else 1]
        return self.emit("cmp %s %s %s : %s" % (x.name, p, y.name, x.type), shape, syms, "i1")

    def select(self, cond, a, b, node):
        shape, syms, dtype = self.result(node)
        c = self.broadcast(self.convert(cond, "i1"), shape, syms, node)
        x = self.broadcast(self.operand(a, len(shape), dtype, node), shape, syms, node)
        y = self.broadcast(self.operand(b, len(shape), dtype, node), shape, syms, node)
        return self.emit("binary_select %s, %s, %s : $T" % (c.name, x.name, y.name), shape, syms, dtype)

    def matmul(self, a, b, node, acc_dtype=None):
        if a.rank < 2 or b.rank < 2:
            raise Refused(node, "a matrix product of a vector")
        rank = max(a.rank, b.rank)
        a, b = self.to_rank(a, rank, node), self.to_rank(b, rank, node)
        shape, syms, dtype = self.result(node)
        acc = acc_dtype or ("f32" if a.dtype in ("f16", "bf16", "f32") else a.dtype)
        if a.dtype != b.dtype:
            raise Refused(node, "a matrix product of %s and %s" % (a.dtype, b.dtype))
        return self.emit("matmul(%s, %s) : (%s, %s) -> $T" % (a.name, b.name, a.type, b.type), shape, syms, acc)

    def transpose(self, v, perm):
        if list(perm) == list(range(v.rank)):
            return v
        return self.emit("transpose %s permutation = [%s] : %s -> $T" % (v.name, ", ".join(map(str, perm)), v.type),
                         [v.shape[p] for p in perm], [v.syms[p] for p in perm], v.dtype)

    def slice(self, v, dim, start, stop, step, node):
        """A slice along static dim `dim`; dims of run-time extent are kept
        whole (tir's start 0, limit 0, stride 1)."""
        if v.shape[dim] is None:
            raise Refused(node, "a slice along a dynamic dim")
        extent = v.shape[dim]
        start, stop, step = slice(start, stop, step).indices(extent)
        if step <= 0:
            raise Refused(node, "a slice with step %d" % step)
        stop = max(start, stop)
        size = (stop - start + step - 1) // step
        if size == 0:
            raise Refused(node, "an empty slice")
        if (start, stop, step) == (0, extent, 1):
            return v
        starts, limits, strides = [0] * v.rank, [0 if d is None else d for d in v.shape], [1] * v.rank
        starts[dim], limits[dim], strides[dim] = start, stop, step
        shape = list(v.shape)
        shape[dim] = size
        return self.emit("slice %s starts = [%s] limits = [%s] strides = [%s] : %s -> $T"
                         % (v.name, ", ".join(map(str, starts)), ", ".join(map(str, limits)),
                            ", ".join(map(str, strides)), v.type), shape, list(v.syms), v.dtype)

    def filled(self, value, node):
        """A tensor of the node's result type holding `value` everywhere."""
        shape, syms, dtype = self.result(node)
        if all(s is None for s in syms):
            return self.emit("constant dense<%s> : $T" % _literal(value, dtype), shape, syms, dtype, "c")
        c = self.const(value, len(shape), dtype)
        return self.broadcast(c, shape, syms, node)

    # -- nodes --------------------------------------------------------------------

    # Nodes that compute element by element: with a folded operand they run
    # on its phys.
    _POINTWISE = set(_UNARY) | set(_BINARY) | set(_CMP) | {
        "rsub", "gelu", "silu", "softplus", "clamp", "clamp_min", "clamp_max", "where", "masked_fill",
        "logical_not", "logical_and", "logical_or", "bitwise_not", "bitwise_and", "bitwise_or", "floor_divide",
        "alias", "detach", "clone", "lift_fresh_copy", "contiguous", "_to_copy", "convert_element_type",
        "full_like", "zeros_like", "ones_like"}

    def node(self, n):
        """Writes `n`; its value is then what later nodes read."""
        name = op_name(n)
        if name is not None and name != "getitem" and _zero_sized(n):
            raise Refused(n, "its result has a zero-size dim")
        if name is None or not supported(n):
            raise Refused(n, "not an op tir writes")
        folds = [self.env[a] for a in n.all_input_nodes if isinstance(self.env.get(a), Val) and self.env[a].phys is not None]
        if folds and name in self._POINTWISE:
            self.fold = folds[0]
            try:
                r = self.dispatch(n, name)
            finally:
                self.fold = None
            shape, syms = self.dims(meta_value(n))
            r = Val.folded(r, shape, syms, folds[0].groups)
        else:
            r = self.dispatch(n, name)
        self.env[n] = r
        return r

    def dispatch(self, n, name):
        method = getattr(self, "op_" + name.lstrip("_"), None)
        if name in _UNARY:
            return self._unary(n, _UNARY[name])
        if name in _BINARY:
            return self._binary(n, name)
        if name in _CMP:
            a = _schema_args(n)
            return self.compare(name, a["self"], a["other"], n)
        if method is not None:
            return method(n, _schema_args(n) if name != "getitem" else None)
        raise Refused(n, "not an op tir writes")

    def _unary(self, n, op):
        a = _schema_args(n)
        _, _, dtype = self.result(n)
        compute = _WIDER.get(dtype, dtype) if op not in ("neg", "abs", "relu_fwd", "floor", "ceil") else dtype
        r = self.unary(op, self.convert(self.value(a["self"], n), compute))
        return self.convert(r, dtype)

    def _binary(self, n, name):
        a = _schema_args(n)
        x, y = a["self"], a.get("other", a.get("exponent"))
        if name == "pow":
            if "exponent" in a and "self" in a and not isinstance(a["self"], torch.fx.Node):
                return self.binary("pow", a["self"], a["exponent"], n)
            y = a["exponent"]
            if not isinstance(y, torch.fx.Node):
                y = self.number(y, n)
                if y == 2:
                    return self.binary("mul", x, x, n)
                if y == 1:
                    shape, syms, dtype = self.result(n)
                    return self.convert(self.value(x, n), dtype)
                if y == 0.5:
                    _, _, dtype = self.result(n)
                    return self.convert(self.unary("sqrt", self.convert(self.value(x, n), _WIDER.get(dtype, dtype))),
                                        dtype)
            return self.binary("pow", x, y, n)
        alpha = a.get("alpha", 1)
        if name in ("add", "sub") and alpha not in (None, 1):
            alpha = self.number(alpha, n)
            if isinstance(y, torch.fx.Node):
                y = self._scaled(y, alpha, n)
            else:
                y = self.number(y, n) * alpha
        if name == "div" and a.get("rounding_mode") is not None:
            return self._div_rounded(x, y, a["rounding_mode"], n)
        _, _, dtype = self.result(n)
        compute = dtype if dtype in _FLOAT or name != "div" else "f32"
        return self.binary(_BINARY[name], x, y, n, compute=compute)

    def _scaled(self, node_in, alpha, n):
        shape, syms, dtype = self.result(n)
        v = self.convert(self.value(node_in, n), dtype)
        c = self.const(alpha, v.rank, dtype)
        return self.emit("mul %s, %s : (%s, %s) -> $T" % (v.name, c.name, v.type, c.type), v.shape, v.syms, dtype)

    def _div_rounded(self, x, y, mode, n):
        shape, syms, dtype = self.result(n)
        if mode not in ("floor", "trunc"):
            raise Refused(n, "div rounding_mode=%r" % mode)
        if dtype in _FLOAT:
            q = self.binary("div", x, y, n)
            if mode == "floor":
                return self.unary("floor", q)
            neg = self.emit("cmp %s olt %s : %s" % (q.name, self.filled(0, n).name, q.type), shape, syms, "i1")
            return self.emit("binary_select %s, %s, %s : $T" % (neg.name, self.unary("ceil", q).name,
                                                                 self.unary("floor", q).name), shape, syms, dtype)
        # Integers: tir's div truncates; floor moves a quotient with a
        # remainder of the other sign down by one.
        q = self.binary("div", x, y, n)
        if mode == "trunc":
            return q
        a = self.broadcast(self.operand(x, len(shape), dtype, n), shape, syms, n)
        b = self.broadcast(self.operand(y, len(shape), dtype, n), shape, syms, n)
        back = self.emit("mul %s, %s : $T" % (q.name, b.name), shape, syms, dtype)
        inexact = self.emit("cmp %s neq %s : %s" % (back.name, a.name, a.type), shape, syms, "i1")
        zero = self.filled(0, n)
        an = self.emit("cmp %s lt %s : %s" % (a.name, zero.name, a.type), shape, syms, "i1")
        bn = self.emit("cmp %s lt %s : %s" % (b.name, zero.name, b.type), shape, syms, "i1")
        an_i = self.convert(an, "si32")
        bn_i = self.convert(bn, "si32")
        signs = self.emit("cmp %s neq %s : %s" % (an_i.name, bn_i.name, an_i.type), shape, syms, "i1")
        down = self.emit("and %s, %s : $T" % (inexact.name, signs.name), shape, syms, "i1")
        one = self.filled(1, n)
        q1 = self.emit("sub %s, %s : $T" % (q.name, one.name), shape, syms, dtype)
        return self.emit("binary_select %s, %s, %s : $T" % (down.name, q1.name, q.name), shape, syms, dtype)

    def op_floor_divide(self, n, a):
        return self._div_rounded(a["self"], a["other"], "floor", n)

    def op_rsub(self, n, a):
        x, y, alpha = a["self"], a["other"], a.get("alpha", 1)
        if alpha not in (None, 1):
            x = self._scaled(x, self.number(alpha, n), n) if isinstance(x, torch.fx.Node) else x * alpha
        return self.binary("sub", y, x, n)

    def op_gelu(self, n, a):
        approximate = a.get("approximate") or "none"
        if approximate not in ("none", "tanh"):
            raise Refused(n, "gelu approximate=%r" % approximate)
        _, _, dtype = self.result(n)
        v = self.convert(self.value(a["self"], n), _WIDER.get(dtype, dtype))
        return self.convert(self.unary("gelu_fwd" if approximate == "none" else "gelu_approx_tanh_fwd", v), dtype)

    def op_silu(self, n, a):
        _, _, dtype = self.result(n)
        v = self.convert(self.value(a["self"], n), _WIDER.get(dtype, dtype))
        return self.convert(self.unary("swish_fwd", v, "<beta = 1.0 : f32>"), dtype)

    def op_softplus(self, n, a):
        if a.get("threshold", 20) != 20:
            raise Refused(n, "softplus with threshold %r" % a.get("threshold"))
        _, _, dtype = self.result(n)
        v = self.convert(self.value(a["self"], n), _WIDER.get(dtype, dtype))
        return self.convert(self.unary("softplus_fwd", v, "<beta = %r : f32>" % float(self.number(a["beta"], n))),
                            dtype)

    def op_clamp(self, n, a, lo=None, hi=None):
        shape, syms, dtype = self.result(n)
        lo = a.get("min") if lo is None else lo
        hi = a.get("max") if hi is None else hi
        if isinstance(lo, torch.fx.Node) or isinstance(hi, torch.fx.Node):
            raise Refused(n, "clamp by a tensor")
        v = self.convert(self.value(a["self"], n), dtype)
        if hi is not None:
            c = self.const(self.number(hi, n), len(shape), dtype)
            v = self.emit("min %s, %s : (%s, %s) -> $T" % (v.name, c.name, v.type, c.type), shape, syms, dtype)
        if lo is not None:
            c = self.const(self.number(lo, n), len(shape), dtype)
            v = self.emit("max %s, %s : (%s, %s) -> $T" % (v.name, c.name, v.type, c.type), shape, syms, dtype)
        return v

    def op_clamp_min(self, n, a):
        return self.op_clamp(n, {"self": a["self"], "min": a["min"], "max": None})

    def op_clamp_max(self, n, a):
        return self.op_clamp(n, {"self": a["self"], "min": None, "max": a["max"]})

    def op_where(self, n, a):
        return self.select(self.value(a["condition"], n), a["self"], a["other"], n)

    def op_masked_fill(self, n, a):
        return self.select(self.value(a["mask"], n), a["value"], a["self"], n)

    def op_logical_not(self, n, a):
        return self.unary("not", self.convert(self.value(a["self"], n), "i1"))

    op_bitwise_not = op_logical_not

    def logical2(self, n, a, op):
        shape, syms, _ = self.result(n)
        x = self.broadcast(self.convert(self.value(a["self"], n), "i1"), shape, syms, n)
        y = self.broadcast(self.convert(self.value(a["other"], n), "i1"), shape, syms, n)
        return self.emit("%s %s, %s : $T" % (op, x.name, y.name), shape, syms, "i1")

    def op_logical_and(self, n, a):
        return self.logical2(n, a, "and")

    def op_logical_or(self, n, a):
        return self.logical2(n, a, "or")

    def op_bitwise_and(self, n, a):
        if meta_value(n).dtype != torch.bool:
            raise Refused(n, "bitwise and of integers")
        return self.logical2(n, a, "and")

    def op_bitwise_or(self, n, a):
        if meta_value(n).dtype != torch.bool:
            raise Refused(n, "bitwise or of integers")
        return self.logical2(n, a, "or")

    # matrix products

    def folded_matmul(self, a, b, n):
        """A matrix product whose A is folded (a flatten of leading dims, as
        torch lowers a Linear over [B, T, C]): the product of A's phys with
        B (folded with the same batch merge, or broadcast over it), itself
        folded. None when A is not folded."""
        if a.phys is None:
            return None
        ga = a.groups
        if len(ga[-1]) != 1 or (a.rank == 3 and len(ga[-2]) != 1):
            raise Refused(n, "a matrix product over a merged K or M dim")
        if b.phys is not None:
            if b.rank != a.rank or b.groups[:-2] != ga[:-2] or len(b.groups[-1]) != 1 or len(b.groups[-2]) != 1:
                raise Refused(n, "a matrix product of two views that merge dims differently")
            bp = b.phys
        else:
            if b.rank == 3 and b.shape[0] != 1:
                raise Refused(n, "a batched product of a view and a tensor")
            bp = self.to_rank(b, a.phys.rank, n)
        shape, syms = self.dims(meta_value(n))
        ap = a.phys
        pshape = ap.shape[:-1] + [bp.shape[-1]]
        psyms = ap.syms[:-1] + [bp.syms[-1]]
        acc = "f32" if ap.dtype in ("f16", "bf16", "f32") else ap.dtype
        if ap.dtype != bp.dtype:
            raise Refused(n, "a matrix product of %s and %s" % (ap.dtype, bp.dtype))
        r = self.emit("matmul(%s, %s) : (%s, %s) -> $T" % (ap.name, bp.name, ap.type, bp.type), pshape, psyms, acc)
        groups = ga[:-1] + [[ap.rank - 1]]
        return Val.folded(r, shape, syms, groups)

    def fold_result(self, r, dtype):
        """A folded value converted to `dtype` (on its phys)."""
        if r.phys is None:
            return self.convert(r, dtype)
        return Val.folded(self.convert(r.phys, dtype), r.shape, r.syms, r.groups)

    def op_mm(self, n, a):
        _, _, dtype = self.result(n)
        x = self.value(a["self"], n, folded=True)
        f = self.folded_matmul(x, self.value(a["mat2"], n, folded=x.phys is not None), n)
        if f is not None:
            return self.fold_result(f, dtype)
        return self.convert(self.matmul(x, self.value(a["mat2"], n), n), dtype)

    op_bmm = op_mm

    def op_matmul(self, n, a):
        _, _, dtype = self.result(n)
        return self.convert(self.matmul(self.value(a["self"], n), self.value(a["other"], n), n), dtype)

    def op_addmm(self, n, a):
        _, _, dtype = self.result(n)
        x = self.value(a["mat1"], n, folded=True)
        f = self.folded_matmul(x, self.value(a["mat2"], n), n)
        m = f.phys if f is not None else self.matmul(x, self.value(a["mat2"], n), n)
        shape, syms = list(m.shape), list(m.syms)
        alpha, beta = self.number(a.get("alpha", 1), n), self.number(a.get("beta", 1), n)
        if alpha != 1:
            c = self.const(alpha, m.rank, m.dtype)
            m = self.emit("mul %s, %s : (%s, %s) -> $T" % (m.name, c.name, m.type, c.type), m.shape, m.syms, m.dtype)
        if beta != 0:
            bias = self.convert(self.value(a["self"], n), m.dtype)
            if f is not None and bias.rank == 2 and bias.shape[0] != 1:
                raise Refused(n, "a bias per row of a view")
            bias = self.to_rank(bias, m.rank, n)
            if beta != 1:
                c = self.const(beta, bias.rank, bias.dtype)
                bias = self.emit("mul %s, %s : (%s, %s) -> $T" % (bias.name, c.name, bias.type, c.type), bias.shape,
                                 bias.syms, bias.dtype)
            m = self.emit("add %s, %s : (%s, %s) -> $T" % (m.name, bias.name, m.type, bias.type), shape, syms, m.dtype)
        if f is not None:
            return Val.folded(self.convert(m, dtype), f.shape, f.syms, f.groups)
        return self.convert(m, dtype)

    def op_linear(self, n, a):
        shape, syms, dtype = self.result(n)
        w = self.value(a["weight"], n)
        m = self.matmul(self.value(a["input"], n), self.transpose(w, [1, 0]), n)
        if a.get("bias") is not None:
            bias = self.to_rank(self.convert(self.value(a["bias"], n), m.dtype), m.rank, n)
            m = self.emit("add %s, %s : (%s, %s) -> $T" % (m.name, bias.name, m.type, bias.type), shape, syms, m.dtype)
        return self.convert(m, dtype)

    # normalizations and reductions

    def softmax(self, v, dim, n, log):
        shape, syms, dtype = self.result(n)
        compute = _WIDER.get(dtype, dtype) if dtype in _FLOAT else "f32"
        x = self.convert(v, compute)
        dim = dim % x.rank
        m = self.reduce(x, [dim], "max")
        s = self.emit("sub %s, %s : (%s, %s) -> $T" % (x.name, m.name, x.type, m.type), x.shape, x.syms, compute)
        e = self.unary("exp", s)
        z = self.reduce(e, [dim], "add")
        if log:
            lz = self.unary("log", z)
            y = self.emit("sub %s, %s : (%s, %s) -> $T" % (s.name, lz.name, s.type, lz.type), x.shape, x.syms, compute)
        else:
            y = self.emit("div %s, %s : (%s, %s) -> $T" % (e.name, z.name, e.type, z.type), x.shape, x.syms, compute)
        return self.convert(y, dtype)

    def op_softmax(self, n, a, log=False):
        v = self.value(a["self"], n, folded=True)
        dim = self.number(a["dim"], n) % v.rank
        if v.phys is not None and dim == v.rank - 1 and len(v.groups[-1]) == 1:
            # Rows of a folded value are rows of its phys.
            self.fold = v
            try:
                r = self.softmax(v.phys, v.phys.rank - 1, n, log)
            finally:
                self.fold = None
            return Val.folded(r, v.shape, v.syms, v.groups)
        if v.phys is not None:
            v = self.unfold(v, n)
        return self.softmax(v, dim, n, log)

    def op_log_softmax(self, n, a):
        return self.op_softmax(n, a, log=True)

    def _mean_of(self, v, rdims, node):
        rdims = sorted(set(d % v.rank for d in rdims))
        if any(v.shape[d] is None for d in rdims):
            shape = [1 if i in rdims else d for i, d in enumerate(v.shape)]
            syms = [None if i in rdims else s for i, s in enumerate(v.syms)]
            return self.emit("reduce(%s)<dimensions = [%s], reduction_mode = <avg>> : %s -> $T"
                             % (v.name, ", ".join(map(str, rdims)), v.type), shape, syms, v.dtype)
        r = self.reduce(v, rdims, "add")
        count = 1
        for d in rdims:
            count *= v.shape[d]
        c = self.const(1.0 / count, r.rank, r.dtype)
        return self.emit("mul %s, %s : (%s, %s) -> $T" % (r.name, c.name, r.type, c.type), r.shape, r.syms, r.dtype)

    def op_native_layer_norm(self, n, a):
        x0 = self.value(a["input"], n)
        normalized = list(a["normalized_shape"])
        _, _, dtype = self.result(n, 0)
        compute = _WIDER.get(dtype, dtype)
        x = self.convert(x0, compute)
        rdims = list(range(x.rank - len(normalized), x.rank))
        mu = self._mean_of(x, rdims, n)
        d = self.emit("sub %s, %s : (%s, %s) -> $T" % (x.name, mu.name, x.type, mu.type), x.shape, x.syms, compute)
        sq = self.emit("mul %s, %s : $T" % (d.name, d.name), d.shape, d.syms, compute)
        var = self._mean_of(sq, rdims, n)
        c = self.const(self.number(a["eps"], n), var.rank, compute)
        ve = self.emit("add %s, %s : (%s, %s) -> $T" % (var.name, c.name, var.type, c.type), var.shape, var.syms, compute)
        rstd = self.unary("rsqrt", ve)
        y = self.emit("mul %s, %s : (%s, %s) -> $T" % (d.name, rstd.name, d.type, rstd.type), d.shape, d.syms, compute)
        for p, op in ((a.get("weight"), "mul"), (a.get("bias"), "add")):
            if p is not None:
                pv = self.to_rank(self.convert(self.value(p, n), compute), y.rank, n)
                y = self.emit("%s %s, %s : (%s, %s) -> $T" % (op, y.name, pv.name, y.type, pv.type), y.shape, y.syms,
                              compute)
        mshape, msyms, mdtype = self.result(n, 1)
        return (self.convert(y, dtype), self.convert(self.reshape(mu, mshape, msyms, n), mdtype),
                self.convert(self.reshape(rstd, mshape, msyms, n), mdtype))

    def op_native_batch_norm_legit_no_training(self, n, a):
        x0 = self.value(a["input"], n)
        _, _, dtype = self.result(n, 0)
        compute = _WIDER.get(dtype, dtype)
        x = self.convert(x0, compute)
        if x.rank < 2:
            raise Refused(n, "batch norm of a vector")

        def per_channel(p):
            v = self.convert(self.value(p, n), compute)
            shape = [1] * x.rank
            shape[1] = v.shape[0]
            return self.reshape(v, shape, [None] * x.rank, n)

        mean, var = per_channel(a["running_mean"]), per_channel(a["running_var"])
        c = self.const(self.number(a["eps"], n), x.rank, compute)
        ve = self.emit("add %s, %s : (%s, %s) -> $T" % (var.name, c.name, var.type, c.type), var.shape, var.syms, compute)
        r = self.unary("rsqrt", ve)
        d = self.emit("sub %s, %s : (%s, %s) -> $T" % (x.name, mean.name, x.type, mean.type), x.shape, x.syms, compute)
        y = self.emit("mul %s, %s : (%s, %s) -> $T" % (d.name, r.name, d.type, r.type), x.shape, x.syms, compute)
        for p, op in ((a.get("weight"), "mul"), (a.get("bias"), "add")):
            if p is not None:
                pv = per_channel(p)
                y = self.emit("%s %s, %s : (%s, %s) -> $T" % (op, y.name, pv.name, y.type, pv.type), y.shape, y.syms,
                              compute)
        return (self.convert(y, dtype), None, None)

    def _reduction_dims(self, v, dim):
        if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
            return list(range(v.rank))
        return [dim] if isinstance(dim, int) else list(dim)

    def op_sum(self, n, a):
        v = self.value(a["self"], n)
        _, _, dtype = self.result(n)
        v = self.convert(v, dtype)
        rdims = self._reduction_dims(v, a.get("dim"))
        return self.keep_or_drop(self.reduce(v, rdims, "add"), rdims, a.get("keepdim", False), n)

    def op_mean(self, n, a):
        v = self.value(a["self"], n)
        _, _, dtype = self.result(n)
        compute = _WIDER.get(dtype, dtype)
        v = self.convert(v, compute)
        rdims = self._reduction_dims(v, a.get("dim"))
        r = self._mean_of(v, rdims, n)
        return self.convert(self.keep_or_drop(r, rdims, a.get("keepdim", False), n), dtype)

    def op_amax(self, n, a):
        v = self.value(a["self"], n)
        rdims = self._reduction_dims(v, a.get("dim"))
        return self.keep_or_drop(self.reduce(v, rdims, "max"), rdims, a.get("keepdim", False), n)

    def op_amin(self, n, a):
        v = self.value(a["self"], n)
        rdims = self._reduction_dims(v, a.get("dim"))
        return self.keep_or_drop(self.reduce(v, rdims, "min"), rdims, a.get("keepdim", False), n)

    def op_any(self, n, a):
        v = self.convert(self.convert(self.value(a["self"], n), "i1"), "si32")
        rdims = self._reduction_dims(v, a.get("dim"))
        r = self.reduce(v, rdims, "max")
        return self.convert(self.keep_or_drop(r, rdims, a.get("keepdim", False), n), "i1")

    def op_var(self, n, a, sqrt=False):
        v0 = self.value(a["self"], n)
        _, _, dtype = self.result(n)
        compute = _WIDER.get(dtype, dtype)
        v = self.convert(v0, compute)
        rdims = sorted(set(d % v.rank for d in self._reduction_dims(v, a.get("dim"))))
        count = 1
        for d in rdims:
            if v.shape[d] is None:
                raise Refused(n, "a variance over a dynamic dim")
            count *= v.shape[d]
        correction = a.get("correction")
        correction = 1 if correction is None else self.number(correction, n)
        if a.get("unbiased") is False:
            correction = 0
        mu = self._mean_of(v, rdims, n)
        d = self.emit("sub %s, %s : (%s, %s) -> $T" % (v.name, mu.name, v.type, mu.type), v.shape, v.syms, compute)
        sq = self.emit("mul %s, %s : $T" % (d.name, d.name), d.shape, d.syms, compute)
        s = self.reduce(sq, rdims, "add")
        denom = max(count - correction, 0)
        c = self.const(1.0 / denom if denom else math.inf, s.rank, compute)
        r = self.emit("mul %s, %s : (%s, %s) -> $T" % (s.name, c.name, s.type, c.type), s.shape, s.syms, compute)
        if sqrt:
            r = self.unary("sqrt", r)
        return self.convert(self.keep_or_drop(r, rdims, a.get("keepdim", False), n), dtype)

    def op_std(self, n, a):
        return self.op_var(n, a, sqrt=True)

    # shapes

    def op_view(self, n, a):
        if op_name(n) == "view" and isinstance(a.get("dtype", a.get("size")), torch.dtype):
            raise Refused(n, "a view as another dtype (a bitcast) is not written")
        shape, syms, _ = self.result(n)
        v = self.value(a["self"], n, folded=True)
        base = v.phys if v.phys is not None else v
        if shape == base.shape and syms == base.syms:
            return base  # a folded view viewed back as its phys
        if all(s is None or s in self.symbols for s in syms):
            return self.reshape(base, shape, syms, n)
        groups = merge_groups(base.shape, base.syms, shape, syms)
        if groups is None:
            raise Refused(n, "a reshape to sizes %s that are products of dynamic sizes and merge no dims"
                          % ["?" if s is not None else d for d, s in zip(shape, syms)])
        return Val.folded(base, shape, syms, groups)

    op_unsafe_view = op_view
    op_reshape = op_view
    op_unsqueeze = op_view
    op_squeeze = op_view

    def op_permute(self, n, a):
        v = self.value(a["self"], n)
        return self.transpose(v, [d % v.rank for d in a["dims"]])

    def op_t(self, n, a):
        v = self.value(a["self"], n)
        return self.transpose(v, [1, 0] if v.rank == 2 else list(range(v.rank)))

    def op_transpose(self, n, a):
        v = self.value(a["self"], n)
        d0, d1 = a["dim0"] % v.rank, a["dim1"] % v.rank
        perm = list(range(v.rank))
        perm[d0], perm[d1] = perm[d1], perm[d0]
        return self.transpose(v, perm)

    def op_expand(self, n, a):
        shape, syms, _ = self.result(n)
        return self.broadcast(self.value(a["self"], n), shape, syms, n)

    def op_slice(self, n, a):
        v = self.value(a["self"], n)
        dim = self.number(a.get("dim", 0), n) % v.rank
        start, end = a.get("start"), a.get("end")
        if isinstance(end, (torch.fx.Node, torch.SymInt)):
            return self._slice_to_size(n, v, dim, start, a.get("step", 1) or 1)
        start = None if start is None else self.number(start, n)
        end = None if end is None else self.number(end, n)
        step = self.number(a.get("step", 1) or 1, n)
        r = self.slice(v, dim, start, end, step, n)
        shape, syms, _ = self.result(n)
        return self.reshape(r, shape, syms, n)

    def _slice_to_size(self, n, v, dim, start, step):
        """A slice whose end is a size known at run time (`bias[:, :, :T, :T]`
        with T a dynamic dim): a gather of `dim` at start + step * iota(T), T
        the result's extent along `dim` (a dim of an input)."""
        shape, syms, dtype = self.result(n)
        start, step = self.number(start or 0, n), self.number(step, n)
        if syms[dim] is None:
            raise Refused(n, "a slice whose end is computed at run time and whose extent is not a dynamic dim")
        if start == 0 and step == 1 and v.shape[dim] is None and v.syms[dim] == syms[dim]:
            return self.reshape(v, shape, syms, n)  # the whole dim
        r = self.emit("iota dimension = 0%s : $T" % self.dynamic_dims([syms[dim]], n), [None], [syms[dim]], "si64")
        if step != 1:
            c = self.const(step, 1, "si64")
            r = self.emit("mul %s, %s : (%s, %s) -> $T" % (r.name, c.name, r.type, c.type), [None], [syms[dim]], "si64")
        if start != 0:
            c = self.const(start, 1, "si64")
            r = self.emit("add %s, %s : (%s, %s) -> $T" % (r.name, c.name, r.type, c.type), [None], [syms[dim]], "si64")
        return self.emit("gather %s, %s axis = %d : (%s, %s) -> $T" % (v.name, r.name, dim, v.type, r.type), shape, syms,
                         v.dtype)

    def op_select(self, n, a):
        v = self.value(a["self"], n)
        dim = self.number(a["dim"], n) % v.rank
        if v.shape[dim] is None:
            raise Refused(n, "indexing a dynamic dim")
        index = self.number(a["index"], n) % v.shape[dim]
        r = self.slice(v, dim, index, index + 1, 1, n)
        shape, syms, _ = self.result(n)
        return self.reshape(r, shape, syms, n)

    def _pieces(self, n, sizes, dim, drop=False):
        v = self.value(n.args[0], n)
        dim = dim % v.rank
        if v.shape[dim] is None:
            raise Refused(n, "a split along a dynamic dim")
        starts, at = [], 0
        for s in sizes:
            starts.append(at)
            at += s
        return _Pieces(v, dim, starts, sizes, drop)

    def op_split(self, n, a):
        outs = meta_value(n)
        dim = self.number(a.get("dim", 0), n)
        return self._pieces(n, [static_size(o.shape[dim]) for o in outs], dim)

    op_split_with_sizes = op_split

    def op_unbind(self, n, a):
        v = self.value(a["self"], n)
        dim = self.number(a.get("dim", 0), n) % v.rank
        if v.shape[dim] is None:
            raise Refused(n, "unbind along a dynamic dim")
        return self._pieces(n, [1] * v.shape[dim], dim, drop=True)

    def op_getitem(self, n, _):
        src, i = n.args
        whole = self.env.get(src)
        if isinstance(whole, _Pieces):
            if not isinstance(i, int) or not -len(whole.starts) <= i < len(whole.starts):
                raise Refused(n, "piece %r" % (i,))
            r = self.slice(whole.v, whole.dim, whole.starts[i], whole.starts[i] + whole.sizes[i], 1, n)
            shape, syms, _ = self.result(n)
            return self.reshape(r, shape, syms, n)
        if isinstance(whole, tuple):
            if not isinstance(i, int) or whole[i] is None:
                raise Refused(n, "result %r of %s is not written" % (i, src.name))
            return whole[i]
        raise Refused(n, "getitem of %s" % src.name)

    def op_identity(self, n, a):
        _, _, dtype = self.result(n)
        return self.convert(self.value(a["self"], n), dtype)

    op_alias = op_identity
    op_detach = op_identity
    op_clone = op_identity
    op_lift_fresh_copy = op_identity
    op_contiguous = op_identity

    def op_to_copy(self, n, a):
        src = meta_value(a["self"])
        if a.get("device") is not None and torch.device(a["device"]) != src.device:
            raise Refused(n, "a copy to another device")
        return self.op_identity(n, a)

    def op_convert_element_type(self, n, a):
        _, _, dtype = self.result(n)
        return self.convert(self.value(n.args[0], n), dtype)

    def op_cat(self, n, a):
        shape, syms, dtype = self.result(n)
        parts = [self.convert(self.value(p, n), dtype) for p in a["tensors"]]
        dim = self.number(a.get("dim", 0), n) % len(shape)
        parts = [p for p in parts if not (p.shape[dim] == 0)]
        if len(parts) == 1:
            return parts[0]
        if any(p.shape[dim] is None for p in parts):
            raise Refused(n, "a concatenation along a dynamic dim")
        types = ", ".join(p.type for p in parts)
        return self.emit("concatenate %s dimension = %d : (%s) -> $T" % (", ".join(p.name for p in parts), dim, types),
                         shape, syms, dtype)

    # filled tensors

    def op_full(self, n, a):
        return self.filled(self.number(a["fill_value"], n), n)

    def op_full_like(self, n, a):
        return self.filled(self.number(a["fill_value"], n), n)

    def op_zeros_like(self, n, a):
        return self.filled(0, n)

    op_zeros = op_zeros_like

    def op_ones_like(self, n, a):
        return self.filled(1, n)

    op_ones = op_ones_like

    def op_scalar_tensor(self, n, a):
        return self.filled(self.number(a["s"], n), n)

    def op_arange(self, n, a):
        shape, syms, dtype = self.result(n)
        start = self.number(a.get("start", 0) or 0, n)
        step = self.number(a.get("step", 1) or 1, n)
        idx = "si64" if dtype not in _FLOAT else dtype
        r = self.emit("iota dimension = 0%s : $T" % self.dynamic_dims(syms, n), shape, syms, idx)
        r = self.convert(r, dtype)
        if step != 1:
            c = self.const(step, 1, dtype)
            r = self.emit("mul %s, %s : (%s, %s) -> $T" % (r.name, c.name, r.type, c.type), shape, syms, dtype)
        if start != 0:
            c = self.const(start, 1, dtype)
            r = self.emit("add %s, %s : (%s, %s) -> $T" % (r.name, c.name, r.type, c.type), shape, syms, dtype)
        return r

    def op_embedding(self, n, a):
        shape, syms, dtype = self.result(n)
        w, idx = self.value(a["weight"], n), self.value(a["indices"], n)
        if w.rank != 2:
            raise Refused(n, "an embedding table of rank %d" % w.rank)
        if idx.dtype not in ("si32", "si64"):
            raise Refused(n, "embedding indices of %s" % idx.dtype)
        # padding_idx changes only the gradient; the lookup is a gather of rows.
        return self.emit("gather %s, %s axis = 0 : (%s, %s) -> $T" % (w.name, idx.name, w.type, idx.type), shape, syms,
                         w.dtype)

    # -- the graph ----------------------------------------------------------------

    def finish(self, outputs):
        """The graph text with `outputs` (nodes written before; a node
        returning several values gives (node, index)) as its results, in
        order; each distinct value once. Returns (text, [(result index,
        groups)] per output): a folded output is returned as its phys, to be
        viewed with its dims merged by `groups` (None: as it is)."""
        flat, index, where = [], {}, []
        for o in outputs:
            v = self.env.get(o[0])[o[1]] if isinstance(o, tuple) else self.env.get(o)
            if not isinstance(v, Val):
                raise TirError(grpc.StatusCode.INVALID_ARGUMENT, "UNSUPPORTED_OP", "output %s is not a tensor" % (o,))
            groups = v.groups
            if v.phys is not None:
                v = v.phys
            if v.name not in index:
                index[v.name] = len(flat)
                flat.append(v)
            where.append((index[v.name], groups))
        sig = []
        for v, strides in self.args:
            attr = ' {tir.stride = "(%s)"}' % ",".join(map(str, strides)) if strides else ""
            sig.append("%s: %s%s" % (v.name, v.type, attr))
        results = ", ".join(v.type for v in flat)
        text = "tir.graph @%s(%s) -> %s {\n%s\n  results %s : %s\n}\n" % (
            self.name, ", ".join(sig), results if len(flat) == 1 else "(%s)" % results, "\n".join(self.lines),
            ", ".join(v.name for v in flat), results)
        return text, where
