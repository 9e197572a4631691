#!/usr/bin/env python3
"""bench/gpu: tir's kernels on a GPU, checked and timed against PyTorch.

For each suite graph (emitted by prepare.sh) and each emitted candidate:
random seeded inputs (never all zeros), outputs poisoned (NaN / 0xff), one
checked launch compared with a PyTorch reference (relative L2 error under the
dtype's bound), then CUPTI-timed runs with L2 flushed between them. Baselines
measured in the same run: device-to-device copy bandwidth, cuBLAS (through
PyTorch) for the matmul, PyTorch eager and torch.compile for every graph.
Matmuls (bf16, bias + GELU fused) are compared with cuBLAS on the same
shape and with PyTorch eager's unfused matmul + bias + GELU; memory-bound
graphs with the copy bandwidth. SM and memory clocks are recorded before and
after. Prints one table and writes gpu_results.json.
"""
import argparse
import ctypes
import glob
import json
import math
import os
import statistics
import subprocess
import sys

import torch
import torch.nn.functional as F

DTYPES = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16,
          "si8": torch.int8, "si16": torch.int16, "si32": torch.int32, "si64": torch.int64,
          "ui8": torch.uint8, "i1": torch.uint8}
BOUND = {torch.float32: 1e-5, torch.float64: 1e-12, torch.float16: 1e-2, torch.bfloat16: 1e-2}
C_TYPES = {"float": (4, 4), "double": (8, 8), "tir_bf16": (2, 2), "tir_f16": (2, 2), "tir_u8": (1, 1),
           "tir_i8": (1, 1), "tir_i16": (2, 2), "tir_u16": (2, 2), "tir_i32": (4, 4), "tir_u32": (4, 4),
           "tir_i64": (8, 8), "tir_u64": (8, 8)}


def references():
    """PyTorch versions of the suite graphs: (eager function, flops, bytes-moved function)."""
    def pointwise_chain(x, b):
        return F.gelu(x + b, approximate="tanh") * x

    def matmul_bias_gelu(x, w, b):
        # What a framework runs: cuBLAS's bf16 matmul, then bias and GELU (unfused).
        return F.gelu(torch.matmul(x, w).float() + b, approximate="tanh")

    def softmax(x):
        return torch.softmax(x, dim=1)

    def layernorm(x, g, b):
        return F.layer_norm(x, (x.shape[1],), g.reshape(-1), b.reshape(-1), eps=1e-5)

    return {"pointwise_chain": pointwise_chain, "matmul_bias_gelu": matmul_bias_gelu,
            "softmax": softmax, "layernorm": layernorm}


def checked_against(fn):
    """The reference outputs are compared with: the matmul in f32 (no bf16 rounding of the product, no tf32)."""
    if fn.__name__ != "matmul_bias_gelu":
        return fn

    def exact(x, w, b):
        torch.backends.cuda.matmul.allow_tf32 = False
        return F.gelu(torch.matmul(x.float(), w.float()) + b, approximate="tanh")
    return exact


def reference_of(refs, name):
    """The reference of a suite graph: by name, or by its family (matmul_bias_gelu_m16_n4096)."""
    if name in refs:
        return refs[name]
    for family, fn in refs.items():
        if name.startswith(family + "_"):
            return fn
    return None


def clocks():
    """SM and memory clocks now (MHz), as nvidia-smi reports them; {} when it cannot."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=20).stdout
        sm, mem, sm_max, temp, power = [v.strip() for v in out.splitlines()[0].split(",")]
        return {"sm_mhz": sm, "mem_mhz": mem, "sm_max_mhz": sm_max, "temperature_c": temp, "power_w": power}
    except Exception as e:  # no nvidia-smi: say so in the results
        return {"error": str(e)[:120]}


def tensor_map_encodable(t):
    """What tir's launchers require of a TMA operand (HostBuild's TensorMapEncodable)."""
    if t.dim() != 2 or t.dtype not in (torch.bfloat16, torch.float16):
        return False
    s0, s1 = t.stride()
    return (s1 == 1 and t.data_ptr() % 16 == 0 and s0 > 0 and (s0 * 2) % 16 == 0 and s0 * 2 < (1 << 40)
            and 1 <= t.shape[0] < (1 << 31) and 1 <= t.shape[1] < (1 << 31))


def rel_l2(got, want):
    got, want = got.double(), want.double()
    if torch.isnan(got).any() and not torch.isnan(want).any():
        return math.inf
    return (torch.linalg.vector_norm(got - want) / max(torch.linalg.vector_norm(want).item(), 1e-30)).item()


def time_torch(fn, reps=20):
    flush = torch.empty(512 << 20, dtype=torch.uint8, device="cuda")
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
            buf += values[decl.split()[1]]
            continue
        if "*" in decl:
            size, align, name, count, ctype = 8, 8, decl.split("*")[1].strip(), 1, "ptr"
        else:
            ctype, rest = decl.split()[0], decl.split()[1]
            name, count = (rest.split("[")[0], int(rest.split("[")[1].rstrip("]"))) if "[" in rest else (rest, 1)
            size, align = C_TYPES[ctype]
        while len(buf) % align:
            buf.append(0)
        vals = values[name]
        vals = vals if isinstance(vals, (list, tuple)) else [vals]
        for v in list(vals)[:count] + [0] * (count - len(vals)):
            buf += int(v).to_bytes(8, "little", signed=v < 0)[:size] if ctype in ("ptr", "tir_i64", "tir_u64", "tir_i32",
                                                                                 "tir_u32", "tir_i16", "tir_u16",
                                                                                 "tir_i8", "tir_u8") \
                else torch.tensor([v], dtype=torch.float32 if ctype == "float" else torch.float64).numpy().tobytes()
    while len(buf) % struct_align:
        buf.append(0)
    return bytes(buf)


def make_tensor(spec, seed):
    shape = spec["shape"]
    dtype = DTYPES[spec["dtype"]]
    g = torch.Generator(device="cuda").manual_seed(seed)
    if dtype.is_floating_point:
        t = torch.rand(shape, device="cuda", generator=g, dtype=torch.float32) * 2 - 1
        t = torch.where(t == 0, torch.full_like(t, 0.5), t).to(dtype)
    else:
        t = torch.randint(1, 9, shape, device="cuda", generator=g).to(dtype)
    if "stride" in spec:
        strides = [int(s) for s in spec["stride"].strip("()").split(",")]
        view = torch.empty_strided(shape, strides, dtype=dtype, device="cuda")
        view.copy_(t)
        return view
    return t.contiguous()


def extent_of(ext, domain):
    v = int(ext.get("constant", "1") or 1)
    for d in ext.get("dims", []):
        v *= domain[d.get("dim", 0)]
    div = max(1, int(ext.get("divisor", "1") or 1))
    v = -(-v // div)
    limit = int(ext.get("max", "0") or 0)
    return min(v, limit) if limit > 0 else v


def grid_of(launch, domain):
    grid = [max(1, extent_of(ext, domain)) for ext in launch["grid"]]
    return (grid + [1, 1, 1])[:3], (list(launch["block"]) + [1, 1, 1])[:3]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kernels", required=True)
    p.add_argument("--lib", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--torch-compile", action="store_true", help="also time torch.compile (slow to compile)")
    args = p.parse_args()
    clocks_before = clocks()
    torch.cuda.init()
    torch.empty(1, device="cuda")  # create PyTorch's context first
    lib = ctypes.CDLL(args.lib)
    err = ctypes.create_string_buffer(512)
    if lib.tir_gpu_init(torch.cuda.current_device(), err, 512) != 0:
        sys.exit("tir_gpu_init: " + err.value.decode())
    lib.tir_gpu_load.restype = ctypes.c_void_p
    props = torch.cuda.get_device_properties(0)
    print(f"device: {props.name}, {props.multi_processor_count} SMs, torch {torch.__version__}")

    # Baselines measured in this run.
    big = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(big)
    copy_s = time_torch(lambda: dst.copy_(big))
    copy_gbps = 2 * big.numel() / copy_s / 1e9
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    cublas_s = time_torch(lambda: torch.matmul(a, a))
    cublas_tflops = 2 * 4096 ** 3 / cublas_s / 1e12
    del big, dst
    print(f"copy bandwidth {copy_gbps:.0f} GB/s; cuBLAS bf16 4096^3 {cublas_tflops:.0f} TFLOP/s; clocks {clocks_before}\n")
    lib.tir_gpu_tensor_map.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_ulonglong, ctypes.c_ulonglong,
                                       ctypes.c_ulonglong, ctypes.c_ulonglong, ctypes.c_uint, ctypes.c_uint,
                                       ctypes.c_char_p, ctypes.c_int]

    refs = references()
    rows, results = [], []
    baselines = {}  # per graph: cuBLAS on the same shape, eager, torch.compile
    for name in sorted(os.listdir(args.kernels)):
        fn = reference_of(refs, name)
        for cand_dir in sorted(glob.glob(os.path.join(args.kernels, name, "*"))):
            launch_files = glob.glob(os.path.join(cand_dir, "*_k0.launch.json"))
            if not launch_files or len(glob.glob(os.path.join(cand_dir, "*.launch.json"))) != 1:
                continue  # the suite's graphs are one kernel each on sm_90a
            meta = json.load(open(launch_files[0]))
            cubin = glob.glob(os.path.join(cand_dir, "*.cubin"))[0]
            inputs = [make_tensor(s, 17 + i) for i, s in enumerate(meta["inputs"])]
            outputs = []
            for s in meta["outputs"]:
                dt = DTYPES[s["dtype"]]
                o = torch.empty(s["shape"], dtype=dt, device="cuda")
                o.fill_(float("nan") if dt.is_floating_point else 255)
                outputs.append(o)
            values = {"dim": meta["domain"]}
            for i, t in enumerate(inputs):
                values[f"in{i}"] = t.data_ptr()
                values[f"in{i}_size"] = list(t.shape)
                values[f"in{i}_stride"] = list(t.stride())
            for i, t in enumerate(outputs):
                values[f"out{i}"] = t.data_ptr()
                values[f"out{i}_stride"] = list(t.stride())
            # Split reductions: a zeroed workspace as the launch rule sizes it.
            ws_bytes = extent_of(meta["launch"]["workspaceBytes"], meta["domain"]) if "workspaceBytes" in meta["launch"] else 0
            workspace = torch.zeros(max(8, ws_bytes), dtype=torch.uint8, device="cuda")
            values["workspace"] = workspace.data_ptr()
            # TMA operands: tensor maps encoded by the driver, or zeros when the layout allows none.
            bad_map = None
            for decl in meta["fields"]:
                if not decl.startswith("tir_tensor_map "):
                    continue
                field = decl.split()[1]
                index, box = field[4:].split("_")
                t = inputs[int(index)]
                b0, b1 = (int(v) for v in box.split("x"))
                raw = ctypes.create_string_buffer(128)
                if tensor_map_encodable(t):
                    if lib.tir_gpu_tensor_map(raw, int(t.dtype == torch.bfloat16), t.data_ptr(), t.shape[1], t.shape[0],
                                              t.stride(0) * t.element_size(), b0, b1, err, 512) != 0:
                        bad_map = err.value.decode()
                values[field] = raw.raw
            params = pack(meta["fields"], values)
            grid, block = grid_of(meta["launch"], meta["domain"])
            smem = int(meta["launch"].get("dynamicSharedMemoryBytes", 0) or 0)
            g3, b3 = (ctypes.c_uint * 3)(*grid), (ctypes.c_uint * 3)(*block)
            kernel = lib.tir_gpu_load(cubin.encode(), err, 512)
            row = {"graph": name, "candidate": os.path.basename(cand_dir), "shape": str(meta["inputs"][0]["shape"])}
            if bad_map:
                row["error"] = bad_map
                results.append(row)
                continue
            if not kernel:
                row["error"] = err.value.decode()
                results.append(row)
                continue
            if lib.tir_gpu_launch(ctypes.c_void_p(kernel), params, g3, b3, smem, err, 512) != 0:
                row["error"] = err.value.decode()
                results.append(row)
                continue
            want = checked_against(fn)(*inputs) if fn else None
            row["rel_l2"] = rel_l2(outputs[0], want) if want is not None else float("nan")
            row["correct"] = want is not None and row["rel_l2"] <= max(BOUND.get(outputs[0].dtype, 0), 1e-3 if "matmul" in name else 0)
            reps = 20
            out = (ctypes.c_double * reps)()
            source = ctypes.c_int(0)
            n = lib.tir_gpu_time(ctypes.c_void_p(kernel), params, g3, b3, smem, reps, out, ctypes.byref(source), err, 512)
            samples = sorted(out[i] * 1e-9 for i in range(max(n, 0)))
            row["tir_s"] = statistics.median(samples) if samples else float("nan")
            q = len(samples) // 4
            row["iqr_s"] = samples[-q - 1] - samples[q] if samples else float("nan")
            row["timing"] = {1: "cupti", 2: "cuda-events"}.get(source.value, "none")
            if name not in baselines:
                base = {"eager_s": time_torch(lambda: fn(*inputs)) if fn else float("nan"), "compile_s": float("nan")}
                if "matmul" in name:
                    base["cublas_s"] = time_torch(lambda: torch.matmul(inputs[0], inputs[1]))
                if args.torch_compile and fn:
                    try:
                        compiled = torch.compile(fn)
                        compiled(*inputs)
                        base["compile_s"] = time_torch(lambda: compiled(*inputs))
                    except Exception as e:  # torch.compile may be unavailable; say so
                        base["compile_error"] = str(e)[:200]
                baselines[name] = base
            row.update({k: v for k, v in baselines[name].items()})
            moved = sum(t.numel() * t.element_size() for t in inputs + outputs)
            if "matmul" in name:
                m_, n_, k_ = meta["domain"][-3:]
                row["tflops"] = 2 * m_ * n_ * k_ / row["tir_s"] / 1e12
                row["cublas_tflops"] = 2 * m_ * n_ * k_ / row["cublas_s"] / 1e12
                # cuBLAS's plain matmul on the same shape (tir's kernel adds bias + GELU).
                row["vs_baseline"] = row["tflops"] / row["cublas_tflops"]
                row["gbps"] = moved / row["tir_s"] / 1e9
            else:
                row["gbps"] = moved / row["tir_s"] / 1e9
                row["vs_baseline"] = row["gbps"] / copy_gbps
            results.append(row)
    clocks_after = clocks()
    print(f"clocks before {clocks_before}\nclocks after  {clocks_after}")
    print(f"{'graph':32} {'cand':8} {'tir us':>9} {'iqr us':>8} {'rate':>14} {'vs copy/cuBLAS':>15} "
          f"{'eager us':>9} {'x eager':>8} {'compile us':>11} {'x compile':>9} {'rel L2':>9} ok")
    for r in results:
        if "error" in r:
            print(f"{r['graph']:32} {r['candidate']:8} ERROR {r['error']}")
            continue
        rate = f"{r['tflops']:.1f} TFLOP/s" if "tflops" in r else f"{r['gbps']:.0f} GB/s"
        print(f"{r['graph']:32} {r['candidate']:8} {r['tir_s']*1e6:9.1f} {r['iqr_s']*1e6:8.1f} {rate:>14} "
              f"{r['vs_baseline']*100:14.0f}% {r['eager_s']*1e6:9.1f} {r['eager_s']/r['tir_s']:8.2f} "
              f"{r['compile_s']*1e6:11.1f} {r['compile_s']/r['tir_s']:9.2f} {r['rel_l2']:9.2e} "
              f"{'yes' if r['correct'] else 'NO'}")
    json.dump({"device": props.name, "copy_gbps": copy_gbps, "cublas_tflops": cublas_tflops,
               "clocks_before": clocks_before, "clocks_after": clocks_after, "results": results},
              open(os.path.join(args.out, "gpu_results.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
