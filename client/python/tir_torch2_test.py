"""tir under PyTorch 2 (run in the torch 2 chroot by torch2_test.sh): the
torch.compile backend under Dynamo and tir.fx's torch.export path, against a
live coordinator and a host worker.

What a PyTorch user would notice is asserted: outputs match eager; tir stays
in use (its regions run, no fallback warning) on static shapes, on a batch
that varies and with dynamic=True; in-place updates of buffers and inputs
happen once per call; gradients match eager; a region that fails at run
time is disabled after one warning; models export as they are written.

Usage: tir_torch2_test.py ADDRESS   (token "client-token", bundle key "bundle-key-1")
"""
import collections
import dataclasses
import math
import sys
import time
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

import junit

import tir
import tir.fx
from tir import regions
from tir.backend import TirBackend

address = sys.argv[1]
KEY = "bundle-key-1"
client = tir.Client(address, token="client-token", bundle_key=KEY, client_name="torch2-test")
results = junit.Results("tir_torch2_test")
# Two candidates a kernel: what is asserted is that tir's answer is used and right, not how well it was tuned.
OPTIONS = {"server": address, "token": "client-token", "bundle_key": KEY, "arch": "host", "max_candidates": 2}

for _ in range(150):
    try:
        if any(w.state == "ready" for w in client.workers()):
            break
    except tir.TirError as e:
        if e.reason != "UNAVAILABLE":
            raise
    time.sleep(0.2)

torch.manual_seed(0)
print("torch", torch.__version__)


def check(name, ok, detail=""):
    results.check(name, ok, detail)


def leaves(x):
    import torch.utils._pytree as pytree
    return [t for t in pytree.tree_leaves(x) if isinstance(t, torch.Tensor)]


def close(got, want, tol=1e-4):
    a, b = leaves(got), leaves(want)
    if len(a) != len(b):
        return False, "%d outputs, eager %d" % (len(a), len(b))
    for x, y in zip(a, b):
        if x.shape != y.shape:
            return False, "shape %s, eager %s" % (tuple(x.shape), tuple(y.shape))
        if not torch.allclose(x.float(), y.float(), rtol=tol, atol=tol):
            return False, "max |diff| %.3g" % (x.float() - y.float()).abs().max().item()
    return True, ""


def backend(**extra):
    return tir.torch_backend(client=client, arch="host", max_candidates=2, **extra)


def fallbacks(caught):
    return [str(w.message) for w in caught if "tir" in str(w.message)]


# -- models as people write them ---------------------------------------------------

class MLP(nn.Module):
    def __init__(self, n=32):
        super().__init__()
        self.c_fc, self.c_proj = nn.Linear(n, 4 * n), nn.Linear(4 * n, n)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x)))


class CausalSelfAttention(nn.Module):
    """nanoGPT's, unedited."""

    def __init__(self, n_embd=32, n_head=4, block_size=64):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head, self.n_embd = n_head, n_embd
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, n_embd=32):
        super().__init__()
        self.ln_1, self.attn = nn.LayerNorm(n_embd), CausalSelfAttention(n_embd)
        self.ln_2, self.mlp = nn.LayerNorm(n_embd), MLP(n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class SdpaAttention(nn.Module):
    def __init__(self, n=32, heads=4):
        super().__init__()
        self.qkv, self.heads = nn.Linear(n, 3 * n), heads

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C)


class Counter(nn.Module):
    """A step counter and a running sum, updated in place (as KV caches and
    BatchNorm statistics are)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.register_buffer("steps", torch.zeros(()))
        self.register_buffer("total", torch.zeros(16))

    def forward(self, x):
        self.steps.add_(1)
        y = torch.relu(self.fc(x))
        self.total.add_(y.sum(0))
        return y * self.steps


class DictOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 8)

    def forward(self, x):
        h = self.fc(x)
        return {"logits": torch.log_softmax(h, -1), "hidden": h, "norm": h.pow(2).mean(-1)}


NT = collections.namedtuple("NT", "scores top")


@dataclasses.dataclass
class Output:
    last_hidden_state: torch.Tensor
    pooled: torch.Tensor


class DataclassOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        h = torch.tanh(self.fc(x))
        return Output(h, h.mean(1))


class Ops(nn.Module):
    """The ops models write that tir writes too."""

    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(16)

    def forward(self, x, y):
        a = torch.where(x > 0, x, torch.zeros_like(x)).clamp(-0.5, 0.5)
        b = y.masked_fill(y < -1, 0.0) + torch.ones_like(y) * 0.25 + torch.full_like(y, 2.0)
        c = self.bn(x) * x.var(1, keepdim=True) + x.std(0)
        d = torch.logsumexp(y, dim=1, keepdim=True) + (x * 7) // 2
        return a + b + c + d


class Embed(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.fc = nn.Embedding(100, 16), nn.Linear(16, 16)

    def forward(self, idx):
        return self.fc(self.emb(idx)).sum(1)


class InputUpdate(nn.Module):
    def forward(self, x):
        x.mul_(2)
        return x + 1


# -- the backend under Dynamo ---------------------------------------------------------

def run_compiled(name, model, make, calls, dynamic=None, be=None, tol=1e-4, expect_regions=True):
    """torch.compile(model) called at each of `calls` sizes; outputs against
    eager, warnings, and how often tir's regions ran."""
    torch._dynamo.reset()
    be = be or backend()
    compiled = torch.compile(model, backend=be, dynamic=dynamic)
    oks, details = [], []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runs = []
        for size in calls:
            args = make(size)
            with torch.no_grad():
                got = compiled(*args)
                want = model(*args)
            ok, detail = close(got, want, tol)
            oks.append(ok)
            details.append(detail)
            runs.append(be.regions_run)
    check("%s: outputs match eager at every size %s" % (name, list(calls)), all(oks), str(details))
    check("%s: no tir fallback warning" % name, not fallbacks(caught), str(fallbacks(caught) or be.warnings))
    if expect_regions:
        grew = all(b > a for a, b in zip([0] + runs, runs))
        check("%s: tir regions ran at every call (symbolic sizes included)" % name,
              be.regions_compiled >= 1 and grew, "%d compiled, runs after each call %s; left eager: %s"
              % (be.regions_compiled, runs, sorted(set(be.refusals))[:6]))
    return be


mlp = MLP().eval()
run_compiled("MLP, static", mlp, lambda n: (torch.randn(8, 32),), [0, 1])
run_compiled("MLP, a batch that varies", mlp, lambda n: (torch.randn(n, 32),), [4, 6, 9, 13])
run_compiled("MLP, dynamic=True", mlp, lambda n: (torch.randn(n, 32),), [5, 11], dynamic=True)
block = Block().eval()
run_compiled("nanoGPT block (causal masked attention), static", block, lambda n: (torch.randn(2, 16, 32),), [0])
run_compiled("nanoGPT block, a sequence that varies", block, lambda n: (torch.randn(2, n, 32),), [8, 12, 20])
run_compiled("nanoGPT block, dynamic=True", block, lambda n: (torch.randn(n, n + 3, 32),), [2, 3], dynamic=True)
run_compiled("scaled_dot_product_attention, causal", SdpaAttention().eval(), lambda n: (torch.randn(2, n, 32),),
             [8, 16])
run_compiled("a model returning a dict", DictOut(), lambda n: (torch.randn(n, 16),), [4, 7])
run_compiled("where, masked_fill, clamp, batch_norm (eval), var, std, logsumexp, *_like, //", Ops().eval(),
             lambda n: (torch.randn(n, 16), torch.randn(n, 16) * 2), [6, 10])
run_compiled("embedding", Embed().eval(), lambda n: (torch.randint(0, 100, (n, 5)),), [4, 9])

# In-place updates: once per call, as eager.
torch._dynamo.reset()
counter = Counter()
be = backend()
compiled = torch.compile(counter, backend=be)
x = torch.randn(4, 16)
with torch.no_grad():
    for _ in range(3):
        compiled(x)
eager = Counter()
eager.load_state_dict({k: v for k, v in counter.state_dict().items() if not k.endswith(("steps", "total"))},
                      strict=False)
with torch.no_grad():
    for _ in range(3):
        want = eager(x)
check("a buffer updated in place is updated once per call (3 calls: steps 3)", counter.steps.item() == 3,
      "steps %s" % counter.steps.item())
ok, detail = close(counter.total, eager.total)
check("... and a running sum in place matches eager's", ok, detail)

torch._dynamo.reset()
be = backend()
f = torch.compile(InputUpdate(), backend=be)
x = torch.ones(4, 8)
with torch.no_grad():
    y = f(x)
check("an input updated in place is updated once (x.mul_(2) on ones: 2, not 4)",
      bool((x == 2).all()) and bool((y == 3).all()), "x %s y %s" % (x.flatten()[:2].tolist(), y.flatten()[:2].tolist()))

# Training: the forward in tir, the backward eager through AOTAutograd.
for name, model, make in [("MLP", MLP(), lambda: torch.randn(6, 32)),
                          ("nanoGPT block", Block(), lambda: torch.randn(2, 12, 32))]:
    torch._dynamo.reset()
    be = backend()
    compiled = torch.compile(model, backend=be)
    x0 = make()
    x1, x2 = x0.clone().requires_grad_(), x0.clone().requires_grad_()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = compiled(x1)
        (out * out).sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    ref = model(x2)
    (ref * ref).sum().backward()
    ok, detail = close(out.detach(), ref.detach())
    check("training %s: outputs match eager" % name, ok, detail)
    ok, detail = close([x1.grad] + grads, [x2.grad] + [p.grad for p in model.parameters()], tol=1e-3)
    check("training %s: input and parameter gradients match eager" % name, ok, detail)
    check("training %s: the forward ran in tir, with no fallback" % name,
          be.regions_run >= 1 and not fallbacks(caught), "%d runs, %s" % (be.regions_run, fallbacks(caught)))

# Every fallback visible: each node left eager is in `refusals` with its
# reason, tir.explain says the same without compiling, a dynamic model with
# SDPA still partitions (a refused node is refused once), options that
# cannot work are an error, and progress goes to logging off a terminal.
class Unwritten(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.lin = nn.Conv1d(4, 4, 3, padding=1), nn.Linear(8, 8)

    def forward(self, x):
        y = self.conv(x)
        return self.lin(y).exp() + 1, torch.cumsum(y, -1), torch.topk(y, 2, dim=-1).values, torch.argmax(y, -1)


torch._dynamo.reset()
be = backend()
x = torch.randn(2, 4, 8)
m = Unwritten().eval()
with warnings.catch_warnings(record=True):
    warnings.simplefilter("always")
    with torch.no_grad():
        ok, detail = close(torch.compile(m, backend=be)(x), m(x))
check("a model with ops tir does not write matches eager", ok, detail)
for op in ("convolution", "cumsum", "topk", "argmax"):
    check("refusals name %s with its reason" % op,
          any("aten::%s" % op in r and "not an op tir writes" in r for r in be.refusals), str(be.refusals))
check("... and the region around them ran in tir", be.regions_run >= 1, "%d runs" % be.regions_run)
explained = tir.explain(m, x)
check("tir.explain lists the same nodes left eager, and the region",
      len(explained.regions) == 1 and sum("not an op tir writes" in r for r in explained.refusals) == 4,
      str(explained))

torch._dynamo.reset()
be = backend()
attention = SdpaAttention().eval()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with torch.no_grad():
        oks = []
        for t in (8, 13):
            x = torch.randn(2, t, 32)
            oks.append(close(torch.compile(attention, backend=be, dynamic=True)(x), attention(x)))
check("dynamic=True with SDPA matches eager at two lengths", all(ok for ok, _ in oks), str(oks))
check("dynamic=True with SDPA partitions: no whole-graph fallback",
      not any("refused %d times" % regions.MAX_ROUNDS in str(w.message) for w in caught)
      and not any("refused %d times" % regions.MAX_ROUNDS in r for r in be.refusals),
      str(be.warnings[:2]))
refused = [r for r in be.refusals if "node " in r]
check("... and each node it leaves eager is listed once", len(refused) == len(set(refused)), str(refused[:6]))

try:
    tir.torch_backend(server=address)
    check("a backend with a server and no arch is an error", False, "no error")
except ValueError as e:
    check("a backend with a server and no arch is an error", "needs arch" in str(e), str(e))

import logging  # noqa: E402


class Records(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


records = Records()
logging.getLogger("tir").addHandler(records)
logging.getLogger("tir").setLevel(logging.INFO)
tir.compile("tir.graph @logged(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {\n  %y = exp %x : tensor<16x16xf32>\n"
            "  results %y : tensor<16x16xf32>\n}\n", arch="host", client=client, max_candidates=2)
logging.getLogger("tir").removeHandler(records)
check("off a terminal, a compile's progress goes to the \"tir\" logger", any("tir: " in m for m in records.messages),
      str(records.messages[:3]))

# The entry point: torch.compile(model, backend="tir").
check("\"tir\" is a registered torch.compile backend (torch_dynamo_backends entry point)",
      "tir" in torch._dynamo.list_backends(), str(torch._dynamo.list_backends()))
torch._dynamo.reset()
compiled = torch.compile(mlp, backend="tir", options=OPTIONS)
x = torch.randn(5, 32)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with torch.no_grad():
        ok, detail = close(compiled(x), mlp(x))
check("torch.compile(model, backend=\"tir\", options=...) matches eager, with no fallback",
      ok and not fallbacks(caught), detail + str(fallbacks(caught)))


# A region that fails at run time: disabled after its first failure, one warning.
class Broken:
    def run(self, *tensors):
        raise tir.TirError(None, "KERNEL_FAILED", "a planted failure")


class BrokenBackend(TirBackend):
    def compile_graph(self, text, shapes):
        return Broken()


torch._dynamo.reset()
be = BrokenBackend(client=client, arch="host")
compiled = torch.compile(mlp, backend=be)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    outs = []
    with torch.no_grad():
        for _ in range(4):
            outs.append(close(compiled(x), mlp(x))[0])
check("a region failing at run time: every call still matches eager", all(outs), str(outs))
check("... with one warning, and the warning list does not grow per call",
      len(fallbacks(caught)) == 1 and len(be.warnings) == 1, "%s / %s" % (fallbacks(caught), be.warnings))
be2 = TirBackend()
for i in range(3 * TirBackend.MAX_WARNINGS):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        be2.warn("message %d" % i)
check("the backend keeps at most MAX_WARNINGS messages", len(be2.warnings) == TirBackend.MAX_WARNINGS
      and be2.warnings_dropped == 2 * TirBackend.MAX_WARNINGS, "%d kept" % len(be2.warnings))


# -- tir.fx through torch.export ------------------------------------------------------

def fx_case(name, model, args, dynamic=None, again=None, tol=1e-4):
    try:
        t0 = time.monotonic()
        compiled = tir.fx.compile(model, args, arch="host", client=client, dynamic=dynamic, max_candidates=2)
        with torch.no_grad():
            got = compiled(*args)
            want = model(*args)
        ok, detail = close(got, want, tol)
        check("tir.fx.compile %s matches eager (%.1f s)" % (name, time.monotonic() - t0), ok, detail)
        check("... and returns what the module returns (%s)" % type(want).__name__,
              type(got) == type(want) and (not isinstance(want, dict) or list(got) == list(want)), type(got).__name__)
        if again is not None:
            with torch.no_grad():
                ok, detail = close(compiled(*again), model(*again), tol)
            check("... and at another size of its dynamic dims", ok, detail)
    except tir.TirError as e:
        check("tir.fx.compile %s" % name, False, str(e)[:1500])


fx_case("of a nanoGPT block as written (split, size() unpacking, masked_fill, the mask sliced by T)", block,
        (torch.randn(2, 16, 32),))
fx_case("of a nanoGPT block with T dynamic", block, (torch.randn(2, 16, 32),), dynamic={0: [1]},
        again=(torch.randn(2, 24, 32),))
fx_case("of a model returning a dict", DictOut(), (torch.randn(4, 16),))
fx_case("of a model returning a dataclass", DataclassOut(), (torch.randn(2, 6, 16),))


class NamedTupleOut(nn.Module):
    def forward(self, x):
        return NT(torch.softmax(x, -1), x.amax(-1))


fx_case("of a model returning a namedtuple", NamedTupleOut(), (torch.randn(3, 9),))
try:
    counter = Counter()
    compiled = tir.fx.compile(counter, (torch.randn(4, 16),), arch="host", client=client, max_candidates=2)
    with torch.no_grad():
        for _ in range(2):
            compiled(torch.randn(4, 16))
    check("tir.fx.compile: a buffer updated in place is updated once per call (2 calls: steps 2)",
          counter.steps.item() == 2, "steps %s" % counter.steps.item())
except Exception as e:  # noqa: BLE001 - reported as this check's failure
    check("tir.fx.compile: a buffer updated in place is updated once per call", False, "%s: %s" % (type(e).__name__, e))
try:
    x0 = torch.randn(4, 32)
    compiled = tir.fx.compile(mlp, (x0,), arch="host", client=client, max_candidates=2)
    x1, x2 = x0.clone().requires_grad_(), x0.clone().requires_grad_()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = compiled(x1)
        (out * out).sum().backward()
    grads = [x1.grad] + [p.grad.clone() for p in mlp.parameters()]
    mlp.zero_grad()
    ref = mlp(x2)
    (ref * ref).sum().backward()
    ok, detail = close(grads, [x2.grad] + [p.grad for p in mlp.parameters()], tol=1e-3)
    mlp.zero_grad()
    check("tir.fx.compile with gradients required: the bundle's outputs carry eager's gradients, with no warning",
          ok and not fallbacks(caught), "%s %s" % (detail, fallbacks(caught)))
except Exception as e:  # noqa: BLE001 - reported as this check's failure
    check("tir.fx.compile with gradients required", False, "%s: %s" % (type(e).__name__, e))

client.close()
print("%d failed: %s" % (len(results.failures), results.failures) if results.failures else "all passed")
sys.exit(results.exit())
