"""DistributedDataParallel over HKTAttention with gloo on 127.0.0.1
(examples/ddp_train.py): two ranks, 5 steps; the ranks' parameters equal,
and equal to one process trained on the whole batch (float32 summation
order: 1e-5 of each parameter's scale).

The ranks are started as torchrun starts them (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT: the env:// rendezvous), not by torchrun itself:
Debian's PyTorch 1.13 torchrun fails on Python 3.11 before starting any
worker (AttributeError in elastic/multiprocessing/api.py's to_map).
"""
import os
import socket
import subprocess
import sys

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
EXAMPLE = os.path.join(ROOT, "examples", "ddp_train.py")


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run(ranks, out, tmp_path):
    port = str(free_port())
    procs = []
    for rank in range(ranks):
        env = dict(os.environ, HKT_CACHE_DIR=str(tmp_path / "cache"),
                   OMP_NUM_THREADS="1", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=port, RANK=str(rank), LOCAL_RANK=str(rank),
                   WORLD_SIZE=str(ranks))
        procs.append(subprocess.Popen(
            [sys.executable, EXAMPLE, "--steps", "5", "--batch", "8",
             "--out", str(out)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True))
    outputs = [p.communicate(timeout=900)[0] for p in procs]
    for p, text in zip(procs, outputs):
        assert p.returncode == 0, text
    assert "step 5 loss" in outputs[0]
    return dict(np.load(out))


def test_two_ranks_train_what_one_process_trains(tmp_path):
    one = run(1, tmp_path / "one.npz", tmp_path)
    two = run(2, tmp_path / "two.npz", tmp_path)
    assert float(two.pop("rank_difference")) == 0.0
    one.pop("rank_difference")
    assert set(one) == set(two) and any(k.startswith("layers.") for k in one)
    for name, want in one.items():
        scale = max(float(np.abs(want).max()), 1e-3)
        assert float(np.abs(two[name] - want).max()) <= 1e-5 * scale, name
