#!/usr/bin/env python3
"""bench/gpu: tir's kernels on a GPU, checked and timed against cuBLAS and the copy bandwidth.

For each suite graph (emitted by prepare.sh) and each emitted candidate:
random seeded inputs (never all zeros), outputs poisoned (NaN / 0xff), one
checked launch compared with a float32 PyTorch reference (relative L2 error
under the output dtype's bound), then timed runs with the L2 flushed before
each (CUPTI kernel spans, CUDA events as the fallback; medians). Baselines
measured in the same run, timed the same way by the runner library:
a device-to-device copy (the bandwidth ceiling, bytes read + written), and
for every GEMM cuBLASLt on the same inputs (bf16 in, f32 accumulate, with its
GELU_BIAS epilogue where tir fuses bias + GELU), its output checked too.
PyTorch eager is timed with CUDA events for every graph. SM and memory
clocks are recorded before and after.

Work runs in priority order (decode/prefill GEMMs, the memory-bound graphs,
then the older suite), default candidates first, and stops cleanly at
--deadline: what did not run is listed as skipped, never estimated.
gpu_results.json is rewritten after every row, so a run cut short keeps what
it measured. Exit status 0 only when every row ran, was correct and nothing
was skipped.

--dry-run needs no GPU, no PyTorch and no runner library: it reads every
emitted kernel's launch contract, packs its argument struct with placeholder
pointers, derives the cuBLAS problem, bytes and FLOPs of each graph and
prints the table it would fill, with no figures.
"""
import argparse
import ctypes
import glob
import json
import math
import os
import re
import statistics
import struct
import subprocess
import sys
import time

# Element sizes by the dtype names launch.json uses.
DTYPE_BYTES = {"f32": 4, "f64": 8, "f16": 2, "bf16": 2, "si8": 1, "si16": 2, "si32": 4, "si64": 8, "ui8": 1, "i1": 1}
C_TYPES = {"float": (4, 4), "double": (8, 8), "tir_bf16": (2, 2), "tir_f16": (2, 2), "tir_u8": (1, 1),
           "tir_i8": (1, 1), "tir_i16": (2, 2), "tir_u16": (2, 2), "tir_i32": (4, 4), "tir_u32": (4, 4),
           "tir_i64": (8, 8), "tir_u64": (8, 8)}
INT_CTYPES = {"ptr", "tir_i64", "tir_u64", "tir_i32", "tir_u32", "tir_i16", "tir_u16", "tir_i8", "tir_u8"}
REPS = 25
# Acceptance bars (NOTES.md): fraction of the measured copy bandwidth.
BARS = {"decode_gemm": (0.70, 0.85), "pointwise": (0.80, 0.90), "softmax": (0.80, None), "rmsnorm": (0.80, None)}
# Lead figures for --dry-run's floors only (KINDS.md, one H200 of this workplace): never reported as measurements.
LEAD_COPY_GBPS, LEAD_BF16_TFLOPS = 4300.0, 790.0


class Abort(Exception):
    pass


def die(msg, code=3):
    print(f"bench/gpu/run.py: {msg}", file=sys.stderr, flush=True)
    sys.exit(code)


# ---------------------------------------------------------------- the suite

GEMM_RE = re.compile(r"^gemm(?P<wt>_wt)?(?P<gelu>_bias_gelu)?_m(?P<m>\d+)_n(?P<n>\d+)_k(?P<k>\d+)$")
OLD_MM_RE = re.compile(r"^matmul_bias_gelu(_m(?P<m>\d+)_n(?P<n>\d+))?$")


def nbytes(spec):
    return math.prod(spec["shape"]) * DTYPE_BYTES[spec["dtype"]]


def describe(name, meta):
    """What a suite graph is: its family, the cuBLAS problem for GEMMs, bytes moved and FLOPs.

    Raises Abort when the emitted kernel's signature does not match the name.
    """
    ins, outs = meta["inputs"], meta["outputs"]
    d = {"moved": sum(nbytes(s) for s in ins + outs), "out_bytes": sum(nbytes(s) for s in outs),
         "out_dtype": outs[0]["dtype"], "flops": 0}
    g = GEMM_RE.match(name)
    o = OLD_MM_RE.match(name)
    if g:
        m, n, k = int(g["m"]), int(g["n"]), int(g["k"])
        wt, gelu = bool(g["wt"]), bool(g["gelu"])
        want_w = [n, k] if wt else [k, n]
        if ins[0]["shape"] != [m, k] or ins[1]["shape"] != want_w or outs[0]["shape"] != [m, n]:
            raise Abort(f"signature {[s['shape'] for s in ins]} -> {outs[0]['shape']} does not match the name")
        d.update(family="gemm_bias_gelu" if gelu else "gemm", m=m, n=n, k=k, wt=wt, gelu=gelu, flops=2 * m * n * k,
                 bar="decode_gemm" if m <= 32 else None)
    elif o:
        x, w = ins[0]["shape"], ins[1]["shape"]
        d.update(family="matmul_bias_gelu", m=x[0], n=w[1], k=x[1], wt=False, gelu=True, flops=2 * x[0] * w[1] * x[1],
                 bar="decode_gemm" if x[0] <= 32 else None)
    elif name.startswith("softmax"):
        d.update(family="softmax", bar="softmax")
    elif name.startswith("rmsnorm"):
        d.update(family="rmsnorm", bar="rmsnorm")
    elif name.startswith("layernorm"):
        d.update(family="layernorm", bar=None)
    elif name.startswith("pointwise_chain"):
        d.update(family="pointwise_chain", bar="pointwise")
    else:
        raise Abort("no reference for this graph name")
    d["gemm"] = "m" in d
    return d


def priority(name):
    """Run order: what issue 28 asks about first, the older suite last."""
    g = GEMM_RE.match(name)
    if g and int(g["m"]) >= 2048 or name == "matmul_bias_gelu":
        return (-1, 0, name)  # the Hopper GEMMs at the ceiling (4096^3, 8192^3, prefill) first
    if g and g["wt"] and not g["gelu"]:
        return (0, int(g["m"]), name)
    if name.startswith(("softmax_vocab", "rmsnorm", "pointwise_chain")):
        return (1, 0, name)
    if g and not g["gelu"]:
        return (2, int(g["m"]), name)
    if g:
        return (3, int(g["m"]), name)
    return (4, 0, name)


def candidates(kernels_dir, only=None):
    """(graph, candidate dir) pairs: every graph's default first, then the ranked candidates."""
    graphs = sorted((n for n in os.listdir(kernels_dir) if os.path.isdir(os.path.join(kernels_dir, n))
                     and (not only or re.search(only, n))), key=priority)
    order = ["default", "0", "1"]  # then the named variants prepare.sh emits, by name
    work = []
    most = max((len([p for p in glob.glob(os.path.join(kernels_dir, n, "*")) if os.path.isdir(p)]) for n in graphs),
               default=0)
    for rank in range(most):
        for name in graphs:
            dirs = sorted((p for p in glob.glob(os.path.join(kernels_dir, name, "*")) if os.path.isdir(p)),
                          key=lambda p: (order.index(os.path.basename(p)) if os.path.basename(p) in order else 9,
                                         os.path.basename(p)))
            if rank < len(dirs):
                work.append((name, dirs[rank]))
    return work


def load_graph(cand_dir):
    """One emitted candidate of a graph: its kernels in launch order (launch contract, cubin) and the wiring.

    wiring.json beside the candidates (prepare.sh writes it from a bundle) says, per kernel, which graph INPUT,
    OUTPUT or INTERMEDIATE each argument and result is (a kernel may take the graph's inputs in another order),
    and the types of all of them. Raises Abort on any mismatch with the launch contracts.
    """
    kernels = []
    for k in range(64):
        launch = glob.glob(os.path.join(cand_dir, f"*_k{k}.launch.json"))
        if not launch:
            break
        cubins = glob.glob(os.path.join(cand_dir, f"*_k{k}.*.cubin"))
        if len(launch) != 1 or len(cubins) != 1:
            raise Abort(f"kernel {k}: {len(launch)} launch contracts and {len(cubins)} cubins in {cand_dir}")
        kernels.append((json.load(open(launch[0])), cubins[0]))
    if not kernels or len(kernels) != len(glob.glob(os.path.join(cand_dir, "*.launch.json"))):
        raise Abort(f"no kernels numbered _k0, _k1, ... in {cand_dir}")
    wiring_path = os.path.join(os.path.dirname(cand_dir), "wiring.json")
    if not os.path.exists(wiring_path):
        raise Abort(f"no {wiring_path} (prepare.sh writes it)")
    wiring = json.load(open(wiring_path))
    if len(wiring["kernels"]) != len(kernels):
        raise Abort(f"wiring has {len(wiring['kernels'])} kernels, {cand_dir} {len(kernels)}")
    tables = {"INPUT": wiring["inputs"], "OUTPUT": wiring["outputs"], "INTERMEDIATE": wiring["intermediates"]}
    for k, ((meta, _), w) in enumerate(zip(kernels, wiring["kernels"])):
        for side, refs in (("inputs", w["inputs"]), ("outputs", w["outputs"])):
            if len(refs) != len(meta[side]):
                raise Abort(f"kernel {k}: {len(meta[side])} {side}, wiring {len(refs)}")
            for spec, (kind, index) in zip(meta[side], refs):
                t = tables[kind][index]
                if [t["dtype"], t["shape"]] != [spec["dtype"], spec["shape"]]:
                    raise Abort(f"kernel {k} {side}: {spec} is {kind} {index}, a {t}")
    return {"kernels": kernels, "wiring": wiring, "meta": {"inputs": wiring["inputs"], "outputs": wiring["outputs"]},
            "kernel_bytes": sum(nbytes(s) for meta, _ in kernels for s in meta["inputs"] + meta["outputs"])}


# ------------------------------------------------------- launch arguments

def pack(fields, values):
    """C layout of struct tir_args: natural alignment (tensor maps 64 bytes), size padded to the struct's."""
    buf = bytearray()
    struct_align = 8
    for decl in fields:
        decl = decl.replace("const ", "")
        if decl.startswith("tir_tensor_map "):
            struct_align = 64
            while len(buf) % 64:
                buf.append(0)
            raw = values[decl.split()[1]]
            if len(raw) != 128:
                raise Abort(f"tensor map {decl} is {len(raw)} bytes")
            buf += raw
            continue
        if "*" in decl:
            size, align, name, count, ctype = 8, 8, decl.split("*")[1].strip(), 1, "ptr"
        else:
            ctype, rest = decl.split()[0], decl.split()[1]
            name, count = (rest.split("[")[0], int(rest.split("[")[1].rstrip("]"))) if "[" in rest else (rest, 1)
            size, align = C_TYPES[ctype]
        while len(buf) % align:
            buf.append(0)
        if name not in values:
            raise Abort(f"argument field {decl!r} has no value")
        vals = values[name]
        vals = list(vals) if isinstance(vals, (list, tuple)) else [vals]
        for v in vals[:count] + [0] * (count - len(vals)):
            if ctype in INT_CTYPES:
                buf += int(v).to_bytes(8, "little", signed=v < 0)[:size]
            elif ctype in ("float", "double"):
                buf += struct.pack("<f" if ctype == "float" else "<d", float(v))
            else:
                raise Abort(f"argument field {decl!r}: no packing for {ctype}")
    while len(buf) % struct_align:
        buf.append(0)
    return bytes(buf)


def extent_of(ext, domain):
    """A launch rule's extent, as HostBuild's LaunchGrid / LaunchWorkspaceBytes evaluate it:
    constant * prod(ceil(domain[dims[i]] / dim_divisors[i])), ceil-divided by divisor, at most max."""
    v = int(ext.get("constant", "1") or 1)
    tiles = [int(t) for t in ext.get("dimDivisors", [])]
    for i, d in enumerate(ext.get("dims", [])):
        dim = int(d.get("dim", 0))
        if dim >= len(domain):
            raise Abort(f"launch rule reads domain dim {dim} of {len(domain)}")
        tile = tiles[i] if i < len(tiles) and tiles[i] > 1 else 1
        v *= -(-max(0, domain[dim]) // tile)
    div = max(1, int(ext.get("divisor", "1") or 1))
    v = -(-v // div)
    limit = int(ext.get("max", "0") or 0)
    return min(v, limit) if limit > 0 else v


def grid_of(launch, domain):
    grid = [max(1, extent_of(ext, domain)) for ext in launch["grid"]]
    return (grid + [1, 1, 1])[:3], (list(launch["block"]) + [1, 1, 1])[:3]


def tensor_map_encodable(t, torch):
    """What tir's launchers require of a TMA operand (HostBuild's TensorMapEncodable); else the map stays zero."""
    if t.dim() != 2 or t.dtype not in (torch.bfloat16, torch.float16):
        return False
    s0, s1 = t.stride()
    return (s1 == 1 and t.data_ptr() % 16 == 0 and s0 > 0 and (s0 * 2) % 16 == 0 and s0 * 2 < (1 << 40)
            and 1 <= t.shape[0] < (1 << 31) and 1 <= t.shape[1] < (1 << 31))


def row_strides(shape):
    s, out = 1, []
    for e in reversed(shape):
        out.append(s)
        s *= e
    return list(reversed(out))


def placeholder_values(meta):
    """Argument values with fake 256-byte-aligned pointers: what --dry-run packs."""
    values = {"dim": meta["domain"], "workspace": 0x7f0000000000}
    for i, s in enumerate(meta["inputs"]):
        values[f"in{i}"] = 0x7f0000000000 + (i + 1) * (1 << 36)
        values[f"in{i}_size"] = s["shape"]
        values[f"in{i}_stride"] = row_strides(s["shape"])
    for i, s in enumerate(meta["outputs"]):
        values[f"out{i}"] = 0x7f8000000000 + i * (1 << 36)
        values[f"out{i}_stride"] = row_strides(s["shape"])
    for decl in meta["fields"]:
        if decl.startswith("tir_tensor_map "):
            values[decl.split()[1]] = bytes(128)
    return values


# ------------------------------------------------------------- reporting

def fmt(v, spec, width):
    return f"{v:{width}{spec}}" if isinstance(v, (int, float)) and math.isfinite(v) else f"{'-':>{width}}"


HEADER = (f"{'graph':36} {'cand':7} {'tir us':>9} {'cuBLAS us':>9} {'x cuBLAS':>8} {'TFLOP/s':>8} {'GB/s':>6} "
          f"{'% copy':>6} {'cuBLAS %copy':>12} {'eager us':>9} {'x eager':>7} {'rel L2':>8} {'ok':>3} {'bar':>5} time")


def table_line(r):
    head = f"{r['graph']:36} {r['candidate']:7}"
    if "error" in r:
        return f"{head} ERROR: {r['error']}"
    if "skipped" in r:
        return f"{head} skipped: {r['skipped']}"
    tir = r.get("tir_s", math.nan)
    cub = r.get("cublas_s", math.nan)
    eager = r.get("eager_s", math.nan)
    bar = r.get("bar_met")
    l2 = "*" if r.get("fits_l2") else " "
    return (f"{head} {fmt(tir * 1e6, '.1f', 9)} {fmt(cub * 1e6, '.1f', 9)} {fmt(cub / tir, '.2f', 8)} "
            f"{fmt(r.get('tflops', math.nan), '.1f', 8)} {fmt(r.get('gbps', math.nan), '.0f', 6)} "
            f"{fmt(100 * r.get('frac_copy', math.nan), '.0f', 6)}{l2}{fmt(100 * r.get('cublas_frac_copy', math.nan), '.0f', 11)} "
            f"{fmt(eager * 1e6, '.1f', 9)} {fmt(eager / tir, '.2f', 7)} {fmt(r.get('rel_l2', math.nan), '.1e', 8)} "
            f"{('yes' if r.get('correct') else 'NO') if 'correct' in r else '-':>3} "
            f"{('-' if bar is None else 'met' if bar else 'BELOW'):>5} {r.get('timing', '-')}"
            + (f"; {len(r['kernel_s'])} kernels " + " + ".join(f"{t * 1e6:.1f}" for t in r["kernel_s"]) + " us alone"
               if r.get("kernel_s") else "")
            + (f"; cuBLAS plain {r['cublas_plain_s'] * 1e6:.1f} us, x plain {r['cublas_plain_s'] / tir:.2f}"
               if r.get("cublas_plain_s") else "")
            + (wrong_summary(r["wrong_where"]) if r.get("wrong_where") else "")
            + (f"; {r['cublas_note']}" if r.get("cublas_note") else "")
            + (f"; cuBLAS ERROR {r['cublas_error']}" if r.get("cublas_error") else "")
            + (f"; cuBLAS rel L2 {r['cublas_rel_l2']:.1e}" if r.get("cublas_rel_l2", 0) > 1e-2 else ""))


def wrong_summary(w):
    if "error" in w:
        return f"; wrong_where failed: {w['error']}"
    return (f"; wrong: {w['bad_elements']}/{w['numel']} elements ({w['non_finite']} non-finite), "
            f"{w['bad_tile_count']} of {w['tile_grid'][0]}x{w['tile_grid'][1]} 64x64 tiles, "
            f"{w['bad_rows'][0]} rows, {w['bad_cols'][0]} cols; first {w['first'][:2]}")


def markdown_table(results):
    lines = ["| graph | cand | tir µs | cuBLAS µs | x cuBLAS | TFLOP/s | GB/s | % copy | cuBLAS % copy | rel L2 | ok | bar |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in results:
        if "error" in r or "skipped" in r:
            lines.append(f"| {r['graph']} | {r['candidate']} | {'ERROR ' + r['error'] if 'error' in r else 'skipped'} |"
                         + " |" * 9)
            continue
        tir, cub = r.get("tir_s", math.nan), r.get("cublas_s", math.nan)
        cells = [fmt(tir * 1e6, ".1f", 0), fmt(cub * 1e6, ".1f", 0), fmt(cub / tir, ".2f", 0),
                 fmt(r.get("tflops", math.nan), ".1f", 0), fmt(r.get("gbps", math.nan), ".0f", 0),
                 fmt(100 * r.get("frac_copy", math.nan), ".0f", 0), fmt(100 * r.get("cublas_frac_copy", math.nan), ".0f", 0),
                 fmt(r.get("rel_l2", math.nan), ".1e", 0), "yes" if r.get("correct") else "NO",
                 {None: "-", True: "met", False: "below"}[r.get("bar_met")]]
        lines.append(f"| {r['graph']} | {r['candidate']} | " + " | ".join(c.strip() for c in cells) + " |")
    return "\n".join(lines) + "\n"


def floor_s(d):
    """--dry-run only: the floor from KINDS.md's lead figures (not a measurement)."""
    return max(d["moved"] / (LEAD_COPY_GBPS * 1e9), d["flops"] / (LEAD_BF16_TFLOPS * 1e12))


# ---------------------------------------------------------------- dry run

def dry_run(args):
    work = candidates(args.kernels, args.only)
    if not work:
        die(f"no emitted kernels under {args.kernels}: run bench/gpu/prepare.sh", 2)
    print("dry run: no GPU used, nothing measured; every figure column stays empty.")
    print(f"{len(work)} kernels in run order; floors from KINDS.md's lead figures "
          f"({LEAD_COPY_GBPS:.0f} GB/s copy, {LEAD_BF16_TFLOPS:.0f} bf16 TFLOP/s), not measurements\n")
    print(f"{'graph':36} {'cand':7} {'grid':>16} {'block':>12} {'smem':>7} {'args B':>6} {'MiB moved':>9} "
          f"{'GFLOP':>7} {'floor us':>8}  cuBLAS problem / baseline")
    bad = 0
    for name, cand_dir in work:
        cand = os.path.basename(cand_dir)
        try:
            g = load_graph(cand_dir)
            d = describe(name, g["meta"])
            shown = []
            for meta, cubin in g["kernels"]:
                params = pack(meta["fields"], placeholder_values(meta))
                grid, block = grid_of(meta["launch"], meta["domain"])
                if min(grid) < 1 or math.prod(block) > 1024 or math.prod(block) < 1:
                    raise Abort(f"launch {grid} x {block} is not launchable")
                smem = int(meta["launch"].get("dynamicSharedMemoryBytes", 0) or 0)
                if smem > 227 * 1024:
                    raise Abort(f"{smem} bytes of dynamic shared memory (sm_90 allows 227 KiB)")
                if os.path.getsize(cubin) == 0:
                    raise Abort(f"empty cubin {cubin}")
                shown.append((grid, block, smem, len(params)))
            # tirctl's own reading of the launch rules (its emit report), where prepare.sh kept it.
            report_path = os.path.join(cand_dir, "emit.txt")
            if os.path.exists(report_path):
                said = re.findall(r"launch: grid \((\d+), (\d+), (\d+)\) block \((\d+), (\d+), (\d+)\) smem (\d+)"
                                  r"(?: workspace (\d+))?", open(report_path).read())
                if len(said) != len(shown):
                    raise Abort(f"emit.txt reports {len(said)} launches, the contracts {len(shown)}")
                for k, (t, (meta, _), (grid, block, smem, _)) in enumerate(zip(said, g["kernels"], shown)):
                    ws = (extent_of(meta["launch"]["workspaceBytes"], meta["domain"])
                          if "workspaceBytes" in meta["launch"] else 0)
                    mine = [*grid, *block, smem, ws]
                    theirs = [int(v) for v in t[:7]] + [int(t[7] or 0)]
                    if mine != theirs:
                        raise Abort(f"kernel {k}: grid/block/smem/workspace {mine}, tirctl says {theirs}")
            grid, block, smem, nparams = shown[0]
            if d["gemm"]:
                base = (f"cuBLASLt m={d['m']} n={d['n']} k={d['k']} W {'[N,K] (T)' if d['wt'] else '[K,N] (N)'} "
                        f"{'GELU_BIAS ' if d['gelu'] else ''}out {d['out_dtype']}")
            else:
                base = f"copy bandwidth; eager {d['family']}"
            if len(shown) > 1:
                base += (f"; {len(shown)} kernels moving {g['kernel_bytes'] / 2**20:.1f} MiB "
                         f"({g['kernel_bytes'] / d['moved']:.1f}x the graph's)")
            print(f"{name:36} {cand:7} {str(grid):>16} {str(block):>12} {smem:7d} {nparams:6d} "
                  f"{d['moved'] / 2**20:9.1f} {d['flops'] / 1e9:7.1f} {floor_s(d) * 1e6:8.1f}  {base}")
            for k, (grid, block, smem, nparams) in enumerate(shown[1:], 1):
                print(f"{'':36} {'k' + str(k):7} {str(grid):>16} {str(block):>12} {smem:7d} {nparams:6d}")
        except (Abort, KeyError, ValueError, json.JSONDecodeError) as e:
            bad += 1
            print(f"{name:36} {cand:7} ERROR: {e}")
    print(f"\n{len(work) - bad} kernels ready, {bad} with errors")
    print("\nThe table a GPU run fills (figures empty here):\n" + HEADER)
    if bad:
        sys.exit(1)


# ---------------------------------------------------------------- GPU run

def main_gpu(args):
    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:  # noqa: BLE001 - report whatever stopped the import
        die(f"PyTorch is not importable ({e}); nothing measured")
    if not torch.cuda.is_available():
        die(f"no CUDA GPU visible to PyTorch {torch.__version__} (torch.cuda.is_available() is False); nothing "
            "measured. Use --dry-run for the checks that need no GPU.")
    work = candidates(args.kernels, args.only)
    if not work:
        die(f"no emitted kernels under {args.kernels}: run bench/gpu/prepare.sh and carry bench/gpu/out", 2)

    DTYPES = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16,
              "si8": torch.int8, "si16": torch.int16, "si32": torch.int32, "si64": torch.int64,
              "ui8": torch.uint8, "i1": torch.uint8}
    BOUND = {torch.float32: 1e-5, torch.float64: 1e-12, torch.float16: 1e-2, torch.bfloat16: 1e-2}
    # f32 accumulation everywhere: no tf32, no reduced-precision bf16 reductions in torch's cuBLAS calls.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False

    def clocks():
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw",
                                  "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=20).stdout
            sm, mem, sm_max, temp, power = [v.strip() for v in out.splitlines()[0].split(",")]
            return {"sm_mhz": sm, "mem_mhz": mem, "sm_max_mhz": sm_max, "temperature_c": temp, "power_w": power}
        except Exception as e:  # noqa: BLE001 - no nvidia-smi: say so in the results
            return {"error": str(e)[:120]}

    clocks_before = clocks()
    torch.cuda.init()
    torch.empty(1, device="cuda")  # PyTorch's context first; the runner binds to it
    try:
        lib = ctypes.CDLL(args.lib)
    except OSError as e:
        die(f"cannot load the runner library {args.lib}: {e}")
    err = ctypes.create_string_buffer(1024)
    if lib.tir_gpu_init(torch.cuda.current_device(), err, 1024) != 0:
        die("tir_gpu_init: " + err.value.decode())
    lib.tir_gpu_load.restype = ctypes.c_void_p
    lib.tir_gpu_tensor_map.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_ulonglong, ctypes.c_ulonglong,
                                       ctypes.c_ulonglong, ctypes.c_ulonglong, ctypes.c_uint, ctypes.c_uint,
                                       ctypes.c_char_p, ctypes.c_int]
    lib.tir_gpu_copy_time.argtypes = [ctypes.c_ulonglong, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                      ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    lib.tir_gpu_cublas_create.restype = ctypes.c_void_p
    lib.tir_gpu_cublas_create.argtypes = [ctypes.c_int] * 5 + [ctypes.c_void_p] * 4 + [ctypes.c_char_p, ctypes.c_int]
    lib.tir_gpu_cublas_run.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    lib.tir_gpu_cublas_time.argtypes = [ctypes.c_void_p, ctypes.c_int] + [ctypes.c_void_p] * 3 + [ctypes.c_char_p,
                                                                                                   ctypes.c_int]
    lib.tir_gpu_cublas_destroy.argtypes = [ctypes.c_void_p]
    props = torch.cuda.get_device_properties(0)
    l2_bytes = getattr(props, "L2_cache_size", 0) or 0

    def timed(call, reps=REPS):
        """Runs a runner-library timing call; returns (median s, iqr s, source, samples)."""
        ev, cu, n = (ctypes.c_double * reps)(), (ctypes.c_double * reps)(), ctypes.c_int(0)
        if call(reps, ev, cu, ctypes.byref(n)) != 0:
            raise Abort(err.value.decode())
        src, samples = ("cupti", list(cu)) if n.value == reps else ("events", list(ev))
        samples = sorted(s * 1e-9 for s in samples)
        q = len(samples) // 4
        return statistics.median(samples), samples[-q - 1] - samples[q], src, {"events_ns": list(ev),
                                                                              "cupti_ns": list(cu)[:n.value]}

    def time_torch(fn, reps=REPS):
        flush = torch.empty(max(4 * l2_bytes, 256 << 20), dtype=torch.uint8, device="cuda")
        fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(reps):
            flush.zero_()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) * 1e-3)
        return statistics.median(times)

    out_json = os.path.join(args.out, "gpu_results.json")
    prior = json.load(open(out_json)) if args.first > 0 else None
    if prior:  # a resumed run (the previous process lost its CUDA context): same ceiling, earlier rows kept
        copy_gbps, torch_copy_gbps, clocks_before = prior["copy_gbps"], prior["torch_copy_gbps"], prior["clocks_before"]
    elif args.check_only:  # nothing is timed
        copy_gbps = torch_copy_gbps = math.nan
    else:  # the copy-bandwidth ceiling, in this run
        copy_bytes = 512 << 20
        try:
            copy_s, _, _, _ = timed(
                lambda reps, ev, cu, n: lib.tir_gpu_copy_time(copy_bytes, reps, ev, cu, n, err, 1024), 15)
        except Abort as e:
            die(f"the copy-bandwidth ceiling could not be measured: {e}")
        copy_gbps = 2 * copy_bytes / copy_s / 1e9
        big = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(big)
        torch_copy_gbps = 2 * big.numel() / time_torch(lambda: dst.copy_(big), 10) / 1e9
        del big, dst
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    print(f"device: {props.name}, {props.multi_processor_count} SMs, L2 {l2_bytes >> 20} MiB, torch {torch.__version__}, "
          f"cuDNN {cudnn or 'not available'}")
    print(f"copy bandwidth (read + write): {copy_gbps:.0f} GB/s (cuMemcpyDtoD, 512 MiB), "
          f"{torch_copy_gbps:.0f} GB/s (torch copy_, 1 GiB); the first is the ceiling used below")
    print("softmax baseline: torch eager (torch.softmax runs PyTorch's own CUDA kernel; PyTorch routes no softmax "
          "to cuDNN, so there is no cuDNN figure)")
    print(f"clocks before: {clocks_before}\n", flush=True)

    def make_tensor(spec, seed):
        shape, dtype = spec["shape"], DTYPES[spec["dtype"]]
        g = torch.Generator(device="cuda").manual_seed(seed)
        if dtype.is_floating_point:
            t = torch.rand(shape, device="cuda", generator=g, dtype=torch.float32) * 2 - 1
            t = torch.where(t == 0, torch.full_like(t, 0.5), t).to(dtype)
        else:
            t = torch.randint(1, 9, shape, device="cuda", generator=g).to(dtype)
        return t.contiguous()

    def rel_l2(got, want):
        got, want = got.double(), want.double()
        if not torch.isfinite(got).all():
            return math.inf
        return (torch.linalg.vector_norm(got - want) / max(torch.linalg.vector_norm(want).item(), 1e-30)).item()

    def wrong_where(got, want, bound):
        """Where a wrong output is wrong, to tell a layout mistake from a numeric one without a second run:
        unwritten (NaN poison) and non-finite counts, the 64 x 64 tiles whose relative error is over the
        bound (up to 24, with the tile grid's size), which rows and columns are bad, and the first mismatches."""
        got, want = got.double(), want.double()
        info = {"non_finite": int((~torch.isfinite(got)).sum().item()), "numel": got.numel()}
        g2 = got.reshape(-1, got.shape[-1]) if got.dim() >= 2 else got.reshape(1, -1)
        w2 = want.reshape(g2.shape)
        diff = torch.where(torch.isfinite(g2), g2 - w2, torch.full_like(g2, math.inf))
        scale = max(torch.linalg.vector_norm(w2).item() / math.sqrt(max(w2.numel(), 1)), 1e-30)
        bad = diff.abs() > 8 * bound * scale + 8 * bound * w2.abs()
        info["bad_elements"] = int(bad.sum().item())
        rows, cols = g2.shape
        tr, tc = (rows + 63) // 64, (cols + 63) // 64
        pad = torch.zeros(tr * 64, tc * 64, dtype=torch.bool, device=bad.device)
        pad[:rows, :cols] = bad
        tiles = pad.reshape(tr, 64, tc, 64).sum(dim=(1, 3))
        info["tile_grid"] = [tr, tc]
        info["bad_tiles"] = [[int(i), int(j), int(tiles[i, j].item())] for i, j in tiles.nonzero()[:24].tolist()]
        info["bad_tile_count"] = int((tiles > 0).sum().item())
        br, bc = bad.any(dim=1).nonzero().flatten(), bad.any(dim=0).nonzero().flatten()
        info["bad_rows"] = [int(br.numel()), br[:16].tolist()]
        info["bad_cols"] = [int(bc.numel()), bc[:16].tolist()]
        first = bad.nonzero()[:8].tolist()
        info["first"] = [[i, j, float(g2[i, j].item()), float(w2[i, j].item())] for i, j in first]
        return info

    def reference(d, inputs):
        """float32 reference (no tf32) of a suite graph."""
        f = [t.float() for t in inputs]
        fam = d["family"]
        if fam in ("gemm", "gemm_bias_gelu", "matmul_bias_gelu"):
            y = f[0] @ (f[1].t() if d["wt"] else f[1])
            if d["gelu"]:
                y = F.gelu(y + f[2], approximate="tanh")
            return y
        if fam == "softmax":
            return torch.softmax(f[0], dim=1)
        if fam == "rmsnorm":
            return f[0] * torch.rsqrt(f[0].pow(2).mean(dim=1, keepdim=True) + 1e-6) * f[1]
        if fam == "layernorm":
            return F.layer_norm(f[0], (f[0].shape[1],), f[1].reshape(-1), f[2].reshape(-1), eps=1e-5)
        if fam == "pointwise_chain":
            return F.gelu(f[0] + f[1], approximate="tanh") * f[0]
        raise Abort(f"no reference for {fam}")

    def eager(d, inputs):
        """What a framework runs, unfused where it is unfused."""
        fam = d["family"]
        if fam == "gemm":
            return (lambda: F.linear(inputs[0], inputs[1])) if d["wt"] else (lambda: inputs[0] @ inputs[1])
        if fam == "gemm_bias_gelu":
            return lambda: F.gelu(F.linear(inputs[0], inputs[1], inputs[2].reshape(-1)), approximate="tanh")
        if fam == "matmul_bias_gelu":
            return lambda: F.gelu(torch.matmul(inputs[0], inputs[1]).float() + inputs[2], approximate="tanh")
        if fam == "softmax":
            return lambda: torch.softmax(inputs[0], dim=1)
        if fam == "rmsnorm":
            h = inputs[0].shape[1]
            if hasattr(F, "rms_norm"):
                return lambda: F.rms_norm(inputs[0], (h,), inputs[1].reshape(-1), eps=1e-6)
            return lambda: (inputs[0] * torch.rsqrt(inputs[0].float().pow(2).mean(1, keepdim=True) + 1e-6)
                            ).to(inputs[0].dtype) * inputs[1]
        if fam == "layernorm":
            return lambda: F.layer_norm(inputs[0], (inputs[0].shape[1],), inputs[1].reshape(-1), inputs[2].reshape(-1),
                                        eps=1e-5)
        if fam == "pointwise_chain":
            return lambda: F.gelu(inputs[0] + inputs[1], approximate="tanh") * inputs[0]
        raise Abort(f"no eager version of {fam}")

    results = prior["results"] if prior else []
    baselines = {}  # per graph: cuBLAS and eager, measured once on the graph's inputs

    def save(in_flight=None, final=False):
        doc = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "device": props.name, "torch": torch.__version__,
               "cudnn": cudnn, "copy_gbps": copy_gbps, "torch_copy_gbps": torch_copy_gbps, "reps": REPS,
               "clocks_before": clocks_before, "clocks_after": clocks() if final else None, "complete": final,
               "kernels": len(work), "in_flight": in_flight, "next_index": len(results), "results": results}
        write_doc(out_json, doc)
        return doc

    if not prior:
        print(HEADER, flush=True)
    for idx in range(args.first, len(work)):
        name, cand_dir = work[idx]
        row = {"graph": name, "candidate": os.path.basename(cand_dir)}
        if args.deadline and time.time() > args.deadline:
            for n2, c2 in work[idx:]:
                results.append({"graph": n2, "candidate": os.path.basename(c2), "skipped": "time budget"})
            print(f"time budget reached: {len(work) - idx} kernels skipped", flush=True)
            break
        save(in_flight=idx)
        try:
            g = load_graph(cand_dir)
            d = describe(name, g["meta"])
            row.update(family=d["family"], moved_bytes=d["moved"], flops=d["flops"], kernels=len(g["kernels"]),
                       kernel_bytes=g["kernel_bytes"],
                       fits_l2=d["moved"] < 2 * l2_bytes and d["out_bytes"] >= 0.1 * d["moved"])
            wiring = g["wiring"]
            inputs = [make_tensor(s, 17 + i) for i, s in enumerate(wiring["inputs"])]

            def poisoned(s):
                dt = DTYPES[s["dtype"]]
                return torch.full(s["shape"], float("nan") if dt.is_floating_point else 255, dtype=dt, device="cuda")
            outputs = [poisoned(s) for s in wiring["outputs"]]
            tensors = {"INPUT": inputs, "OUTPUT": outputs, "INTERMEDIATE": [poisoned(s) for s in wiring["intermediates"]]}
            keep = []  # buffers the argument structs point to
            fns, packed, grids, blocks, smems = [], [], [], [], []
            for (meta, cubin), w in zip(g["kernels"], wiring["kernels"]):
                kin = [tensors[kind][i] for kind, i in w["inputs"]]
                kout = [tensors[kind][i] for kind, i in w["outputs"]]
                values = {"dim": meta["domain"]}
                for i, t in enumerate(kin):
                    values.update({f"in{i}": t.data_ptr(), f"in{i}_size": list(t.shape),
                                   f"in{i}_stride": list(t.stride())})
                for i, t in enumerate(kout):
                    values.update({f"out{i}": t.data_ptr(), f"out{i}_stride": list(t.stride())})
                # Split reductions: a zeroed workspace as the launch rule sizes it.
                ws_bytes = (extent_of(meta["launch"]["workspaceBytes"], meta["domain"])
                            if "workspaceBytes" in meta["launch"] else 0)
                workspace = torch.zeros(max(8, ws_bytes), dtype=torch.uint8, device="cuda")
                keep.append(workspace)
                values["workspace"] = workspace.data_ptr()
                # TMA operands: tensor maps encoded by the driver, or zeros when the layout allows none.
                for decl in meta["fields"]:
                    if not decl.startswith("tir_tensor_map "):
                        continue
                    field = decl.split()[1]
                    index, box = field[4:].split("_")
                    t = kin[int(index)]
                    b0, b1 = (int(v) for v in box.split("x"))
                    raw = ctypes.create_string_buffer(128)
                    if tensor_map_encodable(t, torch):
                        if lib.tir_gpu_tensor_map(raw, int(t.dtype == torch.bfloat16), t.data_ptr(), t.shape[1],
                                                  t.shape[0], t.stride(0) * t.element_size(), b0, b1, err, 1024) != 0:
                            raise Abort(err.value.decode())
                    values[field] = raw.raw
                packed.append(pack(meta["fields"], values))
                grid, block = grid_of(meta["launch"], meta["domain"])
                grids += grid
                blocks += block
                smems.append(int(meta["launch"].get("dynamicSharedMemoryBytes", 0) or 0))
                fn = lib.tir_gpu_load(cubin.encode(), err, 1024)
                if not fn:
                    raise Abort(err.value.decode())
                fns.append(fn)

            def seq(ks):
                """ctypes arguments of the kernels `ks` (indices), in order."""
                return (len(ks), (ctypes.c_void_p * len(ks))(*[fns[k] for k in ks]),
                        (ctypes.c_char_p * len(ks))(*[packed[k] for k in ks]),
                        (ctypes.c_uint * (3 * len(ks)))(*[v for k in ks for v in grids[3 * k:3 * k + 3]]),
                        (ctypes.c_uint * (3 * len(ks)))(*[v for k in ks for v in blocks[3 * k:3 * k + 3]]),
                        (ctypes.c_uint * len(ks))(*[smems[k] for k in ks]))
            everything = seq(list(range(len(fns))))
            if lib.tir_gpu_launch(*everything, err, 1024) != 0:
                raise Abort(err.value.decode())
            want = reference(d, inputs)
            row["rel_l2"] = rel_l2(outputs[0], want)
            bound = max(BOUND.get(outputs[0].dtype, 0), 1e-3 if d["gemm"] else 0)
            row["correct"] = row["rel_l2"] <= bound
            if not row["correct"]:
                try:
                    row["wrong_where"] = wrong_where(outputs[0], want, bound)
                except Exception as e:  # noqa: BLE001 - the diagnosis must not hide the row
                    row["wrong_where"] = {"error": f"{type(e).__name__}: {e}"[:200]}
            if args.check_only:
                results.append(row)
                print(f"{name:36} {row['candidate']:7} checked: rel L2 {row['rel_l2']:.1e} "
                      f"{'ok' if row['correct'] else 'WRONG'}" + (wrong_summary(row["wrong_where"])
                                                               if row.get("wrong_where") else ""), flush=True)
                save()
                continue
            row["tir_s"], row["iqr_s"], row["timing"], row["samples"] = timed(
                lambda reps, ev, cu, n: lib.tir_gpu_time(*everything, reps, ev, cu, n, err, 1024))
            if len(fns) > 1:  # each kernel alone too (its inputs are valid now), to show where the time goes
                row["kernel_s"] = [timed(lambda reps, ev, cu, n, one=seq([k]): lib.tir_gpu_time(
                    *one, reps, ev, cu, n, err, 1024))[0] for k in range(len(fns))]
            if name not in baselines:
                base = {}
                try:
                    base["eager_s"] = time_torch(eager(d, inputs))
                except Exception as e:  # noqa: BLE001 - a baseline that cannot run is reported, not fatal
                    base["eager_error"] = str(e)[:200]
                if d["gemm"]:
                    out_f32 = outputs[0].dtype == torch.float32
                    c = torch.full_like(outputs[0], float("nan"))
                    # cuBLASLt's bias has the output's type; the suite's biases already do.
                    bias = inputs[2].reshape(-1).to(c.dtype).contiguous() if d["gelu"] else None

                    def create(b):
                        return lib.tir_gpu_cublas_create(d["m"], d["n"], d["k"], int(d["wt"]), int(out_f32),
                                                         inputs[0].data_ptr(), inputs[1].data_ptr(),
                                                         b.data_ptr() if b is not None else None, c.data_ptr(), err, 1024)
                    gemm, ref = create(bias), want
                    if not gemm and bias is not None:
                        # No GELU_BIAS algorithm for these types: time cuBLAS's plain product, and say so.
                        base["cublas_note"] = "no GELU_BIAS epilogue (" + err.value.decode() + "): plain matmul"
                        gemm = create(None)
                        ref = reference(dict(d, gelu=False), inputs)
                    elif bias is not None:
                        # The product without the epilogue too: what a fused kernel is held against.
                        plain = create(None)
                        if plain:
                            try:
                                if lib.tir_gpu_cublas_run(plain, err, 1024) == 0:
                                    base["cublas_plain_s"] = timed(lambda reps, ev, cu, n: lib.tir_gpu_cublas_time(
                                        plain, reps, ev, cu, n, err, 1024))[0]
                            finally:
                                lib.tir_gpu_cublas_destroy(plain)
                    if not gemm:
                        base["cublas_error"] = err.value.decode()
                    else:
                        try:
                            if lib.tir_gpu_cublas_run(gemm, err, 1024) != 0:
                                raise Abort(err.value.decode())
                            base["cublas_rel_l2"] = rel_l2(c, ref)
                            base["cublas_s"], base["cublas_iqr_s"], base["cublas_timing"], _ = timed(
                                lambda reps, ev, cu, n: lib.tir_gpu_cublas_time(gemm, reps, ev, cu, n, err, 1024))
                        except Abort as e:
                            base["cublas_error"] = str(e)
                        finally:
                            lib.tir_gpu_cublas_destroy(gemm)
                baselines[name] = base
            row.update(baselines[name])
            row["gbps"] = d["moved"] / row["tir_s"] / 1e9
            row["frac_copy"] = row["gbps"] / copy_gbps
            if d["gemm"]:
                row["tflops"] = d["flops"] / row["tir_s"] / 1e12
                if "cublas_s" in row:
                    row["cublas_tflops"] = d["flops"] / row["cublas_s"] / 1e12
                    row["cublas_frac_copy"] = d["moved"] / row["cublas_s"] / 1e9 / copy_gbps
                    if row["timing"] != row["cublas_timing"]:
                        row["note"] = "tir and cuBLAS timed by different sources"
            if d["bar"]:
                row["bar_met"] = bool(row["correct"]) and row["frac_copy"] >= BARS[d["bar"]][0]
        except Abort as e:
            row["error"] = str(e)
        except Exception as e:  # noqa: BLE001 - one broken kernel must not hide the others' figures
            row["error"] = f"{type(e).__name__}: {e}"[:300]
        results.append(row)
        print(table_line(row), flush=True)
        save()
        if "error" in row:
            try:  # a fault in a kernel poisons the context: stop, and let the supervisor start a fresh process
                torch.cuda.synchronize()
                torch.ones(1, device="cuda").add_(1).item()
            except Exception as e:  # noqa: BLE001
                print(f"CUDA context lost after {name}/{row['candidate']} ({str(e)[:120]}): restarting", flush=True)
                sys.stdout.flush()
                os._exit(4)
    save(final=True)
    sys.exit(0)


def write_doc(path, doc):
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(path + ".tmp", path)


def report(doc, out_dir, seconds):
    """The final table (stdout and gpu_table.md) from gpu_results.json; returns the exit status."""
    results = doc["results"]
    with open(os.path.join(out_dir, "gpu_table.md"), "w") as f:
        f.write(f"{doc['date']}, {doc['device']}, copy {doc['copy_gbps']:.0f} GB/s\n\n" + markdown_table(results))
    print(f"\n{doc['device']}, torch {doc['torch']}, cuDNN {doc['cudnn'] or 'not available'}")
    print(f"clocks before {doc['clocks_before']}\nclocks after  {doc['clocks_after']}")
    print(f"copy bandwidth {doc['copy_gbps']:.0f} GB/s (read + write, cuMemcpyDtoD 512 MiB; torch copy_ 1 GiB "
          f"{doc['torch_copy_gbps']:.0f}); {doc['reps']} timed runs each, medians, L2 flushed before every run; "
          f"x cuBLAS and x eager = their time / tir's (above 1: tir faster); % copy = (inputs + outputs bytes) / time "
          f"over the copy bandwidth; * = the data fits in L2, so writes may not reach HBM inside the timed span; "
          f"bar = the acceptance bar in NOTES.md\n")
    print(HEADER)
    for r in results:
        print(table_line(r))
    errors = sum("error" in r for r in results)
    wrong = sum(r.get("correct") is False for r in results)
    skipped = sum("skipped" in r for r in results)
    print(f"\n{len(results) - errors - skipped} kernels measured, {errors} errors, {wrong} wrong results, "
          f"{skipped} skipped (time budget); {seconds:.0f} s")
    return 0 if errors == wrong == skipped == 0 else 1


def supervise(args):
    """Runs the measurement in child processes: a child that loses its CUDA context (a faulting kernel)
    or stops making progress (a hung kernel, killed after --stall-s) is replaced by a fresh one that
    resumes after the kernel at fault, which gets an error row. Prints the final table."""
    start = time.time()
    out_json = os.path.join(args.out, "gpu_results.json")
    if os.path.exists(out_json):
        os.remove(out_json)
    work = candidates(args.kernels, args.only)
    first, rc = 0, 0
    while True:
        cmd = [sys.executable, os.path.abspath(__file__), "--child", "--first", str(first), "--kernels", args.kernels,
               "--lib", args.lib, "--out", args.out, "--deadline", str(args.deadline)]
        cmd += (["--only", args.only] if args.only else []) + (["--check-only"] if args.check_only else [])
        child = subprocess.Popen(cmd)
        last = time.time()
        while True:
            try:
                rc = child.wait(timeout=1)
                break
            except subprocess.TimeoutExpired:
                pass
            if os.path.exists(out_json):
                last = max(last, os.path.getmtime(out_json))
            late = args.deadline and time.time() > args.deadline + args.stall_s
            if time.time() - last > args.stall_s or late:
                child.kill()
                rc = child.wait()
                rc = rc if rc else -9
                print(f"run.py: no progress for {time.time() - last:.0f} s{' past the deadline' if late else ''}: "
                      "child killed", flush=True)
                break
        if not os.path.exists(out_json):
            die(f"the measuring process exited ({rc}) before measuring anything", rc if rc > 0 else 3)
        doc = json.load(open(out_json))
        if doc.get("complete"):
            break
        at = doc.get("in_flight")
        if at is not None:  # died or hung inside kernel `at`: record it and go on after it
            name, cand_dir = work[at]
            doc["results"].append({"graph": name, "candidate": os.path.basename(cand_dir),
                                   "error": f"the measuring process died or hung in this kernel (exit {rc})"})
            print(table_line(doc["results"][-1]), flush=True)
        doc["in_flight"] = None
        first = len(doc["results"])
        if first >= len(work) or (args.deadline and time.time() > args.deadline):
            for name, cand_dir in work[first:]:
                doc["results"].append({"graph": name, "candidate": os.path.basename(cand_dir), "skipped": "time budget"})
            doc["complete"] = True
            write_doc(out_json, doc)
            break
        write_doc(out_json, doc)
        print(f"run.py: resuming at kernel {first} of {len(work)} in a fresh process", flush=True)
    sys.exit(report(doc, args.out, time.time() - start))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--kernels", default="bench/gpu/out", help="prepare.sh's output")
    p.add_argument("--lib", help="the runner library (libtir_gpu.so)")
    p.add_argument("--out", default="bench/gpu/results")
    p.add_argument("--deadline", type=float, default=0, help="Unix time after which no further kernel starts")
    p.add_argument("--dry-run", action="store_true", help="CPU-side checks only: no GPU, no figures")
    p.add_argument("--stall-s", type=float, default=90, help="kill a measuring process that makes no progress this long")
    p.add_argument("--only", help="graphs whose name matches this regular expression (default: all)")
    p.add_argument("--check-only", action="store_true",
                   help="the checked launch only: no timing, no baselines (for a run under compute-sanitizer)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--first", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args()
    if not os.path.isdir(args.kernels):
        die(f"{args.kernels} is missing: run bench/gpu/prepare.sh where Bazel is, and carry bench/gpu/out", 2)
    if args.dry_run:
        dry_run(args)
        return
    if not args.lib:
        die("--lib is required (bench/gpu/run.sh builds it)", 2)
    os.makedirs(args.out, exist_ok=True)
    if args.child:
        main_gpu(args)
    else:
        supervise(args)


if __name__ == "__main__":
    main()
