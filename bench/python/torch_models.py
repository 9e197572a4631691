"""The test's four models (MLP block, layer norm, attention scores, RMSNorm +
SiLU-gated MLP) through tir.fx on the local service, with figures:

- cold: tir.fx.compile the first time (export, plan, tune on the worker);
- warm: tir.fx.compile of the same model again (a cache hit in the store);
- per call: median of the compiled module and of eager torch (no_grad),
  same inputs, same process, and their ratio;
- Bundle.run's own cost: a one-kernel bundle on 16 elements, against the
  same op in eager torch.

On torch >= 2 each model also goes through torch.compile(backend=tir's
backend): its first call (Dynamo, AOTAutograd, the regions' compiles), its
per-call median against eager in the same run, the regions tir ran and any
fallback warning.

Usage: torch_models.py [--calls N] [--server ADDR --token FILE]
(without --server: the user's local service)
"""
import argparse
import math
import statistics
import time
import warnings

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


def torch_compile(client, models, calls):
    """torch.compile(model, backend=tir's) for each model, against eager in
    this run: the first call (Dynamo, AOTAutograd, the regions' compiles,
    from the store after tir.fx tuned the same kernels), the per-call median,
    the regions tir compiled and ran, and whether tir fell back anywhere."""
    print()
    print("torch.compile(backend=tir) on torch %s" % torch.__version__)
    print("%-40s %9s %11s %11s %8s %9s %8s %s" % ("model", "first s", "tir us", "eager us", "tir/eager", "rel err",
                                                 "regions", "fallbacks"))
    for name, model, example, eager_s in models:
        torch._dynamo.reset()
        backend = tir.torch_backend(client=client, arch=client.default_arch, progress=False)
        compiled = torch.compile(model, backend=backend)
        with warnings.catch_warnings(record=True) as caught, torch.no_grad():
            warnings.simplefilter("always")
            t = time.perf_counter()
            got = compiled(*example)
            first = time.perf_counter() - t
            want = model(*example)
            err = ((got - want).norm() / want.norm()).item()
            runs_before = backend.regions_run
            tir_s = median_seconds(lambda: compiled(*example), calls)
            eager_again = median_seconds(lambda: model(*example), calls)
        ran = backend.regions_run - runs_before
        fell_back = len([w for w in caught if "tir" in str(w.message)])
        # Eager is timed again beside it; the ratio uses the smaller of the two.
        eager = min(eager_s, eager_again)
        print("%-40s %9.2f %11.1f %11.1f %8.2fx %9.1e %3d/%-4d %s" % (
            name, first, tir_s * 1e6, eager * 1e6, tir_s / eager, err, backend.regions_compiled,
            ran // (calls + 1), "none" if not fell_back else "; ".join(backend.warnings)[:200]))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--server", help="a coordinator (host:port) with a host worker; default: the local service")
    parser.add_argument("--token", help="a file holding the client token for --server")
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)  # tir's host kernels run on one thread
    t = time.perf_counter()
    if args.server:
        token = open(args.token).read().strip() if args.token else None
        client = tir.Client(args.server, token=token, client_name="bench")
        client.default_arch = "host"
        where = "coordinator %s (host worker)" % args.server
    else:
        client = tir.connect()
        where = "local service (%s worker)" % client.default_arch
    print("%s up in %.2f s; torch %s, 1 thread" % (where, time.perf_counter() - t, torch.__version__))
    dynamo = hasattr(torch, "compile")
    models = [("MLP block 64x256 -> 1024 -> 256", MLPBlock(), (torch.randn(64, 256),)),
              ("layer norm 128x1024", Norm(), (torch.randn(128, 1024),)),
              ("attention scores 2x4x128x64", AttentionScores(), (torch.randn(2, 4, 128, 64), torch.randn(2, 4, 128, 64))),
              ("RMSNorm + SiLU-gated MLP 64x256 -> 512", GatedMLP(), (torch.randn(64, 256),))]
    print("%-40s %9s %9s %11s %11s %8s %9s" % ("model", "cold s", "warm ms", "tir us", "eager us", "tir/eager", "rel err"))
    results = []
    for name, model, example in models:
        model.eval()
        t = time.perf_counter()
        compiled = tir.fx.compile(model, example, client=client, arch=client.default_arch)
        cold = time.perf_counter() - t
        t = time.perf_counter()
        tir.fx.compile(model, example, client=client, arch=client.default_arch)
        warm = time.perf_counter() - t
        with torch.no_grad():
            want = model(*example)
            got = compiled(*example)
            err = ((got - want).norm() / want.norm()).item()
            tir_s = median_seconds(lambda: compiled(*example), args.calls)
            eager_s = median_seconds(lambda: model(*example), args.calls)
        print("%-40s %9.2f %9.1f %11.1f %11.1f %8.2fx %9.1e" % (name, cold, warm * 1e3, tir_s * 1e6, eager_s * 1e6,
                                                               tir_s / eager_s, err))
        if dynamo:
            results.append((name, model, example, eager_s))
    if dynamo:
        torch_compile(client, results, args.calls)
    tiny = """tir.graph @tiny(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %e = exp %x : tensor<4x4xf32>
  results %e : tensor<4x4xf32>
}
"""
    bundle = tir.compile(tiny, client=client, arch=client.default_arch)
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
