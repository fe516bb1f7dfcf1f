#!/usr/bin/env python3
"""Time PyTorch eager autograd on one HKT layer (SPEC 1-8), forward + backward.

The peer for the gradient call of scripts/bench.py (issue 8): the
straightforward PyTorch layer, written from SPEC as test/reference/
hkt_reference.py is, which materialises the B x H x T x T scores of every
level, upsampled, fused, masked and softmaxed, and lets autograd do the
backward, with PyTorch's own BLAS. Prints one JSON line per T, with the same
fields as `hkt-run --bench` (median_ms, min_ms, n, threads) plus the torch
version.

Usage (PyTorch is not a dependency of this project; see docs/performance.md
for how it was installed):

  python3 scripts/torch_layer_grad.py --T 1024,4096 --threads 2 --repeat 3
  python3 scripts/torch_layer_grad.py --check   # against the float64 reference
"""

import argparse
import json
import math
import os
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "test", "reference"))


def layer(x, p, cfg, lengths=None):
    """One HKT layer (SPEC 1-8) in PyTorch; x: B x T x D; keys at or past
    `lengths[b]` (a B-vector, optional) are masked."""
    B, T, D = x.shape
    H, L, s = cfg["heads"], cfg["levels"], cfg["stride"]
    d = D // H

    def heads(z):  # B x T x D -> B x H x T x d
        return z.view(z.shape[0], z.shape[1], H, d).transpose(1, 2)

    # SPEC 1: causal strided depthwise downsampling.
    xs = [x]
    for l in range(1, L):
        xp = xs[-1]
        k = p["down_w"].shape[2]
        padded = torch.nn.functional.pad(xp.transpose(1, 2), (k - 1, 0))
        # out[t] = b + sum_m w[m] xp[s t - m]: a conv1d with the taps reversed.
        w = p["down_w"][l - 1].flip(-1).unsqueeze(1)          # D x 1 x k
        y = torch.nn.functional.conv1d(padded, w, stride=s, groups=D)
        tn = -(-xp.shape[1] // s)
        xs.append(y[:, :, :tn].transpose(1, 2) + p["down_b"][l - 1])
    # SPEC 2-4: per-level scores, upsampled, fused with softmax(theta).
    lam = torch.softmax(p["theta"], dim=1)                   # H x L
    S = 0
    for l, xl in enumerate(xs):
        q, kk = heads(xl @ p["wq"][l]), heads(xl @ p["wk"][l])
        sl = q @ kk.transpose(-1, -2) / math.sqrt(d)
        f = s ** l
        if f > 1:
            sl = sl.repeat_interleave(f, dim=2).repeat_interleave(f, dim=3)
            sl = sl[:, :, :T, :T]
        S = S + lam[:, l].view(1, H, 1, 1) * sl
    # SPEC 5-6: masks, softmax, A V.
    mask = None
    if lengths is not None:
        mask = (torch.arange(T)[None, :] >= lengths[:, None])[:, None, None, :]
    if cfg["causal"]:
        causal = torch.ones(T, T, dtype=torch.bool).triu(1)
        mask = causal if mask is None else mask | causal
    if mask is not None:
        S = S.masked_fill(mask, float("-inf"))
    v = x @ p["wv"]
    attn = (torch.softmax(S, dim=-1) @ heads(v)).transpose(1, 2).reshape(B, T, D)
    # SPEC 7-8: hybrid head, output projection.
    if cfg["hybrid"]:
        kc = p["conv_u"].shape[1]
        vp = torch.nn.functional.pad(v.transpose(1, 2), (kc - 1, 0))
        C = torch.nn.functional.conv1d(vp, p["conv_u"].flip(-1).unsqueeze(1),
                                       groups=D).transpose(1, 2)
        beta = torch.sigmoid(p["gamma"]).repeat_interleave(d)
        attn = beta * attn + (1 - beta) * C
    return attn @ p["wo"]


def make(cfg, B, T, D, dtype, seed):
    import hkt_reference as R
    rng = np.random.default_rng(seed)
    full = R.full_cfg(cfg)
    params = R.random_params(rng, full, D, dtype=np.float64)
    x = rng.standard_normal((B, T, D))
    dy = rng.standard_normal((B, T, D))
    tp = {k: torch.tensor(v, dtype=dtype, requires_grad=True)
          for k, v in params.items()}
    return full, params, x, dy, tp


def check(args):
    """The PyTorch layer against the float64 reference forward and the
    reference backward (so that the timed layer is the HKT layer)."""
    import hkt_reference as R
    import hkt_reference_grad as G
    cfg = {"heads": 2, "levels": 3, "hybrid": True, "causal": True}
    B, T, D = 2, 13, 8
    full, params, x, dy, tp = make(cfg, B, T, D, torch.float64, 1)
    xt = torch.tensor(x, requires_grad=True)
    y = layer(xt, tp, full)
    ref = R.hkt_layer(x, params, full)
    err = float(np.abs(y.detach().numpy() - ref).max() / np.abs(ref).max())
    (y * torch.tensor(dy)).sum().backward()
    gref = G.hkt_layer_grad(x, params, full, dy, None)
    gerr = max(float(np.linalg.norm((tp[k].grad if k != "x" else xt.grad).numpy()
                                    - g) / np.linalg.norm(g))
               for k, g in gref.items())
    ok = err < 1e-10 and gerr < 1e-10
    print(json.dumps({"check": "forward and gradients vs float64 reference",
                      "forward_rel_err": err, "grad_rel_err": gerr,
                      "ok": ok}))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--T", default="1024,4096")
    ap.add_argument("--B", type=int, default=1)
    ap.add_argument("--D", type=int, default=512)
    ap.add_argument("--H", type=int, default=8)
    ap.add_argument("--levels", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.check:
        return check(args)
    cfg = {"heads": args.H, "levels": args.levels, "hybrid": True,
           "causal": True}
    for T in [int(t) for t in args.T.split(",")]:
        full, _, x, dy, tp = make(cfg, args.B, T, args.D, torch.float32, 0)
        xt = torch.tensor(x, dtype=torch.float32, requires_grad=True)
        dyt = torch.tensor(dy, dtype=torch.float32)
        times = []
        for i in range(args.repeat + 1):  # the first call warms up
            for t in list(tp.values()) + [xt]:
                t.grad = None
            start = time.perf_counter()
            (layer(xt, tp, full) * dyt).sum().backward()
            if i:
                times.append((time.perf_counter() - start) * 1e3)
        print(json.dumps({"system": "torch-eager-autograd-hkt", "T": T,
                          "B": args.B, "D": args.D, "H": args.H,
                          "levels": args.levels, "causal": True,
                          "median_ms": statistics.median(times),
                          "min_ms": min(times), "n": len(times),
                          "threads": args.threads,
                          "torch": torch.__version__}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
