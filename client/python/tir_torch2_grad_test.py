"""Gradients through torch.compile(backend=tir) under PyTorch 2 (run in the
torch 2 chroot by torch2_test.sh), against eager.

Each model is trained one step as people train it: compiled, a loss, its
backward; the loss, the input's gradient and every parameter's gradient are
compared with eager's (relative error of each tensor, in f32, at most 1e-4),
and the forward must have run in tir. The models cover what a gradient can
go wrong through: attention by F.scaled_dot_product_attention (causal, with a
float mask, grouped-query) and written by hand, LayerNorm and RMSNorm,
SwiGLU, rotary embeddings, an embedding table, cross-entropy and MSE losses.

Usage: tir_torch2_grad_test.py ADDRESS   (token "client-token", bundle key "bundle-key-1")
"""
import math
import sys
import time
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

import junit

import tir

address = sys.argv[1]
client = tir.Client(address, token="client-token", bundle_key="bundle-key-1", client_name="torch2-grad-test")
results = junit.Results("tir_torch2_grad_test")
RTOL = 1e-4

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


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.rand(dim) + 0.5)

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotary(x, cos, sin):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class LlamaLayer(nn.Module):
    """RMSNorm, rotary embeddings, grouped-query attention by SDPA, SwiGLU."""

    def __init__(self, dim=32, heads=4, kv_heads=2, hidden=64, gqa_by_sdpa=False):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, dim // heads
        self.gqa_by_sdpa = gqa_by_sdpa
        self.norm1, self.norm2 = RMSNorm(dim), RMSNorm(dim)
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, kv_heads * self.hd, bias=False)
        self.wv = nn.Linear(dim, kv_heads * self.hd, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        b, t, c = x.shape
        pos = torch.arange(t, dtype=torch.float32)[:, None]
        freq = torch.exp(-math.log(10000.0) * torch.arange(0, self.hd, 2, dtype=torch.float32) / self.hd)
        ang = torch.cat((pos * freq, pos * freq), dim=-1)
        cos, sin = ang.cos(), ang.sin()
        h = self.norm1(x)
        q = self.wq(h).view(b, t, self.heads, self.hd).transpose(1, 2)
        k = self.wk(h).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        v = self.wv(h).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        q, k = rotary(q, cos, sin), rotary(k, cos, sin)
        if self.gqa_by_sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        else:
            rep = self.heads // self.kv_heads
            k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.wo(y.transpose(1, 2).reshape(b, t, c))
        h = self.norm2(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class SdpaBlock(nn.Module):
    """nanoGPT's block on its flash path (SDPA, causal), LayerNorm, GELU MLP."""

    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.fc, self.out = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.attn(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, c))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class MaskedSdpa(nn.Module):
    """SDPA with a float mask (an additive bias), not causal."""

    def __init__(self, dim=32, heads=2, t=12):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.bias = nn.Parameter(torch.randn(t, t) * 0.1)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in self.qkv(x).split(c, dim=2))
        return F.scaled_dot_product_attention(q, k, v, attn_mask=self.bias[:t, :t])


class ManualAttention(nn.Module):
    """Attention written out: scores, a causal mask by masked_fill, softmax."""

    def __init__(self, dim=32, heads=4, t=16):
        super().__init__()
        self.heads = heads
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.register_buffer("mask", torch.tril(torch.ones(t, t)).view(1, 1, t, t))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in self.qkv(x).split(c, dim=2))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, c))


class EmbedClassifier(nn.Module):
    """An embedding table, LayerNorm and a classifier head (the loss is
    cross-entropy)."""

    def __init__(self, vocab=50, dim=16, classes=7):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, ids):
        return self.head(self.ln(self.emb(ids)).mean(1))


def rel(a, b):
    a, b = a.detach().double(), b.detach().double()
    return float((a - b).norm() / max(float(b.norm()), 1e-30))


def train_step(model, inputs, loss_fn):
    """One step: the loss and the gradients of float inputs and parameters."""
    model.zero_grad()
    xs = [x.clone().requires_grad_() if x.is_floating_point() else x for x in inputs]
    loss = loss_fn(model(*xs))
    loss.backward()
    grads = {"input %d" % i: x.grad.clone() for i, x in enumerate(xs) if x.is_floating_point()}
    # A compiled module names its parameters under `_orig_mod.`.
    grads.update({n.replace("_orig_mod.", "", 1): p.grad.clone() for n, p in model.named_parameters()
                  if p.grad is not None})
    return loss.detach(), grads


def check_training(name, make_model, inputs, loss_fn):
    torch.manual_seed(1)
    model = make_model()
    want_loss, want = train_step(model, inputs, loss_fn)
    torch._dynamo.reset()
    be = tir.torch_backend(client=client, arch="host", max_candidates=2)
    compiled = torch.compile(model, backend=be)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        got_loss, got = train_step(compiled, inputs, loss_fn)
    worst = max(((rel(got[k], want[k]), k) for k in want if k in got), default=(float("inf"), "none"))
    missing = sorted(set(want) - set(got))
    results.check("%s: the loss matches eager" % name, rel(got_loss, want_loss) <= RTOL,
                  "relative error %.3g" % rel(got_loss, want_loss))
    results.check("%s: every gradient matches eager (relative error <= %g)" % (name, RTOL),
                  not missing and worst[0] <= RTOL,
                  "worst %.3g on %s; missing %s" % (worst[0], worst[1], missing))
    results.check("%s: the forward ran in tir" % name, be.regions_run >= 1,
                  "%d regions run; warnings %s; left eager %s" % (be.regions_run, be.warnings[:2],
                                                                  sorted(set(be.refusals))[:6]))


def mean_square(y):
    return (y * y).mean()


check_training("Llama layer (RMSNorm, RoPE, GQA by repeat, SDPA causal, SwiGLU)", LlamaLayer,
               [torch.randn(2, 12, 32)], mean_square)
check_training("Llama layer (GQA by SDPA's enable_gqa)", lambda: LlamaLayer(gqa_by_sdpa=True),
               [torch.randn(2, 12, 32)], mean_square)
check_training("nanoGPT block on the flash path (SDPA causal, LayerNorm, GELU)", SdpaBlock,
               [torch.randn(2, 16, 32)], mean_square)
check_training("SDPA with a float mask", MaskedSdpa, [torch.randn(2, 12, 32)], mean_square)
check_training("attention written by hand (masked_fill, softmax)", ManualAttention,
               [torch.randn(2, 16, 32)], mean_square)
target = torch.randn(3, 12, 32)
check_training("Llama layer under an MSE loss", LlamaLayer, [torch.randn(3, 12, 32)],
               lambda y: F.mse_loss(y, target))
labels = torch.randint(0, 7, (6,))
check_training("embedding + LayerNorm + classifier under cross-entropy", EmbedClassifier,
               [torch.randint(0, 50, (6, 5))], lambda y: F.cross_entropy(y, labels))

sys.exit(results.exit())
