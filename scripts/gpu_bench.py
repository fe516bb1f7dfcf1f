#!/usr/bin/env python3
"""The GPU benchmark: the fused HKT attention (L = 3) and MHA (L = 1)
through our compiler beside PyTorch's scaled_dot_product_attention;
B = 1, H = 8, causal.

  gpu_bench.py prepare --out DIR [--sizes 1024,4096,16384]   (here: compiles)
  gpu_bench.py run --dir DIR --hkt-run PATH [--reps 20]       (on the GPU)

`run` prints two markdown tables:
  - bf16, the training path, at d = 64 and d = 128: forward (the module's
    entry) and forward + backward (its gradient entry, compiled with
    --backward: the forward recomputed, then attention_bwd_dkdv and
    attention_bwd_dq) of HKT and MHA, and SDPA's forward and forward +
    backward in bf16 (FlashAttention) on the same GPU;
  - f32 and tf32 at d = 64, forward only (the inference path);
  - one module for every length (issue 25): the whole bf16 layer (D = 512,
    H = 8, L = 3, hybrid, causal; forward and forward + backward) compiled
    once with --max-seq-len (the largest size) against a static compile
    per size, and the ratio of their times.
Times are the kernels' (hkt-run --bench: CUDA events from the entry's first
kernel to the end of its last, so the attention's own small kernels, the
convex weights and the final normalisation, are in it; the arguments' copies
are not); medians of --reps calls. TFLOP/s count the attention's
multiply-adds: each level's score block at its own resolution, then P V,
half of each when causal; forward + backward counts 3.5 times the forward
(FlashAttention's convention: the backward's five products against the
forward's two).
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
H = 8
BF16_HEAD_DIMS = (64, 128)
BACKWARD_FACTOR = 3.5


def flops(levels, T, d, causal=True):
    """Multiply-add FLOPs of the attention's forward: sum_l 2 H d (T / 2^l)^2
    for the scores, 2 H d T^2 for P V, halved when causal."""
    scores = sum(2 * H * d * (T >> l) ** 2 for l in range(levels))
    pv = 2 * H * d * T * T
    return (scores + pv) * (0.5 if causal else 1.0)


def module_name(levels, T, d, precision, backward=False):
    return "att-L%d-T%d-d%d-%s%s" % (levels, T, d, precision,
                                     "-bwd" if backward else "")


def variants():
    """(d, precision, backward) of every module a (levels, T) gets."""
    out = [(64, "f32", False), (64, "tf32", False)]
    for d in BF16_HEAD_DIMS:
        out += [(d, "bf16", False), (d, "bf16", True)]
    return out


def prepare(args):
    os.makedirs(args.out, exist_ok=True)
    for T in args.sizes:
        for levels in (3, 1):
            for d in sorted({v[0] for v in variants()}):
                ir = os.path.join(args.out, "att-L%d-T%d-d%d.mlir" % (levels, T, d))
                with open(ir, "w") as f:
                    subprocess.run([sys.executable, os.path.join(HERE, "attention_ir.py"),
                                    "--levels", str(levels), "--seq", str(T),
                                    "--heads", str(H), "--head-dim", str(d)],
                                   stdout=f, check=True)
                for vd, precision, backward in variants():
                    if vd != d:
                        continue
                    out = os.path.join(args.out, module_name(levels, T, d, precision, backward))
                    subprocess.run([args.hkt_compile, ir, "--target", "nvvm",
                                    "--precision", precision, "-o", out]
                                   + (["--backward"] if backward else []), check=True)
                    print("compiled", out, flush=True)
                os.remove(ir)
    prepare_layers(args)
    with open(os.path.join(args.out, "sizes.json"), "w") as f:
        json.dump(args.sizes, f)


def bench_module(hkt_run, moddir, reps, entry, size=None):
    p = subprocess.run([hkt_run, moddir, "--device", "cuda", "--entry", entry,
                        "--random", "1", "--bench", str(reps), "--quiet"]
                       + (["--size", "T=%d" % size] if size else []),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        return None, p.stderr.strip().splitlines()[-1] if p.stderr else "failed"
    r = json.loads(p.stdout.strip().splitlines()[-1])
    return r.get("device_median_ms"), None


def sdpa_ms(T, d, dtype_name, reps, backward=False):
    """SDPA's median time (forward, or forward + backward), None without a
    GPU or PyTorch."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    dtype = {"bf16": torch.bfloat16, "f32": torch.float32}[dtype_name]
    q, k, v = (torch.randn(1, H, T, d, device="cuda", dtype=dtype,
                           requires_grad=backward) for _ in range(3))
    dy = torch.randn(1, H, T, d, device="cuda", dtype=dtype)

    def step():
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        if backward:
            y.backward(dy)

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        step()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def cell(ms, fl):
    return ("%.3f (%.1f)" % (ms, fl / ms / 1e9)) if ms else "n/a"


def ratio(a, b):
    return "%.2f" % (a / b) if a and b else "n/a"


class Runner:
    def __init__(self, args):
        self.args, self.errors = args, []

    def ms(self, levels, T, d, precision, backward=False):
        name = module_name(levels, T, d, precision, backward)
        t, err = bench_module(self.args.hkt_run, os.path.join(self.args.dir, name),
                              self.args.reps,
                              "attention_grad" if backward else "attention")
        if err:
            self.errors.append("%s: %s" % (name, err))
        return t


def bf16_table(r, sizes):
    lines = ["| d | T | HKT fwd ms (TFLOP/s) | MHA fwd | HKT fwd+bwd | MHA fwd+bwd | "
             "HKT / MHA fwd, fwd+bwd | SDPA fwd | SDPA fwd+bwd | HKT / SDPA fwd, fwd+bwd |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for d in BF16_HEAD_DIMS:
        for T in sizes:
            f = {L: flops(L, T, d) for L in (3, 1)}
            fwd = {L: r.ms(L, T, d, "bf16") for L in (3, 1)}
            both = {L: r.ms(L, T, d, "bf16", True) for L in (3, 1)}
            sf, sb = sdpa_ms(T, d, "bf16", r.args.reps), sdpa_ms(T, d, "bf16", r.args.reps, True)
            lines.append("| %d | %d | %s | %s | %s | %s | %s, %s | %s | %s | %s, %s |" % (
                d, T, cell(fwd[3], f[3]), cell(fwd[1], f[1]),
                cell(both[3], BACKWARD_FACTOR * f[3]), cell(both[1], BACKWARD_FACTOR * f[1]),
                ratio(fwd[3], fwd[1]), ratio(both[3], both[1]),
                cell(sf, f[1]), cell(sb, BACKWARD_FACTOR * f[1]),
                ratio(fwd[3], sf), ratio(both[3], sb)))
            print(lines[-1], file=sys.stderr, flush=True)
    return lines


def inference_table(r, sizes):
    d = 64
    lines = ["| T | HKT f32 ms (TFLOP/s) | HKT tf32 | MHA f32 | MHA tf32 | "
             "HKT / MHA (tf32; FLOP ratio %.3f) | SDPA f32 |"
             % (flops(3, 4096, d) / flops(1, 4096, d)),
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for T in sizes:
        ms = {(L, p): r.ms(L, T, d, p) for L in (3, 1) for p in ("f32", "tf32")}
        f32 = sdpa_ms(T, d, "f32", r.args.reps)
        lines.append("| %d | %s | %s | %s | %s | %s | %s |" % (
            T, cell(ms[3, "f32"], flops(3, T, d)), cell(ms[3, "tf32"], flops(3, T, d)),
            cell(ms[1, "f32"], flops(1, T, d)), cell(ms[1, "tf32"], flops(1, T, d)),
            ratio(ms[3, "tf32"], ms[1, "tf32"]), cell(f32, flops(1, T, d))))
        print(lines[-1], file=sys.stderr, flush=True)
    return lines


def layer_config(T):
    """The benchmarked layer (T None: a dynamic length)."""
    return {"batch": 1, "seq_len": T, "dim": 8 * 64, "heads": H, "levels": 3,
            "stride": 2, "kernel": 3, "conv_kernel": 3, "hybrid": True,
            "causal": True}


def prepare_layers(args):
    """The bf16 layer with --backward: one static module per size and one
    for every size up to the largest."""
    for T in args.sizes + [None]:
        cfg = os.path.join(args.out, "layer.json")
        with open(cfg, "w") as f:
            json.dump(layer_config(T), f)
        out = os.path.join(args.out, "layer-%s" % (T or "dynamic"))
        subprocess.run([args.hkt_compile, "--layer", cfg, "--target", "nvvm",
                        "--precision", "bf16", "--backward", "-o", out]
                       + ([] if T else ["--max-seq-len", str(max(args.sizes))]),
                       check=True)
        os.remove(cfg)
        print("compiled", out, flush=True)


def dynamic_table(r, sizes):
    lines = ["| T | static fwd ms | dynamic fwd ms | dynamic / static | "
             "static fwd+bwd ms | dynamic fwd+bwd ms | dynamic / static |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for T in sizes:
        cells = []
        for entry in ("layer", "layer_grad"):
            ms = {}
            for kind in ("static", "dynamic"):
                name = "layer-%s" % (T if kind == "static" else "dynamic")
                ms[kind], err = bench_module(
                    r.args.hkt_run, os.path.join(r.args.dir, name), r.args.reps,
                    entry, None if kind == "static" else T)
                if err:
                    r.errors.append("%s %s: %s" % (name, entry, err))
            cells += ["%.3f" % ms["static"] if ms["static"] else "n/a",
                      "%.3f" % ms["dynamic"] if ms["dynamic"] else "n/a",
                      ratio(ms["dynamic"], ms["static"])]
        lines.append("| %d | %s |" % (T, " | ".join(cells)))
        print(lines[-1], file=sys.stderr, flush=True)
    return lines


def run(args):
    with open(os.path.join(args.dir, "sizes.json")) as f:
        sizes = json.load(f)
    r = Runner(args)
    lines = ["bf16 (B = 1, H = 8, causal; ms, TFLOP/s in parentheses):", ""]
    lines += bf16_table(r, sizes)
    lines += ["", "f32 and tf32, forward (d = 64):", ""]
    lines += inference_table(r, sizes)
    lines += ["", "One module for every length: the bf16 layer (D = 512, H = 8, "
              "L = 3, hybrid, causal) compiled with --max-seq-len %d against "
              "a static compile per T:" % max(sizes), ""]
    lines += dynamic_table(r, sizes)
    print("\n".join(lines))
    for e in r.errors:
        print("error:", e)
    return 1 if r.errors else 0


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
