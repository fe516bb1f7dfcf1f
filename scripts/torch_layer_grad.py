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


def _levels(x, p, cfg):
    """SPEC 1: the level inputs x_0 = x, x_l = causal strided depthwise
    downsampling of x_(l-1)."""
    L, s = cfg["levels"], cfg["stride"]
    D = x.shape[2]
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
    return xs


def _heads(z, H):  # B x T x D -> B x H x T x d
    return z.view(z.shape[0], z.shape[1], H, z.shape[2] // H).transpose(1, 2)


def _finish(attn, v, p, cfg):
    """SPEC 7-8: the hybrid head and the output projection; attn: B x T x D."""
    if cfg["hybrid"]:
        D = v.shape[2]
        d = D // cfg["heads"]
        kc = p["conv_u"].shape[1]
        vp = torch.nn.functional.pad(v.transpose(1, 2), (kc - 1, 0))
        C = torch.nn.functional.conv1d(vp, p["conv_u"].flip(-1).unsqueeze(1),
                                       groups=D).transpose(1, 2)
        beta = torch.sigmoid(p["gamma"]).repeat_interleave(d)
        attn = beta * attn + (1 - beta) * C
    return attn @ p["wo"]


def layer(x, p, cfg, lengths=None):
    """One HKT layer (SPEC 1-8) in PyTorch; x: B x T x D; keys at or past
    `lengths[b]` (a B-vector, optional) are masked."""
    B, T, D = x.shape
    H, s = cfg["heads"], cfg["stride"]
    d = D // H
    xs = _levels(x, p, cfg)
    # SPEC 2-4: per-level scores, upsampled, fused with softmax(theta).
    lam = torch.softmax(p["theta"], dim=1)                   # H x L
    S = 0
    for l, xl in enumerate(xs):
        q, kk = _heads(xl @ p["wq"][l], H), _heads(xl @ p["wk"][l], H)
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
    attn = (torch.softmax(S, dim=-1) @ _heads(v, H)).transpose(1, 2).reshape(B, T, D)
    return _finish(attn, v, p, cfg)


def layer_concat_sdpa(x, p, cfg):
    """The same layer as ONE scaled_dot_product_attention call, PyTorch's
    fastest form of it: with nearest upsampling, the fused score is
    sum_l lam_l q_l[i / f_l] . k_l[j / f_l] / sqrt(d), the dot product of
    the levels' features concatenated, each scaled by sqrt(lam_l) (lam >= 0)
    and repeated f_l times along T. q and k get L * d columns; v is padded
    with zeros to L * d where PyTorch's fused CPU kernel wants equal widths
    (its output's extra columns are dropped). No lengths (the benchmark's
    full rows)."""
    B, T, D = x.shape
    H, L, s = cfg["heads"], cfg["levels"], cfg["stride"]
    d = D // H
    lam = torch.softmax(p["theta"], dim=1)                   # H x L
    qs, ks = [], []
    for l, xl in enumerate(_levels(x, p, cfg)):
        w = lam[:, l].sqrt().view(1, H, 1, 1)
        q, k = w * _heads(xl @ p["wq"][l], H), w * _heads(xl @ p["wk"][l], H)
        f = s ** l
        if f > 1:
            q = q.repeat_interleave(f, dim=2)[:, :, :T]
            k = k.repeat_interleave(f, dim=2)[:, :, :T]
        qs.append(q)
        ks.append(k)
    v = x @ p["wv"]
    vh = torch.nn.functional.pad(_heads(v, H), (0, (L - 1) * d))
    o = torch.nn.functional.scaled_dot_product_attention(
        torch.cat(qs, dim=-1), torch.cat(ks, dim=-1), vh,
        is_causal=cfg["causal"], scale=1.0 / math.sqrt(d))
    attn = o[..., :d].transpose(1, 2).reshape(B, T, D)
    return _finish(attn, v, p, cfg)


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
    ref = R.hkt_layer(x, params, full)
    gref = G.hkt_layer_grad(x, params, full, dy, None)
    forms = [("forward and gradients vs float64 reference", layer)]
    # The concatenated-features form (PyTorch >= 2.1: SDPA's scale).
    if hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        forms.append(("concatenated-features SDPA form vs float64 reference",
                      layer_concat_sdpa))
    ok = True
    for title, form in forms:
        for t in tp.values():
            t.grad = None
        xt = torch.tensor(x, requires_grad=True)
        y = form(xt, tp, full)
        err = float(np.abs(y.detach().numpy() - ref).max() / np.abs(ref).max())
        (y * torch.tensor(dy)).sum().backward()
        gerr = max(float(np.linalg.norm((tp[k].grad if k != "x" else xt.grad).numpy()
                                        - g) / np.linalg.norm(g))
                   for k, g in gref.items())
        good = err < 1e-10 and gerr < 1e-10
        print(json.dumps({"check": title, "forward_rel_err": err,
                          "grad_rel_err": gerr, "ok": good}))
        ok = ok and good
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
