#!/usr/bin/env python3
"""What the Python package adds to a compiled layer's time: HKTAttention's
forward and forward + backward (PyTorch module, autograd) against `hkt-run
--bench` of the same module's `layer` and `layer_grad` entries, and against
the package called directly (hkt.Module, numpy); and, with PyTorch 2.x,
beside PyTorch's fastest form of the same layer in the same training step:
one scaled_dot_product_attention over the levels' concatenated features
(scripts/torch_layer_grad.py's layer_concat_sdpa), forward + backward by
autograd, same weights. B = 1, D = 512, H = 8, L = 3, hybrid, causal, f32;
one module compiled for every length up to the largest size; medians of
--repeat calls after a warm-up, all timed in turn, --rounds times (the best
median of each kept: a shared machine).

  PYTHONPATH=python build/torch-venv/bin/python scripts/python_bench.py [--sizes 1024,4096]

Prints a markdown table; the target is an overhead of at most 3%. The
overhead is HKTAttention's against the same entries called through the
package (hkt.Module: the C API, what hkt-run calls), in interleaved pairs,
the median of the pairs' ratios; hkt-run's own times are beside them. The
forward + backward is compared with `layer` + `layer_grad`: autograd needs
the forward's output, and `layer_grad` recomputes the forward (it takes no
saved state), so that is the work HKTAttention does.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)
from hkt.torch import HKTAttention  # noqa: E402
import torch_layer_grad  # noqa: E402

CONFIG = {"levels": 3, "stride": 2, "kernel": 3, "conv_kernel": 3,
          "hybrid": True, "causal": True}


def median_ms(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def paired_ms(fn, base, repeat):
    """fn and base called in turn, `repeat` pairs after a warm-up: their
    median times and the median of each pair's ratio fn / base (pairs
    follow the machine's drift; separate medians do not)."""
    fn()
    base()
    a, b = [], []
    for _ in range(repeat):
        for f, out in ((fn, a), (base, b)):
            t0 = time.perf_counter()
            f()
            out.append((time.perf_counter() - t0) * 1e3)
    return (statistics.median(a), statistics.median(b),
            statistics.median(x / y for x, y in zip(a, b)))


def hkt_run_ms(directory, entry, T, repeat, threads):
    tool = os.path.join(HERE, "..", "build", "bin", "hkt-run")
    p = subprocess.run([tool, directory, "--entry", entry, "--random", "1",
                        "--size", "T=%d" % T, "--size", "B=1", "--bench",
                        str(repeat), "--threads", str(threads), "--quiet"],
                       stdout=subprocess.PIPE, text=True, check=True)
    return json.loads([l for l in p.stdout.splitlines() if l.startswith("{")][-1])["median_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1024,4096")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    args = ap.parse_args()
    config = dict(CONFIG, dim=args.dim, heads=args.heads)
    D = args.dim
    concat = hasattr(torch.nn.functional, "scaled_dot_product_attention")
    sizes = [int(s) for s in args.sizes.split(",")]
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    torch.set_num_threads(args.threads)
    attn = HKTAttention(config, max_seq_len=max(sizes), max_batch=1)
    named = dict(attn.named_parameters())
    from hkt.torch import _module
    module = _module(attn.directory)
    params = {n: p.detach().numpy() for n, p in attn.named_parameters()}
    rows = []
    for T in sizes:
        x = torch.randn(1, T, D)
        xg = x.clone().requires_grad_(True)
        dy = torch.randn(1, T, D)

        def fwd():
            with torch.no_grad():
                attn(x)

        def both():
            attn.zero_grad()
            attn(xg).backward(dy)

        def direct():
            module.layer(x.numpy(), params=params)

        def direct_both():
            module.layer(x.numpy(), params=params)
            module.layer_grad(x.numpy(), dy=dy.numpy(), params=params)

        def sdpa_both():
            for p in named.values():
                p.grad = None
            xg.grad = None
            torch_layer_grad.layer_concat_sdpa(xg, named, config).backward(dy)

        best, ratios = {}, {}

        def keep(key, v):
            best[key] = min(best.get(key, v), v)

        for _ in range(args.rounds):
            keep("run_fwd", hkt_run_ms(attn.directory, "layer", T, args.repeat,
                                       args.threads))
            keep("run_grad", hkt_run_ms(attn.directory, "layer_grad", T,
                                        args.repeat, args.threads))
            torch_ms, direct_ms, ratio = paired_ms(fwd, direct, args.repeat)
            keep("torch_fwd", torch_ms)
            keep("direct_fwd", direct_ms)
            ratios.setdefault("fwd_ratio", []).append(ratio)
            torch_ms, direct_ms, ratio = paired_ms(both, direct_both, args.repeat)
            keep("torch_both", torch_ms)
            keep("direct_both", direct_ms)
            ratios.setdefault("both_ratio", []).append(ratio)
            keep("sdpa_both", median_ms(sdpa_both, args.repeat)
                 if concat else float("nan"))
        # Times: the best round's (a shared machine); ratios: the median.
        best.update({k: statistics.median(v) for k, v in ratios.items()})
        rows.append((T, best))
        print("T=%d %s" % (T, json.dumps(best)), file=sys.stderr, flush=True)
    print("- command: " + " ".join(sys.argv))
    print("- torch %s, %d threads; medians of %d calls, best of %d rounds"
          % (torch.__version__, args.threads, args.repeat, args.rounds))
    print()
    print("| T | hkt-run layer ms | hkt.Module layer ms | HKTAttention fwd ms | "
          "overhead | hkt-run layer + layer_grad ms | hkt.Module layer + layer_grad ms | "
          "HKTAttention fwd+bwd ms | overhead | PyTorch concat-SDPA HKT fwd+bwd ms | "
          "HKTAttention speed-up |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for T, b in rows:
        print("| %d | %.2f | %.2f | %.2f | %+.1f%% | %.2f | %.2f | %.2f | %+.1f%% | %.2f | %.2fx |" % (
            T, b["run_fwd"], b["direct_fwd"], b["torch_fwd"],
            100 * (b["fwd_ratio"] - 1), b["run_fwd"] + b["run_grad"],
            b["direct_both"], b["torch_both"], 100 * (b["both_ratio"] - 1),
            b["sdpa_both"], b["sdpa_both"] / b["torch_both"]))


if __name__ == "__main__":
    main()
