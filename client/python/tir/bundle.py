"""Runs a tir.v1.KernelBundle from its own launch records.

A bundle says everything a launcher needs: the type of every input, output
and intermediate (dtype, shape, strides, alignment), and per kernel its
binary, the fields of its parameter struct (KernelArgument), its iteration
domain and its launch rule. `Bundle.run` follows those records, on the CPU
for host bundles (the shared object's `tir_host_call`, through ctypes) and on
the GPU for cubins (the CUDA driver API through ctypes, on the tensors'
current stream). The same rules as the C++ runner (client/bundle_runner.h).

    bundle = tir.compile(graph_text, arch="host")
    (y,) = bundle.run(x, w)          # numpy arrays or torch tensors, zero-copy

Errors raise TirError with a stable reason: BUNDLE_* (signature, checked
before any binary is loaded), INPUT_MISMATCH (count, shape, dtype, device),
LAYOUT_CONTRACT_VIOLATED (a tensor's strides or alignment break what the
bundle was compiled for), BUNDLE_NOT_RUNNABLE (dynamic extents, a format this
process cannot load), CUDA_DRIVER_UNAVAILABLE, CUDA_ERROR.
"""

import ctypes
import hashlib
import os
import struct
import tempfile
import threading

import grpc

from tir import _paths
from tir.client import TirError, check_bundle
from tir.v1 import graph_pb2
from tir.v1 import kernel_pb2

_INVALID = grpc.StatusCode.INVALID_ARGUMENT
_PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION

INPUT, OUTPUT, INTERMEDIATE, DOMAIN = (kernel_pb2.TensorRef.INPUT, kernel_pb2.TensorRef.OUTPUT,
                                       kernel_pb2.TensorRef.INTERMEDIATE, kernel_pb2.TensorRef.ITERATION_DOMAIN)
_A = kernel_pb2.KernelArgument

# DType -> (name, bytes, numpy name or None, torch attribute or None, struct format of a scalar)
_DTYPES = {
    graph_pb2.DTYPE_I1: ("i1", 1, "bool", "bool", "?"),
    graph_pb2.DTYPE_F16: ("f16", 2, "float16", "float16", "e"),
    graph_pb2.DTYPE_BF16: ("bf16", 2, None, "bfloat16", None),
    graph_pb2.DTYPE_F32: ("f32", 4, "float32", "float32", "f"),
    graph_pb2.DTYPE_F64: ("f64", 8, "float64", "float64", "d"),
    graph_pb2.DTYPE_SI8: ("si8", 1, "int8", "int8", "b"),
    graph_pb2.DTYPE_SI16: ("si16", 2, "int16", "int16", "h"),
    graph_pb2.DTYPE_SI32: ("si32", 4, "int32", "int32", "i"),
    graph_pb2.DTYPE_SI64: ("si64", 8, "int64", "int64", "q"),
    graph_pb2.DTYPE_UI8: ("ui8", 1, "uint8", "uint8", "B"),
    graph_pb2.DTYPE_UI16: ("ui16", 2, "uint16", None, "H"),
    graph_pb2.DTYPE_UI32: ("ui32", 4, "uint32", None, "I"),
    graph_pb2.DTYPE_UI64: ("ui64", 8, "uint64", None, "Q"),
    graph_pb2.DTYPE_INDEX: ("index", 8, "int64", "int64", "q"),
}


def _error(code, reason, message):
    return TirError(code, reason, message)


def dtype_name(dtype):
    return _DTYPES[dtype][0] if dtype in _DTYPES else graph_pb2.DType.Name(dtype)


def dtype_bytes(dtype):
    if dtype not in _DTYPES:
        raise _error(_PRECONDITION, "BUNDLE_NOT_RUNNABLE", "dtype %s has no runner" % graph_pb2.DType.Name(dtype))
    return _DTYPES[dtype][1]


class TensorSpec:
    """One tensor of the bundle's signature: dtype, shape, the strides it is
    laid out with (elements; None: row-major; -1 entries: any, `divisors`
    apply), alignment in bytes (0: none promised), scalar or not."""

    def __init__(self, t):
        self.dtype = t.dtype
        self.shape = tuple(t.shape)
        self.scalar = t.scalar
        self.declared = tuple(t.strides) if len(t.strides) else None
        self.divisors = tuple(t.stride_divisors) if len(t.stride_divisors) else ()
        self.alignment = t.alignment
        self._row_major = None

    @property
    def dynamic(self):
        return any(d < 0 for d in self.shape)

    def row_major(self):
        if self._row_major is None:
            strides, s = [], 1
            for d in reversed(self.shape):
                strides.append(s)
                s *= max(1, d)
            self._row_major = tuple(reversed(strides))
        return self._row_major

    def layout(self):
        """Strides a runner allocates this tensor with: the declared static
        ones; a `?` stride row-major, rounded up to its divisor."""
        if self.scalar:
            return ()
        if self.declared is None:
            return self.row_major()
        strides = [0] * len(self.shape)
        inner = 1
        for i in reversed(range(len(self.shape))):
            s = self.declared[i]
            if s < 0:
                s = inner
                div = self.divisors[i] if i < len(self.divisors) and self.divisors[i] > 1 else 1
                s = (s + div - 1) // div * div
            strides[i] = s
            inner = max(inner, s * max(1, self.shape[i]))
        return tuple(strides)

    def check_layout(self, what, pointer, strides, output):
        """LAYOUT_CONTRACT_VIOLATED unless a tensor at `pointer` with `strides`
        keeps what the bundle was compiled for."""
        if self.alignment and pointer % self.alignment:
            raise _error(_INVALID, "LAYOUT_CONTRACT_VIOLATED",
                         "%s: the bundle needs its base aligned to %d bytes, got address 0x%x"
                         % (what, self.alignment, pointer))
        want = self.declared if self.declared is not None else self.row_major()
        for i, (w, got) in enumerate(zip(want, strides)):
            if self.shape[i] == 1:
                continue  # the stride of an extent-1 dim is never read
            if w >= 0 and w != got:
                raise _error(_INVALID, "LAYOUT_CONTRACT_VIOLATED",
                             "%s: the bundle was compiled for strides %s, the tensor has %s (make it contiguous, "
                             "or compile for this layout)" % (what, list(want), list(strides)))
            if w < 0:
                div = self.divisors[i] if i < len(self.divisors) else 0
                if div > 1 and got % div:
                    raise _error(_INVALID, "LAYOUT_CONTRACT_VIOLATED",
                                 "%s: stride %d of dim %d is not a multiple of %d" % (what, got, i, div))
                if output and got == 0:
                    raise _error(_INVALID, "LAYOUT_CONTRACT_VIOLATED",
                                 "%s: an output's run-time stride of dim %d is 0" % (what, i))

    def __repr__(self):
        if self.scalar:
            return dtype_name(self.dtype)
        dims = "x".join("?" if d < 0 else str(d) for d in self.shape)
        return "tensor<%s%s%s>" % (dims, "x" if dims else "", dtype_name(self.dtype))


# ---------------------------------------------------------------------------
# Tensors from the caller: numpy arrays, torch tensors, DLPack and buffers.

class _View:
    """A caller's tensor as the runner sees it."""

    __slots__ = ("obj", "pointer", "shape", "strides", "dtype", "device", "kind", "value")

    def __init__(self, obj, pointer, shape, strides, dtype, device, kind, value=None):
        self.obj, self.pointer, self.shape, self.strides = obj, pointer, tuple(shape), tuple(strides)
        self.dtype, self.device, self.kind, self.value = dtype, device, kind, value


def _torch():
    try:
        import torch
        return torch
    except ImportError:
        return None


def _numpy():
    try:
        import numpy
        return numpy
    except ImportError:
        return None


_TORCH_DTYPES = None
_NUMPY_DTYPES = None


def _dtype_of_torch(torch, dt):
    global _TORCH_DTYPES
    if _TORCH_DTYPES is None:
        _TORCH_DTYPES = {getattr(torch, v[3]): k for k, v in _DTYPES.items()
                         if v[3] and k != graph_pb2.DTYPE_INDEX and hasattr(torch, v[3])}
    return _TORCH_DTYPES.get(dt)


def _dtype_of_numpy(np, dt):
    global _NUMPY_DTYPES
    if _NUMPY_DTYPES is None:
        _NUMPY_DTYPES = {np.dtype(v[2]): k for k, v in _DTYPES.items() if v[2] and k != graph_pb2.DTYPE_INDEX}
    return _NUMPY_DTYPES.get(dt)


def _view(obj, what):
    torch, np = _torch(), _numpy()
    if torch is not None and isinstance(obj, torch.Tensor):
        dt = _dtype_of_torch(torch, obj.dtype)
        device = "cuda:%d" % obj.device.index if obj.is_cuda else "cpu"
        if obj.is_cuda or obj.device.type == "cpu":
            return _View(obj, obj.data_ptr(), obj.shape, obj.stride(), dt, device, "torch")
        raise _error(_INVALID, "INPUT_MISMATCH", "%s: a tensor on %s (cpu or cuda only)" % (what, obj.device))
    if np is not None:
        if isinstance(obj, np.ndarray):
            arr = obj
        elif hasattr(obj, "__dlpack__"):
            arr = np.from_dlpack(obj)
        elif isinstance(obj, (int, float, bool)) or (hasattr(obj, "__array__") and not hasattr(obj, "__len__")):
            return _View(obj, 0, (), (), None, "cpu", "number", value=obj)
        else:
            try:
                arr = np.asarray(memoryview(obj))
            except TypeError:
                raise _error(_INVALID, "INPUT_MISMATCH",
                             "%s: a %s is not a tensor (numpy, torch, DLPack or a buffer)" % (what, type(obj).__name__))
        item = arr.itemsize
        strides = tuple(s // item for s in arr.strides) if arr.ndim else ()
        return _View(obj, arr.ctypes.data, arr.shape, strides, _dtype_of_numpy(np, arr.dtype), "cpu", "numpy")
    if isinstance(obj, (int, float, bool)):
        return _View(obj, 0, (), (), None, "cpu", "number", value=obj)
    raise _error(_INVALID, "INPUT_MISMATCH", "%s: numpy is needed to run a %s" % (what, type(obj).__name__))


def _read_only(obj):
    """Whether an out= object refuses writes (a numpy array over bytes, a
    read-only buffer)."""
    flags = getattr(obj, "flags", None)
    if flags is not None and hasattr(flags, "writeable"):
        return not flags.writeable
    torch = _torch()
    if torch is not None and isinstance(obj, torch.Tensor):
        return False
    try:
        return memoryview(obj).readonly
    except TypeError:
        return False


def _scalar_bytes(spec, v, what):
    fmt = _DTYPES.get(spec.dtype, (None,) * 5)[4]
    if fmt is None:
        raise _error(_PRECONDITION, "BUNDLE_NOT_RUNNABLE", "%s: scalar dtype %s has no runner" % (what, spec))
    if v.kind == "number":
        value = v.value
    else:
        if v.shape not in ((), (1,)):
            raise _error(_INVALID, "INPUT_MISMATCH", "%s: the bundle takes a scalar %s, got shape %s"
                         % (what, spec, list(v.shape)))
        value = v.obj.item() if hasattr(v.obj, "item") else v.obj[0]
    if fmt in "?bBhHiIqQ":
        value = int(value)
    elif fmt in "efd":
        value = float(value)
    raw = struct.pack("<" + fmt, value)
    return raw + b"\0" * (8 - len(raw))


# ---------------------------------------------------------------------------
# Launch records -> parameter fields (one list for both backends).

class Field:
    """One field of a kernel's parameter struct: kind "pointer" (tensor ref),
    "array" (int64 values), "scalar" (8 raw bytes, `size` used), "workspace"
    or "map" (tensor ref, box)."""

    __slots__ = ("kind", "ref", "values", "raw", "size", "box")

    def __init__(self, kind, ref=None, values=None, raw=None, size=8, box=None):
        self.kind, self.ref, self.values, self.raw, self.size, self.box = kind, ref, values, raw, size, box


def kernel_fields(kernel, specs, shapes, strides):
    """The struct fields of `kernel`: `specs[(kind, index)]` the tensor
    types, `shapes`/`strides` what each tensor has at this launch. Runs of
    SIZE or STRIDE records of one tensor form one array field."""
    domain = list(kernel.iteration_domain)
    fields = []
    args = list(kernel.arguments)
    i = 0
    while i < len(args):
        a = args[i]
        ref = (a.tensor.kind, a.tensor.index)
        if a.kind == _A.POINTER:
            fields.append(Field("pointer", ref))
        elif a.kind == _A.WORKSPACE:
            fields.append(Field("workspace"))
        elif a.kind == _A.TENSOR_MAP:
            fields.append(Field("map", ref, box=tuple(a.box), size=128))
        elif a.kind == _A.SCALAR:
            fields.append(Field("scalar", ref, size=dtype_bytes(specs[ref].dtype)))
        elif a.kind in (_A.SIZE, _A.STRIDE):
            values = []
            while (i < len(args) and args[i].kind == a.kind and args[i].tensor.kind == a.tensor.kind and
                   args[i].tensor.index == a.tensor.index and args[i].dim == len(values)):
                b = args[i]
                if b.tensor.kind == DOMAIN and not domain and b.dim == 0:
                    values.append(1)  # a rank-0 domain's one entry
                elif b.tensor.kind == DOMAIN:
                    if b.dim >= len(domain):
                        raise _error(_PRECONDITION, "BUNDLE_NOT_RUNNABLE", "an argument reads a missing domain dim")
                    values.append(domain[b.dim])
                else:
                    if ref not in shapes:
                        raise _error(_PRECONDITION, "BUNDLE_NOT_RUNNABLE", "an argument names a tensor the bundle lacks")
                    v = shapes[ref] if b.kind == _A.SIZE else strides[ref]
                    values.append(v[b.dim] if b.dim < len(v) else 1)
                i += 1
            fields.append(Field("array", ref, values=values, size=8 * len(values)))
            continue
        else:
            raise _error(_PRECONDITION, "BUNDLE_NOT_RUNNABLE", "unknown argument kind %d" % a.kind)
        i += 1
    return fields


def struct_layout(fields):
    """(offset of each field, total bytes, alignment) of the CUDA parameter
    struct: every field at its natural alignment (pointers, sizes and strides
    8 bytes, a scalar its own size, a tensor map 128 bytes at 64)."""
    offsets, at, align = [], 0, 8
    for f in fields:
        a = 64 if f.kind == "map" else 8 if f.kind in ("pointer", "workspace", "array") else min(8, f.size)
        align = max(align, a)
        at = (at + a - 1) // a * a
        offsets.append(at)
        at += f.size
    return offsets, (at + align - 1) // align * align, align


def launch_extent(ext, domain, what):
    v = ext.constant if ext.constant else 1
    for i, d in enumerate(ext.dims):
        if d.dim >= len(domain):
            raise _error(_PRECONDITION, "BUNDLE_NOT_RUNNABLE", "the %s reads domain dim %d of %d" % (what, d.dim, len(domain)))
        # Each dim ceil-divided by its own tile (ceil(M / bm) * ceil(N / bn)).
        tile = ext.dim_divisors[i] if i < len(ext.dim_divisors) and ext.dim_divisors[i] > 1 else 1
        v *= -(-max(0, domain[d.dim]) // tile)
    div = ext.divisor if ext.divisor > 1 else 1
    return (v + div - 1) // div


def launch_grid(launch, domain):
    grid = [1, 1, 1]
    for g, ext in enumerate(list(launch.grid)[:3]):
        blocks = max(1, launch_extent(ext, domain, "launch rule"))
        if ext.max > 0:
            blocks = min(blocks, ext.max)
        limit = (1 << 31) - 1 if g == 0 else 65535
        if blocks > limit:
            raise _error(grpc.StatusCode.RESOURCE_EXHAUSTED, "LIMIT_EXCEEDED",
                         "the launch needs %d blocks along grid %s, above the limit of %d" % (blocks, "xyz"[g], limit))
        grid[g] = blocks
    return grid


def workspace_bytes(launch, domain):
    return launch_extent(launch.workspace_bytes, domain, "workspace rule") if launch.HasField("workspace_bytes") else 0


# ---------------------------------------------------------------------------

def cuda_launches(proto, specs, tensors, workspace, tensor_map):
    """Yields (grid, block, dynamic shared memory, parameter struct bytes)
    for each kernel of a cubin bundle, in order. `tensors[(kind, index)]`:
    each tensor's pointer, shape and strides at this launch; `workspace(kernel,
    bytes)` the device address of a zeroed workspace; `tensor_map(tensor,
    spec, box)` the 128 bytes of its TMA descriptor, or None when its layout
    allows none (the field stays zero and the kernel loads without TMA)."""
    shapes = {r: v.shape for r, v in tensors.items()}
    strides = {r: v.strides for r, v in tensors.items()}
    for k in proto.kernels:
        fields = kernel_fields(k, specs, shapes, strides)
        offsets, size, _ = struct_layout(fields)
        params = bytearray(size)
        for f, at in zip(fields, offsets):
            if f.kind == "pointer":
                struct.pack_into("<Q", params, at, tensors[f.ref].pointer)
            elif f.kind == "scalar":
                params[at:at + f.size] = _scalar_bytes(specs[f.ref], tensors[f.ref], "input %d" % f.ref[1])[:f.size]
            elif f.kind == "array":
                struct.pack_into("<%dq" % len(f.values), params, at, *f.values)
            elif f.kind == "workspace":
                struct.pack_into("<Q", params, at, workspace(k, max(8, workspace_bytes(k.launch, list(k.iteration_domain)))))
            elif f.kind == "map":
                encoded = tensor_map(tensors[f.ref], specs[f.ref], f.box)
                if encoded is not None:
                    params[at:at + 128] = encoded
        grid = launch_grid(k.launch, list(k.iteration_domain))
        block = ([max(1, b) for b in list(k.launch.block)[:3]] + [1, 1, 1])[:3]
        yield grid, block, k.launch.dynamic_shared_memory_bytes, bytes(params)


def check_binaries(proto):
    """Every kernel's binary is the one its bundle names by hash
    (KernelEntry.binary_sha256, set by the coordinator that built it):
    BINARY_UNCHECKED without one, BINARY_HASH_MISMATCH when it differs."""
    for k in proto.kernels:
        if not k.binary:
            continue
        if not k.binary_sha256:
            raise _error(_PRECONDITION, "BINARY_UNCHECKED",
                         "kernel %d of bundle %s names no binary hash: it was not built by a coordinator that "
                         "checks what it serves" % (k.partition, proto.key[:16]))
        if hashlib.sha256(k.binary).hexdigest() != k.binary_sha256:
            raise _error(_PRECONDITION, "BINARY_HASH_MISMATCH",
                         "kernel %d of bundle %s is not the binary its bundle names" % (k.partition, proto.key[:16]))


def private_dir(path):
    """`path` as a directory only this user can use (each level made here
    0700; checked: a directory, not a link, owned by this user, no group or
    other access, under directories only root and this user can change:
    tir._paths). UNSAFE_DIRECTORY otherwise."""
    return _paths.trusted_dir(path)


class Bundle:
    """A compiled graph: `run` it on tensors. `proto` is the
    tir.v1.KernelBundle; with `bundle_key` its signature is checked before
    any binary is loaded."""

    def __init__(self, proto, bundle_key=None, work_dir=None):
        self.proto = proto
        self.key = proto.key
        self.arch = proto.arch
        self.inputs = [TensorSpec(t) for t in proto.inputs]
        self.outputs = [TensorSpec(t) for t in proto.outputs]
        self.intermediates = [TensorSpec(t) for t in proto.intermediates]
        self._bundle_key = bundle_key
        self._work_dir = work_dir
        self._lock = threading.Lock()
        self._host = None      # loaded tir_host_call per kernel
        self._cuda = None      # device index -> loaded (module, function) per kernel
        self._scratch = {}     # (device, kind, index) -> allocation reused across runs
        self._plans = {}       # launch layout -> host kernels' prepared fields
        self._runnable = False
        self._spec_map = None

    def __repr__(self):
        return "tir.Bundle(%s, %s, %d kernels: (%s) -> (%s))" % (
            self.key[:16], self.arch, len(self.proto.kernels), ", ".join(map(repr, self.inputs)),
            ", ".join(map(repr, self.outputs)))

    @property
    def formats(self):
        return {k.format for k in self.proto.kernels}

    @property
    def is_host(self):
        return self.formats == {kernel_pb2.BINARY_FORMAT_HOST_SHARED_OBJECT}

    def check_signature(self, key=None):
        check_bundle(self.proto, key or self._bundle_key)

    def _check_runnable(self):
        for spec in self.inputs + self.outputs + self.intermediates:
            if spec.dynamic:
                raise _error(_PRECONDITION, "BUNDLE_NOT_RUNNABLE",
                             "bundle %s has dynamic extents (%r): compile it for the shape (shapes=...)" % (self.key[:16], spec))
        for k in self.proto.kernels:
            if any(d < 0 for d in k.iteration_domain):
                raise _error(_PRECONDITION, "BUNDLE_NOT_RUNNABLE", "bundle %s has dynamic extents: compile it for the shape"
                             % self.key[:16])
        check_binaries(self.proto)
        formats = self.formats
        if not formats:
            raise _error(_PRECONDITION, "BUNDLE_NOT_RUNNABLE", "bundle %s holds no kernels" % self.key[:16])
        if len(formats) > 1:
            raise _error(_PRECONDITION, "BUNDLE_NOT_RUNNABLE", "bundle %s mixes binary formats" % self.key[:16])

    def _check_inputs(self, tensors):
        if len(tensors) != len(self.inputs):
            raise _error(_INVALID, "INPUT_MISMATCH", "the bundle takes %d inputs (%s), got %d"
                         % (len(self.inputs), ", ".join(map(repr, self.inputs)), len(tensors)))
        views = []
        for i, (t, spec) in enumerate(zip(tensors, self.inputs)):
            what = "input %d" % i
            v = _view(t, what)
            if spec.scalar:
                views.append(v)
                continue
            if v.kind == "number":
                raise _error(_INVALID, "INPUT_MISMATCH", "%s: the bundle takes %r, got a number" % (what, spec))
            if v.shape != spec.shape:
                raise _error(_INVALID, "INPUT_MISMATCH", "%s: the bundle takes shape %s (%r), got %s"
                             % (what, list(spec.shape), spec, list(v.shape)))
            if v.dtype != spec.dtype:
                got = getattr(t, "dtype", type(t).__name__)
                raise _error(_INVALID, "INPUT_MISMATCH", "%s: the bundle takes %s, got %s" % (what, dtype_name(spec.dtype), got))
            spec.check_layout(what, v.pointer, v.strides, output=False)
            views.append(v)
        devices = {v.device for v, s in zip(views, self.inputs) if not s.scalar}
        if len(devices) > 1:
            raise _error(_INVALID, "INPUT_MISMATCH", "the inputs are on several devices: %s" % sorted(devices))
        return views, (devices.pop() if devices else "cpu")

    def run(self, *tensors, out=None, stream=None):
        """Runs every kernel in order; returns the outputs (a tuple). Host
        bundles take CPU tensors (numpy arrays, torch CPU tensors, DLPack or
        buffer objects) and cubin bundles torch CUDA tensors, launched on
        `stream` (default: torch's current stream of the tensors' device).
        `out`: tensors to write the outputs into (else allocated: torch when
        the inputs are torch tensors, numpy otherwise)."""
        if not self._runnable:
            # Once, before anything is loaded: the signature (HMAC over the
            # whole bundle, binaries included) and what can run here.
            if self._bundle_key:
                self.check_signature()
            self._check_runnable()
            self._runnable = True
        views, device = self._check_inputs(tensors)
        gpu = not self.is_host
        if gpu and not device.startswith("cuda"):
            raise _error(_INVALID, "INPUT_MISMATCH",
                         "bundle %s is for %s: its inputs must be CUDA tensors, got %s ones" % (self.key[:16], self.arch, device))
        if not gpu and device != "cpu":
            raise _error(_INVALID, "INPUT_MISMATCH", "bundle %s is a host bundle: its inputs must be CPU tensors, got %s"
                         % (self.key[:16], device))
        kind = "torch" if any(v.kind == "torch" for v in views) or gpu else "numpy"
        with self._lock:
            outs = self._outputs(out, kind, device)
            tensors = {}
            for i, (v, spec) in enumerate(zip(views, self.inputs)):
                tensors[(INPUT, i)] = v
            for i, (v, spec) in enumerate(zip(outs, self.outputs)):
                tensors[(OUTPUT, i)] = v
            for i, spec in enumerate(self.intermediates):
                tensors[(INTERMEDIATE, i)] = self._scratch_tensor((INTERMEDIATE, i), spec, kind, device)
            if gpu:
                self._run_cuda(tensors, device, stream)
            else:
                self._run_host(tensors)
        return tuple(v.obj for v in outs)

    def _specs(self):
        if self._spec_map is not None:
            return self._spec_map
        specs = {}
        for kind, lst in ((INPUT, self.inputs), (OUTPUT, self.outputs), (INTERMEDIATE, self.intermediates)):
            for i, s in enumerate(lst):
                specs[(kind, i)] = s
        self._spec_map = specs
        return specs

    def _allocate(self, spec, kind, device, fill=None):
        """A tensor laid out as `spec` says (padded where a `?` stride has a
        divisor), as a _View."""
        strides = spec.layout()
        extent = 1 + sum((d - 1) * s for d, s in zip(spec.shape, strides)) if all(d > 0 for d in spec.shape) else 0
        if spec.scalar:
            extent = 1
        size = dtype_bytes(spec.dtype)
        if kind == "torch":
            torch = _torch()
            tdt = getattr(torch, _DTYPES[spec.dtype][3]) if _DTYPES[spec.dtype][3] else torch.uint8
            base = torch.empty(max(1, extent) + 256 // size, dtype=tdt, device=device)
            skip = (-base.data_ptr() % 256) // size  # 256-byte aligned, as the C++ runner lays buffers out
            if fill is not None:
                base.zero_()
            t = torch.as_strided(base, spec.shape if not spec.scalar else (), strides, skip)
            return _View(t, t.data_ptr(), spec.shape, strides, spec.dtype, device, "torch")
        np = _numpy()
        if _DTYPES[spec.dtype][2] is None:
            raise _error(_INVALID, "INPUT_MISMATCH", "numpy has no %s: pass torch tensors" % dtype_name(spec.dtype))
        ndt = np.dtype(_DTYPES[spec.dtype][2])
        raw = np.zeros(max(1, extent) * size + 256, dtype=np.uint8)
        skip = -raw.ctypes.data % 256
        arr = np.lib.stride_tricks.as_strided(raw[skip:].view(ndt), shape=spec.shape,
                                              strides=tuple(s * size for s in strides))
        return _View(arr, arr.ctypes.data, spec.shape, strides, spec.dtype, "cpu", "numpy")

    def _scratch_tensor(self, ref, spec, kind, device):
        key = (device, kind) + ref
        if key not in self._scratch:
            self._scratch[key] = self._allocate(spec, kind, device)
        return self._scratch[key]

    def _outputs(self, out, kind, device):
        if out is None:
            return [self._allocate(spec, kind, device) for spec in self.outputs]
        out = list(out) if isinstance(out, (list, tuple)) else [out]
        if len(out) != len(self.outputs):
            raise _error(_INVALID, "INPUT_MISMATCH", "the bundle has %d outputs, out= gives %d" % (len(self.outputs), len(out)))
        views = []
        for i, (t, spec) in enumerate(zip(out, self.outputs)):
            what = "out[%d]" % i
            v = _view(t, what)
            if _read_only(t):
                raise _error(_INVALID, "INPUT_MISMATCH", "%s is read-only; outputs are written into it" % what)
            if v.shape != spec.shape or v.dtype != spec.dtype:
                raise _error(_INVALID, "INPUT_MISMATCH", "%s: the bundle writes %r, got shape %s dtype %s"
                             % (what, spec, list(v.shape), getattr(t, "dtype", "?")))
            if v.device != device:
                raise _error(_INVALID, "INPUT_MISMATCH", "%s is on %s, the inputs on %s" % (what, v.device, device))
            spec.check_layout(what, v.pointer, v.strides, output=True)
            views.append(v)
        return views

    # -- host ---------------------------------------------------------------

    def _load_host(self):
        if self._host is not None:
            return self._host
        work = private_dir(self._work_dir or os.path.join(_paths.cache_dir(), "py"))
        calls = []
        for k in self.proto.kernels:
            # mkstemp: a new name (dlopen matches libraries by name), O_EXCL,
            # 0600, in a directory only this user may use; read back through
            # the descriptor it was written with and hashed before it is
            # loaded, and removed once loaded.
            fd, path = tempfile.mkstemp(prefix="k%d_" % k.partition, suffix=".so", dir=work)
            try:
                try:
                    view = memoryview(k.binary)
                    while view:
                        view = view[os.write(fd, view):]
                    os.fsync(fd)
                    back = os.pread(fd, len(k.binary), 0)
                finally:
                    os.close(fd)
                if hashlib.sha256(back).hexdigest() != k.binary_sha256:
                    raise _error(_PRECONDITION, "BINARY_HASH_MISMATCH",
                                 "kernel %d changed on disk before it was loaded (%s)" % (k.partition, path))
                lib = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
            except OSError as e:
                raise _error(_PRECONDITION, "BUNDLE_NOT_RUNNABLE", "kernel %d does not load: %s" % (k.partition, e))
            finally:
                os.unlink(path)  # the mapping stays; nothing is left behind
            try:
                call = lib.tir_host_call
            except AttributeError:
                raise _error(_PRECONDITION, "BUNDLE_NOT_RUNNABLE", "kernel %d has no tir_host_call" % k.partition)
            call.restype = None
            call.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint, ctypes.c_uint, ctypes.c_uint]
            calls.append((lib, call))
        self._host = calls
        return calls

    def _host_plan(self, tensors):
        """Per kernel: the call, each field's storage, the array of their
        addresses and the grid, for the strides of this launch (kept: a
        later run with the same layout only writes its pointers and scalars)."""
        key = tuple(v.strides for _, v in sorted(tensors.items()))
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        specs = self._specs()
        for k in self.proto.kernels:
            for a in k.arguments:
                if a.kind == _A.TENSOR_MAP:
                    raise _error(_PRECONDITION, "BUNDLE_NOT_RUNNABLE",
                                 "the kernel takes a TMA tensor map: it runs on an sm_90 GPU, not on the host")
        calls = self._load_host()
        shapes = {r: v.shape for r, v in tensors.items()}
        strides = {r: v.strides for r, v in tensors.items()}
        plan = []
        for k, (_, call) in zip(self.proto.kernels, calls):
            storages, pointers, scalars = [], [], []
            for f in kernel_fields(k, specs, shapes, strides):
                if f.kind == "pointer":
                    storage = ctypes.c_void_p(0)
                    pointers.append((storage, f.ref))
                elif f.kind == "scalar":
                    storage = ctypes.create_string_buffer(8)
                    scalars.append((storage, f.ref))
                elif f.kind == "array":
                    storage = (ctypes.c_int64 * max(1, len(f.values)))(*f.values)
                else:  # workspace
                    storage = ctypes.c_void_p(ctypes.addressof(self._workspace_host(k)))
                storages.append(storage)
            grid = launch_grid(k.launch, list(k.iteration_domain))
            array = (ctypes.c_void_p * max(1, len(storages)))(*[ctypes.addressof(f) for f in storages])
            plan.append((call, storages, pointers, scalars, array, grid))
        self._plans[key] = plan
        return plan

    def _run_host(self, tensors):
        specs = self._specs()
        for call, _, pointers, scalars, array, grid in self._host_plan(tensors):
            for storage, ref in pointers:
                storage.value = tensors[ref].pointer
            for storage, ref in scalars:
                ctypes.memmove(storage, _scalar_bytes(specs[ref], tensors[ref], "input %d" % ref[1]), 8)
            call(array, grid[0], grid[1], grid[2])

    def _workspace_host(self, kernel):
        key = ("cpu", "workspace", kernel.partition)
        need = max(8, workspace_bytes(kernel.launch, list(kernel.iteration_domain)))
        ws = self._scratch.get(key)
        if ws is None or len(ws) < need:
            ws = (ctypes.c_uint8 * need)()  # zeroed; the kernel leaves it zeroed again
            self._scratch[key] = ws
        return ws

    # -- CUDA ---------------------------------------------------------------

    def _run_cuda(self, tensors, device, stream):
        from tir import _cuda
        torch = _torch()
        driver = _cuda.driver()
        index = int(device.split(":")[1])
        with torch.cuda.device(index):
            torch.cuda.init()
            driver.use_device(index)
            if self._cuda is None:
                self._cuda = {}
            if index not in self._cuda:  # modules load per device (context)
                self._cuda[index] = [driver.load(k.binary, k.entry_symbol or "tir_kernel",
                                                 k.launch.dynamic_shared_memory_bytes) for k in self.proto.kernels]
            raw_stream = stream if isinstance(stream, int) else (stream or torch.cuda.current_stream(index)).cuda_stream

            def workspace(kernel, need):
                key = (device, "workspace", kernel.partition)
                ws = self._scratch.get(key)
                if ws is None or ws.numel() < need:
                    ws = torch.zeros(need, dtype=torch.uint8, device=device)  # the kernel leaves it zeroed
                    self._scratch[key] = ws
                return ws.data_ptr()

            def tensor_map(view, spec, box):
                return driver.tensor_map(view.pointer, view.shape, view.strides, dtype_bytes(spec.dtype),
                                         spec.dtype == graph_pb2.DTYPE_BF16, box)

            launches = cuda_launches(self.proto, self._specs(), tensors, workspace, tensor_map)
            for fn, (grid, block, smem, params) in zip(self._cuda[index], launches):
                driver.launch(fn, grid, block, smem, raw_stream, params)
