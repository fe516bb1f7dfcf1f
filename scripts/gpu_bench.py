#!/usr/bin/env python3
"""The GPU benchmark: the fused HKT attention (L = 3) and MHA (L = 1)
through our compiler, f32 and tf32, beside PyTorch's
scaled_dot_product_attention; B = 1, H = 8, d = 64, causal.

  gpu_bench.py prepare --out DIR [--sizes 1024,4096,16384]   (here: compiles)
  gpu_bench.py run --dir DIR --hkt-run PATH [--reps 20]       (on the GPU)

`run` prints one markdown table: per T, the kernels' time of each module
(hkt-run --bench: CUDA events from its first kernel to the end of its last,
so the attention's own small kernels, the convex weights and the final
normalisation, are in it) and its TFLOP/s counting the attention's
multiply-adds (each level's score block at its own resolution, then P V;
half of each for causal), and SDPA's time in bf16 (FlashAttention) and
f32 when PyTorch sees a GPU.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
H, HEAD_DIM = 8, 64


def flops(levels, T, causal=True):
    """Multiply-add FLOPs of the attention: sum_l 2 H d (T / 2^l)^2 for the
    scores, 2 H d T^2 for P V, halved when causal."""
    scores = sum(2 * H * HEAD_DIM * (T >> l) ** 2 for l in range(levels))
    pv = 2 * H * HEAD_DIM * T * T
    return (scores + pv) * (0.5 if causal else 1.0)


def module_name(levels, T, precision):
    return "att-L%d-T%d-%s" % (levels, T, precision)


def prepare(args):
    hkt_compile = args.hkt_compile
    os.makedirs(args.out, exist_ok=True)
    for T in args.sizes:
        for levels in (3, 1):
            ir = os.path.join(args.out, "att-L%d-T%d.mlir" % (levels, T))
            with open(ir, "w") as f:
                subprocess.run([sys.executable, os.path.join(HERE, "attention_ir.py"),
                                "--levels", str(levels), "--seq", str(T),
                                "--heads", str(H), "--head-dim", str(HEAD_DIM)],
                               stdout=f, check=True)
            for precision in ("f32", "tf32"):
                out = os.path.join(args.out, module_name(levels, T, precision))
                subprocess.run([hkt_compile, ir, "--target", "nvvm",
                                "--precision", precision, "-o", out], check=True)
                print("compiled", out, flush=True)
            os.remove(ir)
    with open(os.path.join(args.out, "sizes.json"), "w") as f:
        json.dump(args.sizes, f)


def bench_module(hkt_run, moddir, reps):
    p = subprocess.run([hkt_run, moddir, "--device", "cuda", "--random", "1",
                        "--bench", str(reps), "--quiet"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        return None, p.stderr.strip().splitlines()[-1] if p.stderr else "failed"
    r = json.loads(p.stdout.strip().splitlines()[-1])
    return r.get("device_median_ms"), None


def sdpa_ms(T, dtype_name, reps):
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    dtype = {"bf16": torch.bfloat16, "f32": torch.float32}[dtype_name]
    q, k, v = (torch.randn(1, H, T, HEAD_DIM, device="cuda", dtype=dtype)
               for _ in range(3))
    for _ in range(3):
        F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        F.scaled_dot_product_attention(q, k, v, is_causal=True)
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def run(args):
    with open(os.path.join(args.dir, "sizes.json")) as f:
        sizes = json.load(f)
    cell = lambda ms, fl: ("%.3f (%.1f)" % (ms, fl / ms / 1e9)) if ms else "n/a"
    lines = ["| T | HKT f32 ms (TFLOP/s) | HKT tf32 | MHA f32 | MHA tf32 | "
             "HKT / MHA (tf32; FLOP ratio %.3f) | SDPA bf16 ms (TFLOP/s) | SDPA f32 | "
             "HKT tf32 / SDPA bf16 |" % (flops(3, 4096) / flops(1, 4096)),
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    errors = []
    for T in sizes:
        ms = {}
        for levels in (3, 1):
            for precision in ("f32", "tf32"):
                t, err = bench_module(args.hkt_run,
                                      os.path.join(args.dir, module_name(levels, T, precision)),
                                      args.reps)
                ms[levels, precision] = t
                if err:
                    errors.append("%s: %s" % (module_name(levels, T, precision), err))
        bf16, f32 = sdpa_ms(T, "bf16", args.reps), sdpa_ms(T, "f32", args.reps)
        ratio = lambda a, b: "%.2f" % (a / b) if a and b else "n/a"
        lines.append("| %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            T, cell(ms[3, "f32"], flops(3, T)), cell(ms[3, "tf32"], flops(3, T)),
            cell(ms[1, "f32"], flops(1, T)), cell(ms[1, "tf32"], flops(1, T)),
            ratio(ms[3, "tf32"], ms[1, "tf32"]), cell(bf16, flops(1, T)),
            cell(f32, flops(1, T)), ratio(ms[3, "tf32"], bf16)))
        print(lines[-1], file=sys.stderr, flush=True)
    print("\n".join(lines))
    for e in errors:
        print("error:", e)
    return 1 if errors else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--out", required=True)
    p.add_argument("--hkt-compile", default=os.path.join(HERE, "..", "build", "bin", "hkt-compile"))
    p.add_argument("--sizes", default="1024,4096,16384",
                   type=lambda s: [int(x) for x in s.split(",")])
    r = sub.add_parser("run")
    r.add_argument("--dir", required=True)
    r.add_argument("--hkt-run", required=True)
    r.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    sys.exit(prepare(args) if args.cmd == "prepare" else run(args))


if __name__ == "__main__":
    main()
