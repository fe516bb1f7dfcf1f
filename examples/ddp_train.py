#!/usr/bin/env python3
"""Data-parallel training of a small classifier built on hkt.torch.HKTAttention
with torch.nn.parallel.DistributedDataParallel (gloo, CPU): no code of ours
beyond the module. Each rank takes its share of the global batch, DDP
averages the gradients, so N ranks train what one process trains on the
whole batch.

    PYTHONPATH=python python3 -m torch.distributed.run --standalone \\
        --nproc_per_node=2 examples/ddp_train.py --steps 5 --out params.npz

(`torchrun` where PyTorch installs it.) Rank 0 writes the final parameters
to --out; every other rank r writes its own to OUT.rank<r>.npz, so that one
can check that DDP kept the ranks equal.
"""
import os
import argparse

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from hkt.torch import HKTAttention

CONFIG = {"dim": 16, "heads": 2, "levels": 3, "causal": True}


class Classifier(torch.nn.Module):
    """Embedding -> 2 x (x + HKTAttention(x)) -> mean over positions -> linear."""

    def __init__(self, vocab, classes, max_seq_len, max_batch):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, CONFIG["dim"])
        self.layers = torch.nn.ModuleList(
            [HKTAttention(CONFIG, max_seq_len=max_seq_len, max_batch=max_batch)
             for _ in range(2)])
        self.head = torch.nn.Linear(CONFIG["dim"], classes)

    def forward(self, tokens):
        x = self.embed(tokens)
        for layer in self.layers:
            x = x + layer(x)
        return self.head(x.mean(dim=1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--batch", type=int, default=8, help="the global batch")
    ap.add_argument("--seq", type=int, default=24)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.batch % world:
        raise SystemExit("--batch %d does not split over %d ranks" % (args.batch, world))
    torch.manual_seed(args.seed)  # DDP broadcasts rank 0's weights anyway
    model = DistributedDataParallel(
        Classifier(vocab=10, classes=3, max_seq_len=64, max_batch=args.batch))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    rng = np.random.default_rng(args.seed)
    tokens = torch.from_numpy(rng.integers(0, 10, size=(args.steps, args.batch, args.seq)))
    labels = torch.from_numpy(rng.integers(0, 3, size=(args.steps, args.batch)))
    share = args.batch // world
    mine = slice(rank * share, (rank + 1) * share)
    for step in range(args.steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(
            model(tokens[step, mine]), labels[step, mine])
        loss.backward()
        opt.step()
        if rank == 0:
            print("step %d loss %.6f" % (step + 1, float(loss)), flush=True)
    # Each rank saves its own copy, to compare outside: no extra collective on
    # tensors that Python owns, since PyTorch 1.13's gloo can deadlock at exit
    # when its worker thread drops the last reference to one (it needs the GIL
    # that ~ProcessGroupGloo, joining that thread, holds).
    out = args.out if rank == 0 else "%s.rank%d.npz" % (os.path.splitext(args.out)[0], rank)
    np.savez(out, **{k: v.detach().numpy() for k, v in model.module.state_dict().items()})
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
