#!/usr/bin/env python3
"""Time PyTorch training of SPEC's classifier (the peer of `hkt-run train`):
the same model, batch and length, AdamW, with PyTorch's own BLAS; eager, or
with --compile the loss and its backward through `torch.compile` (Inductor's
C++ kernels on the CPU; the compile happens in the warm-up step, not timed).

The model is SPEC's (embedding + positions, pre-norm HKT layers with a GELU
feed-forward, final LayerNorm, mean over the valid positions, linear head,
mean cross-entropy); each HKT layer is scripts/torch_layer_grad.py's, which
materialises every level's B x H x T x T scores, with the key lengths
masked. Tokens are random rows of random lengths in [T/2, T]: the cost does
not depend on the values. Prints one JSON line: examples_per_s, the median
step time, the torch version and the thread count.

Usage (PyTorch is not a dependency of this project; docs/performance.md
says how it was installed):

  /opt/torch-venv/bin/python scripts/torch_train.py --config MODEL.json \
      --batch 32 --steps 10 --threads 2 [--lr 1e-3] [--compile]

It also says whether every step's loss was finite (losses_finite) and the
largest loss: at a high --lr, whether float32 PyTorch stays finite where
`hkt-run train` is asked to (test/Integration/train-sharp.test).
"""

import argparse
import json
import math
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_layer_grad import layer as attention  # noqa: E402


def make_params(cfg):
    V, T, D, F, C = (cfg[k] for k in ("vocab", "max_len", "dim", "ffn", "classes"))
    H, L = cfg["heads"], cfg["levels"]
    g = torch.Generator().manual_seed(0)

    def normal(*shape):
        return (torch.randn(*shape, generator=g) * 0.02).requires_grad_()

    def const(value, *shape):
        return torch.full(shape, float(value)).requires_grad_()

    p = {"embed": normal(V, D), "pos": normal(T, D), "layers": []}
    for _ in range(cfg["layers"]):
        a = {"wq": normal(L, D, D), "wk": normal(L, D, D), "wv": normal(D, D),
             "wo": normal(D, D), "theta": const(0, H, L)}
        if L > 1:
            w = torch.zeros(L - 1, D, cfg["kernel"])
            w[..., 0] = 1
            a["down_w"] = w.requires_grad_()
            a["down_b"] = const(0, L - 1, D)
        if cfg["hybrid"]:
            a["conv_u"] = normal(D, cfg["conv_kernel"])
            a["gamma"] = const(2, H)
        p["layers"].append({"ln1": (const(1, D), const(0, D)), "attn": a,
                            "ln2": (const(1, D), const(0, D)),
                            "w1": normal(D, F), "b1": const(0, F),
                            "w2": normal(F, D), "b2": const(0, D)})
    p["ln_f"] = (const(1, D), const(0, D))
    p["head"] = (normal(D, C), const(0, C))
    return p


def leaves(p):
    out = [p["embed"], p["pos"], *p["ln_f"], *p["head"]]
    for layer in p["layers"]:
        out += [*layer["ln1"], *layer["ln2"], layer["w1"], layer["b1"],
                layer["w2"], layer["b2"], *layer["attn"].values()]
    return out


def loss_fn(p, cfg, tokens, labels):
    B, T = tokens.shape
    lengths = (tokens != 0).int().argmin(dim=1)
    lengths = torch.where((tokens != 0).all(dim=1), T, lengths)
    x = p["embed"][tokens] + p["pos"][:T]
    D = x.shape[-1]
    for layer in p["layers"]:
        h = torch.nn.functional.layer_norm(x, (D,), *layer["ln1"], eps=1e-5)
        x = x + attention(h, layer["attn"], cfg, lengths)
        h = torch.nn.functional.layer_norm(x, (D,), *layer["ln2"], eps=1e-5)
        f = torch.nn.functional.gelu(h @ layer["w1"] + layer["b1"],
                                     approximate="tanh")
        x = x + f @ layer["w2"] + layer["b2"]
    x = torch.nn.functional.layer_norm(x, (D,), *p["ln_f"], eps=1e-5)
    valid = (torch.arange(T)[None, :] < lengths[:, None]).float()
    pooled = (x * valid[..., None]).sum(1) / lengths[:, None].float()
    logits = pooled @ p["head"][0] + p["head"][1]
    return torch.nn.functional.cross_entropy(logits, labels)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", required=True, help="model config JSON file")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--lr", type=float, default=1e-3,
                    help="AdamW learning rate (hkt-run train --lr)")
    ap.add_argument("--compile", action="store_true",
                    help="torch.compile the loss (forward and backward; "
                    "AdamW's step stays eager)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    with open(args.config) as f:
        cfg = json.load(f)
    p = make_params(cfg)
    opt = torch.optim.AdamW(leaves(p), lr=args.lr, weight_decay=0.01)
    loss_of = loss_fn
    if args.compile:
        # Shapes never change (lengths are values): one compile.
        loss_of = torch.compile(loss_fn, dynamic=False)
    g = torch.Generator().manual_seed(1)
    B, T = args.batch, cfg["max_len"]
    times, losses = [], []
    for step in range(args.steps + 1):
        lengths = torch.randint(T // 2, T + 1, (B,), generator=g)
        tokens = torch.randint(1, cfg["vocab"], (B, T), generator=g)
        tokens = torch.where(torch.arange(T)[None, :] < lengths[:, None],
                             tokens, 0)
        labels = torch.randint(0, cfg["classes"], (B,), generator=g)
        start = time.perf_counter()
        opt.zero_grad()
        loss = loss_of(p, cfg, tokens, labels)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if step > 0:  # the first step warms up
            times.append(time.perf_counter() - start)
    median = statistics.median(times)
    peer = "pytorch torch.compile" if args.compile else "pytorch eager"
    print(json.dumps({"peer": peer, "torch": torch.__version__,
                      "threads": args.threads, "batch": B, "T": T,
                      "median_step_ms": 1e3 * median,
                      "examples_per_s": B / median,
                      "loss": loss.item(), "lr": args.lr,
                      "losses_finite": all(math.isfinite(v) for v in losses),
                      "max_loss": max(losses)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
