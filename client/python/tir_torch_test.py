"""The tir package with PyTorch against a live coordinator and a host worker:
models from torch.nn exported with tir.fx, compiled through the service, run
with Bundle.run and compared with eager; the bundle runner's checks; an
unsupported op; the service down; the torch.compile backend's partitioning
(called directly on torch 1.13, through torch.compile on torch >= 2).

Usage: tir_torch_test.py ADDRESS   (token "client-token", bundle key "bundle-key-1")
"""
import math
import struct
import sys
import time
import warnings

import numpy as np
import torch
import torch.nn.functional as F

import junit  # tests/testing: results as JUnit XML, skips counted as skips

import tir
import tir.fx
from tir import bundle as tir_bundle

address = sys.argv[1]
KEY = "bundle-key-1"
client = tir.Client(address, token="client-token", bundle_key=KEY, client_name="torch-test")
results = junit.Results("tir_torch_test")
failures = results.failures


def check(name, ok, detail=""):
    results.check(name, ok, detail)


def raises(fn, reason):
    try:
        fn()
    except tir.TirError as e:
        return e.reason == reason, str(e)
    except Exception as e:  # the wrong kind of error
        return False, "%s: %s" % (type(e).__name__, e)
    return False, "no error"


for _ in range(150):
    try:
        if any(w.state == "ready" for w in client.workers()):
            break
    except tir.TirError as e:
        if e.reason != "UNAVAILABLE":
            raise
    time.sleep(0.2)

torch.manual_seed(0)


# -- the models users write ----------------------------------------------------

class MLPBlock(torch.nn.Module):
    def __init__(self, d=64, hidden=128):
        super().__init__()
        self.fc1, self.fc2, self.act = torch.nn.Linear(d, hidden), torch.nn.Linear(hidden, d), torch.nn.GELU()

    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(x)))


class Norm(torch.nn.Module):
    def __init__(self, d=96):
        super().__init__()
        self.ln = torch.nn.LayerNorm(d)
        with torch.no_grad():
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        return self.ln(x)


class AttentionScores(torch.nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.d = d

    def forward(self, q, k):
        return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.d), dim=-1)


class RMSNorm(torch.nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.rand(d) + 0.5)

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class GatedMLP(torch.nn.Module):
    def __init__(self, d=64, hidden=96):
        super().__init__()
        self.norm = RMSNorm(d)
        self.gate = torch.nn.Linear(d, hidden, bias=False)
        self.up = torch.nn.Linear(d, hidden, bias=False)
        self.down = torch.nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        h = self.norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


def close(got, want, dtype=torch.float32):
    tol = {torch.float32: 1e-4, torch.float16: 2e-2, torch.bfloat16: 5e-2}[dtype]
    err = ((got.double() - want.double()).norm() / max(want.double().norm().item(), 1e-30)).item()
    return err <= tol, "relative L2 error %.3g, bound %g" % (err, tol)


models = [
    ("MLP block (linear + bias + GELU + residual)", MLPBlock(), (torch.randn(4, 16, 64),)),
    ("layer norm", Norm(), (torch.randn(24, 96),)),
    ("softmax attention scores", AttentionScores(), (torch.randn(2, 4, 16, 32), torch.randn(2, 4, 16, 32))),
    ("RMSNorm + SiLU-gated MLP", GatedMLP(), (torch.randn(12, 64),)),
]
for name, model, example in models:
    model.eval()
    exported = tir.fx.export(model, example)
    params = [n for kind, n in exported.inputs if kind == "param"]
    check(name + ": exported with its parameters lifted after the inputs",
          exported.inputs[:len(example)] == [("input", i) for i in range(len(example))] and
          params == [n for n, _ in model.named_parameters()], str(exported.inputs))
    compiled = tir.fx.compile(model, example, arch="host", client=client)
    with torch.no_grad():
        want = model(*example)
    got = compiled(*example)
    ok, detail = close(got, want)
    check(name + ": the compiled module matches eager", ok and got.shape == want.shape, detail)
    fresh = tuple(torch.randn_like(t) for t in example)
    with torch.no_grad():
        want = model(*fresh)
    ok, detail = close(compiled(*fresh), want)
    check(name + ": and on other values (one bundle, new inputs)", ok, detail)
    check(name + ": the bundle was tuned and verified by the worker",
          compiled.bundle.proto.tuning.tuned and all(k.verification.verdict == 1 for k in compiled.bundle.proto.kernels))

# Parameters are read at call time: an updated weight is used.
mlp, x = models[0][1], models[0][2][0]
compiled = tir.fx.compile(mlp, (x,), arch="host", client=client)
with torch.no_grad():
    mlp.fc2.bias.add_(1.0)
    want = mlp(x)
ok, detail = close(compiled(x), want)
check("an updated parameter is what the next call reads", ok, detail)

# Keyword arguments bind like the module's forward.
att, (q, k) = models[2][1], models[2][2]
compiled = tir.fx.compile(att, (q, k), arch="host", client=client)
ok, detail = close(compiled(q, k=k), att(q, k))
check("keyword arguments follow forward's signature", ok, detail)

# A non-contiguous input is laid out as exported (contiguous) before the run.
qt = q.transpose(-2, -1).contiguous().transpose(-2, -1)
ok, detail = close(compiled(qt, k), att(qt, k))
check("a non-contiguous argument is made contiguous for a contiguous export", ok, detail)

# An input exported with its strides keeps them: the graph declares them.
exported = tir.fx.export(att, (qt, k))
check("an input's strides are the example's (tir.stride)", 'tir.stride = "(2048,512,1,16)"' in exported.text,
      exported.text.splitlines()[0])

# Dynamic dims: one export, a bundle per shape asked (the service's buckets).
mlp2 = MLPBlock(32, 48).eval()
x4 = torch.randn(4, 32)
dyn = tir.fx.compile(mlp2, (x4,), arch="host", client=client, dynamic={0: [0]})
check("dynamic={0: [0]} writes a `?` dim", "tensor<?x32xf32>" in dyn.exported.text, dyn.exported.text.splitlines()[0])
all_ok = True
for rows in (4, 7, 16):
    xr = torch.randn(rows, 32)
    ok, detail = close(dyn(xr), mlp2(xr))
    all_ok = all_ok and ok
check("a dynamic export runs at 4, 7 and 16 rows", all_ok, detail)
check("each shape has its own sized bundle", len(dyn._bundles) == 3 and
      all(not s.dynamic for b in dyn._bundles.values() for s in b.inputs))


# A dynamic sequence length through view/transpose: multi-head attention
# scores; the view's `?` takes its size from the input's dim.
class HeadScores(torch.nn.Module):
    def __init__(self, d=32, heads=4):
        super().__init__()
        self.heads, self.q, self.k = heads, torch.nn.Linear(d, d), torch.nn.Linear(d, d)

    def forward(self, x):
        b, s, d = x.size(0), x.size(1), x.size(2)
        q = self.q(x).view(b, s, self.heads, d // self.heads).transpose(1, 2)
        k = self.k(x).view(b, s, self.heads, d // self.heads).transpose(1, 2)
        return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d // self.heads), dim=-1)


heads = HeadScores().eval()
seq = tir.fx.compile(heads, (torch.randn(2, 8, 32),), arch="host", client=client, dynamic={0: [1]})
check("a view of a dynamic dim is sized by a dim of the input",
      "dynamic_dims(" in seq.exported.text and "= dim %in0 dimension = 1" in seq.exported.text)
all_ok = True
for s_len in (8, 5, 13):
    xs = torch.randn(2, s_len, 32)
    with torch.no_grad():
        ok, detail = close(seq(xs), heads(xs))
    all_ok = all_ok and ok
check("multi-head scores with a dynamic sequence length run at 8, 5 and 13", all_ok, detail)


# What users' modules return and take, beyond one tensor in, one out.
class Returns(torch.nn.Module):
    def forward(self, x):
        y = torch.tanh(x)
        return y, y, x, (x * x).sum(), x.mean()


xr = torch.randn(4, 8)
ret = tir.fx.compile(Returns(), (xr,), arch="host", client=client)
got, want = ret(xr), Returns()(xr)
ok = all(g.shape == w.shape and torch.allclose(g, w, rtol=1e-4, atol=1e-5) for g, w in zip(got, want))
check("a result twice, an input returned, rank-0 sums: all as eager", ok,
      str([(tuple(g.shape), tuple(w.shape)) for g, w in zip(got, want)]))
check("... the repeated result is one graph result", ret.exported.text.count("results") == 1 and
      len(ret.bundle.outputs) == 3, str(len(ret.bundle.outputs)))


class DictReturns(torch.nn.Module):
    """Outputs as Hugging Face models return them: a dict."""

    def forward(self, x):
        h = torch.tanh(x)
        return {"hidden": h, "pooled": h.mean(1), "probs": torch.softmax(h, -1)}


dret = tir.fx.compile(DictReturns(), (xr,), arch="host", client=client)
got, want = dret(xr), DictReturns()(xr)
check("a module returning a dict returns the same dict (keys, order, values)",
      isinstance(got, dict) and list(got) == list(want)
      and all(torch.allclose(got[k], want[k], rtol=1e-4, atol=1e-5) for k in want), str(type(got)))


class Identity(torch.nn.Module):
    def forward(self, x):
        return F.dropout(x, p=0.1, training=False)


ident = tir.fx.compile(Identity(), (xr,), arch="host", client=client)
check("a module that computes nothing returns its input (no bundle)", ident(xr) is xr and ident.bundle is None)


class Pieces(torch.nn.Module):
    def forward(self, x, scale=0.5):
        a, b = x.split([3, 5], dim=1)[0], x.split([3, 5], dim=1)[1]
        return a.sum(-1, keepdim=True) * scale + b[:, :x.shape[1] // 4].amax(-1, keepdim=True)


pieces = tir.fx.compile(Pieces(), (xr,), arch="host", client=client)
ok, detail = close(pieces(xr), Pieces()(xr))
check("split pieces, a slice sized from the shape, a defaulted number", ok, detail)
ok, detail = raises(lambda: pieces(xr, 0.25), "INVALID_ARGUMENT")
check("a number other than the one compiled for is refused", ok and "0.5" in detail, detail)
ok, detail = raises(lambda: pieces(), "INVALID_ARGUMENT")
check("a missing argument is INVALID_ARGUMENT", ok, detail)


class Bitcast(torch.nn.Module):
    def forward(self, x):
        return x.view(torch.int32) + 1


ok, detail = raises(lambda: tir.fx.export(Bitcast(), (xr,)), "UNSUPPORTED_OP")
check("view as another dtype is refused, not reshaped", ok, detail)


class HalfSoftmax(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


# A bf16 softmax is written in f32 and rounded once, as torch computes it:
# the max and sum reduce f32 values, the result is converted back.
half = tir.fx.export(HalfSoftmax(), (torch.randn(4, 64).to(torch.bfloat16),)).text
check("a bf16 softmax is exported as f32 arithmetic with one conversion back",
      "reduction_mode = <max>> : tensor<4x64xf32>" in half and "reduction_mode = <add>> : tensor<4x64xf32>" in half
      and "tensor<4x64xf32> -> tensor<4x64xbf16>" in half, half)


class EmptySlice(torch.nn.Module):
    def forward(self, x):
        return x[:, 5:5] * 2


ok, detail = raises(lambda: tir.fx.export(EmptySlice(), (xr,)), "UNSUPPORTED_OP")
check("a zero-size slice is refused", ok and "zero-size" in detail, detail)

# A replaced Parameter (not only an in-place update) is what the next call reads.
lin = torch.nn.Sequential(torch.nn.Linear(8, 6)).eval()
flin = tir.fx.compile(lin, (xr,), arch="host", client=client)
lin[0].weight = torch.nn.Parameter(torch.randn(6, 8))
with torch.no_grad():
    ok, detail = close(flin(xr), lin(xr))
check("a replaced Parameter is read by the next call", ok, detail)

ro = np.frombuffer(bytes(8 * 16 * 4), np.float32).reshape(8, 16)


# -- Bundle.run: numpy, out=, errors ----------------------------------------

graph = """tir.graph @scale(%x: tensor<8x16xf32>, %b: tensor<1x16xf32>) -> tensor<8x16xf32> {
  %y = add %x, %b : (tensor<8x16xf32>, tensor<1x16xf32>) -> tensor<8x16xf32>
  %e = tanh_fwd %y : tensor<8x16xf32>
  results %e : tensor<8x16xf32>
}
"""
bundle = tir.compile(graph, arch="host", client=client)
xs = np.random.rand(8, 16).astype(np.float32)
bs = np.random.rand(1, 16).astype(np.float32)
(y,) = bundle.run(xs, bs)
check("numpy in, numpy out", isinstance(y, np.ndarray) and np.allclose(y, np.tanh(xs + bs), atol=1e-6))
out = np.empty((8, 16), dtype=np.float32)
(y2,) = bundle.run(xs, bs, out=out)
check("out= is written in place", y2 is out and np.allclose(out, np.tanh(xs + bs), atol=1e-6))
tx, tb = torch.from_numpy(xs), torch.from_numpy(bs)
(yt,) = bundle.run(tx, tb)
check("torch CPU tensors in, a torch tensor out", isinstance(yt, torch.Tensor) and torch.allclose(yt, torch.tanh(tx + tb), atol=1e-6))
class Capsule:
    """Another framework's tensor: only the DLPack protocol."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, stream=None):
        return self._array.__dlpack__()

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


(yd,) = bundle.run(Capsule(xs), memoryview(bs))
check("DLPack and buffer-protocol inputs", np.allclose(yd, np.tanh(xs + bs), atol=1e-6))
ok, detail = raises(lambda: bundle.run(xs), "INPUT_MISMATCH")
check("a missing input is INPUT_MISMATCH", ok and "takes 2 inputs" in detail, detail)
ok, detail = raises(lambda: bundle.run(xs[:4], bs), "INPUT_MISMATCH")
check("a wrong shape is INPUT_MISMATCH naming the input", ok and "input 0" in detail and "[8, 16]" in detail, detail)
ok, detail = raises(lambda: bundle.run(xs.astype(np.float64), bs), "INPUT_MISMATCH")
check("a wrong dtype is INPUT_MISMATCH", ok and "f32" in detail, detail)
ok, detail = raises(lambda: bundle.run(np.asfortranarray(xs), bs), "LAYOUT_CONTRACT_VIOLATED")
check("a transposed layout is LAYOUT_CONTRACT_VIOLATED", ok, detail)
ok, detail = raises(lambda: bundle.run(xs, bs, out=np.empty((8, 16), np.float64)), "INPUT_MISMATCH")
check("a wrong out= is INPUT_MISMATCH", ok, detail)
ok, detail = raises(lambda: bundle.run("not a tensor", bs), "INPUT_MISMATCH")
check("a string is not a tensor", ok, detail)
ok, detail = raises(lambda: bundle.run(xs, bs, out=ro), "INPUT_MISMATCH")
check("a read-only out= is refused", ok and "read-only" in detail and not ro.any(), detail)
rank0 = tir.compile("""tir.graph @rank0(%x: tensor<f32>) -> tensor<f32> {
  %e = exp %x : tensor<f32>
  results %e : tensor<f32>
}
""", arch="host", client=client)
(e0,) = rank0.run(np.array(1.0, np.float32))
check("a rank-0 graph runs (its one-entry domain)", e0.shape == () and abs(float(e0) - math.e) < 1e-5, str(e0))

# The signature is checked before any binary is loaded.
tampered = tir.Bundle(bundle.proto.__class__.FromString(bundle.proto.SerializeToString()), bundle_key=KEY)
tampered.proto.kernels[0].binary = tampered.proto.kernels[0].binary + b"\0"
ok, detail = raises(lambda: tampered.run(xs, bs), "BUNDLE_SIGNATURE_INVALID")
check("an altered bundle is refused (BUNDLE_SIGNATURE_INVALID) before it loads", ok and tampered._host is None, detail)
ok, detail = raises(lambda: tir.Bundle(bundle.proto, bundle_key="another-key").run(xs, bs), "BUNDLE_KEY_MISMATCH")
check("a bundle signed with another key is refused", ok, detail)

# A cubin bundle on CPU tensors is refused with the reason; the driver is
# reported missing on a machine without one.
gpu = bundle.proto.__class__.FromString(bundle.proto.SerializeToString())
for k in gpu.kernels:
    k.format = 1  # BINARY_FORMAT_CUBIN
ok, detail = raises(lambda: tir.Bundle(gpu).run(xs, bs), "INPUT_MISMATCH")
check("a cubin bundle wants CUDA tensors", ok and "CUDA tensors" in detail, detail)
if not torch.cuda.is_available():
    from tir import _cuda
    try:
        _cuda.driver()
        check("no GPU here: the CUDA driver is reported unavailable", False, "driver() returned")
    except tir.TirError as e:
        check("no GPU here: the CUDA driver is reported unavailable (%s)" % e.reason,
              e.reason in ("CUDA_DRIVER_UNAVAILABLE",), str(e))
    results.skip("the CUDA run of Bundle.run", "needs a GPU (torch.cuda.is_available() is False)")

# The CUDA launch of the same records, packed without a GPU: every record of
# this bundle is an 8-byte field (pointers, sizes, strides, the domain), so
# the struct is those values in record order; the launch's own strides are
# used (input 0 here laid out with padded rows).
class FakeView:
    def __init__(self, pointer, shape, strides):
        self.pointer, self.shape, self.strides = pointer, tuple(shape), tuple(strides)


views = {(tir_bundle.INPUT, 0): FakeView(0x1000, (8, 16), (24, 1)),
         (tir_bundle.INPUT, 1): FakeView(0x2000, (1, 16), (16, 1)),
         (tir_bundle.OUTPUT, 0): FakeView(0x3000, (8, 16), (16, 1))}
proto = bundle.proto
launches = list(tir_bundle.cuda_launches(proto, tir.Bundle(proto)._specs(), views, None, None))
want_ok = len(launches) == len(proto.kernels)
for k, (grid, block, smem, params) in zip(proto.kernels, launches):
    values = []
    for a in k.arguments:
        ref = (a.tensor.kind, a.tensor.index)
        if a.kind == 1:  # POINTER
            values.append(views[ref].pointer)
        elif a.tensor.kind == tir_bundle.DOMAIN:
            values.append(k.iteration_domain[a.dim])
        else:  # SIZE, STRIDE
            values.append((views[ref].shape if a.kind == 2 else views[ref].strides)[a.dim])
    want_ok = want_ok and params == struct.pack("<%dq" % len(values), *values) and block[0] == k.launch.block[0]
check("a cubin launch packs the argument records into the struct (offsets, order, the launch's strides)", want_ok)

# The CUDA parameter struct: natural alignment, a tensor map at 64 bytes.
F_ = tir_bundle.Field
layout = tir_bundle.struct_layout([F_("pointer"), F_("array", values=[3, 4], size=16), F_("scalar", size=2),
                                   F_("scalar", size=4), F_("map", size=128), F_("pointer")])
check("the CUDA struct lays fields out at natural alignment", layout == ([0, 8, 24, 28, 64, 192], 256, 64), str(layout))
from tir import _cuda  # noqa: E402
check("a TMA operand needs inner stride 1 and 16-byte rows",
      _cuda.tensor_map_encodable(4096, (64, 64), (64, 1), 2) and not _cuda.tensor_map_encodable(4096, (64, 63), (63, 1), 2)
      and not _cuda.tensor_map_encodable(4096, (64, 64), (1, 64), 2))


# -- what is not written --------------------------------------------------------

class WithCumsum(torch.nn.Module):
    def forward(self, x):
        return torch.cumsum(torch.relu(x), dim=1) * 2.0


ok, detail = raises(lambda: tir.fx.export(WithCumsum(), (torch.randn(4, 8),)), "UNSUPPORTED_OP")
check("an unsupported op names its node and target", ok and "cumsum" in detail and "node" in detail, detail)


class Branchy(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x
        return -x


ok, detail = raises(lambda: tir.fx.export(Branchy(), (torch.randn(4, 8),)), "UNSUPPORTED_OP")
check("data-dependent control flow is a clear error", ok and "cannot trace" in detail, detail)


# -- the service down -------------------------------------------------------------

down = "127.0.0.1:1"
t0 = time.monotonic()
ok, detail = raises(lambda: tir.fx.compile(MLPBlock(8, 8), (torch.randn(2, 8),), arch="host", server=down),
                    "UNAVAILABLE")
check("compile with the service down is UNAVAILABLE, within seconds", ok and time.monotonic() - t0 < 30, detail)


# -- the torch.compile backend ----------------------------------------------------

class Mixed(torch.nn.Module):
    """Two regions tir writes around one it does not (cumsum)."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x):
        h = F.gelu(self.fc(x)) + x
        c = torch.cumsum(h, dim=-1)
        return torch.softmax(c * 0.1, dim=-1)


mixed = Mixed().eval()
xm = torch.randn(8, 16)
with torch.no_grad():
    want = mixed(xm)
backend = tir.torch_backend(client=client, arch="host")
gm = torch.fx.symbolic_trace(mixed)
with warnings.catch_warnings(record=True) as caught, torch.no_grad():
    warnings.simplefilter("always")
    run = backend(gm, [xm])
    got = run(xm)
ok, detail = close(got, want)
check("the backend runs tir regions around an eager one and matches eager", ok, detail)
check("two regions compiled, none fell back", backend.regions_compiled == 2 and backend.regions_eager == 0,
      "%d compiled, %d eager: %s" % (backend.regions_compiled, backend.regions_eager, backend.warnings))
check("the tir regions ran", backend.regions_run == 2, str(backend.regions_run))
check("no warning when all is well", not caught, str([str(w.message) for w in caught]))

check("the backend leaves the caller's GraphModule as it is",
      not any(n.startswith("fused_") for n, _ in gm.named_children()))
with warnings.catch_warnings(record=True) as caught, torch.no_grad():
    warnings.simplefilter("always")
    bigger = torch.randn(3, 16)  # another shape than the regions were compiled for
    ok, detail = close(run(bigger), mixed(bigger))
    ok2, detail2 = close(run(xm), want)
check("a call at another shape runs eagerly and matches", ok, detail)
check("... and the tir regions run again at the compiled shape", ok2 and backend.regions_run == 4,
      "%s, %d runs" % (detail2, backend.regions_run))
xg = xm.clone().requires_grad_()
graded = run(xg)
(graded * graded).sum().backward()
xe = xm.clone().requires_grad_()
weight_grad = mixed.fc.weight.grad.clone()
mixed.zero_grad()
(mixed(xe) ** 2).sum().backward()
ok, detail = close(graded.detach(), want)
ok_g, detail_g = close(torch.cat([xg.grad.flatten(), weight_grad.flatten()]),
                       torch.cat([xe.grad.flatten(), mixed.fc.weight.grad.flatten()]))
check("with gradients required the tir regions still run and their outputs carry eager's gradients",
      ok and ok_g and backend.regions_run == 6, "%s %s, %d runs" % (detail, detail_g, backend.regions_run))
mixed.zero_grad()

backend = tir.torch_backend(server=down, arch="host", timeout=10)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    run = backend(torch.fx.symbolic_trace(mixed), [xm])
    got = run(xm)
    got = run(xm)
ok, detail = close(got, want)
check("with the service down the backend runs eagerly and matches", ok, detail)
check("... with one warning", len([w for w in caught if "tir" in str(w.message)]) == 1,
      str([str(w.message) for w in caught]))

if hasattr(torch, "compile"):
    backend = tir.torch_backend(client=client, arch="host")
    model = torch.compile(MLPBlock(32, 32).eval(), backend=backend)
    xc = torch.randn(4, 32)
    with torch.no_grad():
        ok, detail = close(model(xc), model._orig_mod(xc))
    check("torch.compile(backend=tir.torch_backend()) matches eager", ok and backend.regions_compiled >= 1, detail)
else:
    results.skip("torch.compile(backend=tir.torch_backend())",
                 "needs torch >= 2; this is torch %s (the backend was tested by calling it on traced graphs above)"
                 % torch.__version__)

client.close()
if results.failures:
    print("%d failed: %s" % (len(results.failures), results.failures))
else:
    print("all passed")
sys.exit(results.exit())
