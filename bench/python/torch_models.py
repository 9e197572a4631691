"""The test's four models (MLP block, layer norm, attention scores, RMSNorm +
SiLU-gated MLP) through tir.fx on the local service, with figures:

- cold: tir.fx.compile the first time (export, plan, tune on the worker);
- warm: tir.fx.compile of the same model again (a cache hit in the store);
- per call: median of the compiled module and of eager torch (no_grad),
  same inputs, same process, and their ratio;
- Bundle.run's own cost: a one-kernel bundle on 16 elements, against the
  same op in eager torch.

Usage: torch_models.py [--calls N]
"""
import argparse
import math
import statistics
import time

import torch
import torch.nn.functional as F

import tir
import tir.fx


class MLPBlock(torch.nn.Module):
    def __init__(self, d=256, hidden=1024):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(d, hidden), torch.nn.Linear(hidden, d)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(x)))


class Norm(torch.nn.Module):
    def __init__(self, d=1024):
        super().__init__()
        self.ln = torch.nn.LayerNorm(d)

    def forward(self, x):
        return self.ln(x)


class AttentionScores(torch.nn.Module):
    def forward(self, q, k):
        return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)


class GatedMLP(torch.nn.Module):
    def __init__(self, d=256, hidden=512, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(d))
        self.eps = eps
        self.gate = torch.nn.Linear(d, hidden, bias=False)
        self.up = torch.nn.Linear(d, hidden, bias=False)
        self.down = torch.nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


def median_seconds(fn, calls):
    fn()
    samples = []
    for _ in range(calls):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)  # tir's host kernels run on one thread
    t = time.perf_counter()
    client = tir.connect()
    print("local service (%s worker) up in %.2f s; torch %s, 1 thread" % (client.default_arch, time.perf_counter() - t,
                                                                          torch.__version__))
    models = [("MLP block 64x256 -> 1024 -> 256", MLPBlock(), (torch.randn(64, 256),)),
              ("layer norm 128x1024", Norm(), (torch.randn(128, 1024),)),
              ("attention scores 2x4x128x64", AttentionScores(), (torch.randn(2, 4, 128, 64), torch.randn(2, 4, 128, 64))),
              ("RMSNorm + SiLU-gated MLP 64x256 -> 512", GatedMLP(), (torch.randn(64, 256),))]
    print("%-40s %9s %9s %11s %11s %8s %9s" % ("model", "cold s", "warm ms", "tir us", "eager us", "tir/eager", "rel err"))
    for name, model, example in models:
        model.eval()
        t = time.perf_counter()
        compiled = tir.fx.compile(model, example, client=client)
        cold = time.perf_counter() - t
        t = time.perf_counter()
        tir.fx.compile(model, example, client=client)
        warm = time.perf_counter() - t
        with torch.no_grad():
            want = model(*example)
            got = compiled(*example)
            err = ((got - want).norm() / want.norm()).item()
            tir_s = median_seconds(lambda: compiled(*example), args.calls)
            eager_s = median_seconds(lambda: model(*example), args.calls)
        print("%-40s %9.2f %9.1f %11.1f %11.1f %8.2fx %9.1e" % (name, cold, warm * 1e3, tir_s * 1e6, eager_s * 1e6,
                                                               tir_s / eager_s, err))
    tiny = """tir.graph @tiny(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %e = exp %x : tensor<4x4xf32>
  results %e : tensor<4x4xf32>
}
"""
    bundle = tir.compile(tiny, client=client)
    x = torch.randn(4, 4)
    out = torch.empty(4, 4)
    run_s = median_seconds(lambda: bundle.run(x), args.calls * 20)
    run_out_s = median_seconds(lambda: bundle.run(x, out=out), args.calls * 20)
    eager_s = median_seconds(lambda: torch.exp(x), args.calls * 20)
    print("Bundle.run of a 16-element exp: %.1f us (out= given: %.1f us); torch.exp: %.1f us; overhead x%.1f"
          % (run_s * 1e6, run_out_s * 1e6, eager_s * 1e6, run_s / eager_s))
    client.close()


if __name__ == "__main__":
    main()
