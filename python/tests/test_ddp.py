"""DistributedDataParallel over HKTAttention with gloo on 127.0.0.1
(examples/ddp_train.py): two ranks, 5 steps; the ranks' parameters equal,
and equal to one process trained on the whole batch (float32 summation
order: 1e-5 of each parameter's scale).

With PyTorch 2.x the ranks are started by torchrun (`python -m
torch.distributed.run --standalone --nproc_per_node=N`). Debian's PyTorch
1.13 torchrun fails on Python 3.11 before starting any worker
(AttributeError in elastic/multiprocessing/api.py's to_map), so there the
ranks are started as torchrun starts them (RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT: the env:// rendezvous).
"""
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
EXAMPLE = os.path.join(ROOT, "examples", "ddp_train.py")
TORCHRUN = int(torch.__version__.split(".")[0]) >= 2


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run(ranks, out, tmp_path):
    args = [EXAMPLE, "--steps", "5", "--batch", "8", "--out", str(out)]
    env = dict(os.environ, HKT_CACHE_DIR=str(tmp_path / "cache"),
               OMP_NUM_THREADS="1")
    if TORCHRUN:
        # One launcher; it stops every rank when one fails.
        launch = [[sys.executable, "-m", "torch.distributed.run", "--standalone",
                   "--nproc_per_node=%d" % ranks] + args]
        envs = [env]
    else:
        port = str(free_port())
        launch = [[sys.executable] + args for _ in range(ranks)]
        envs = [dict(env, MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                     RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(ranks))
                for r in range(ranks)]
    # Each in its own process group, so that a kill reaches torchrun's workers.
    procs = [subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True,
                              start_new_session=True)
             for cmd, e in zip(launch, envs)]
    # A rank that fails leaves the others waiting in gloo: stop them at once.
    deadline = time.monotonic() + 600
    while any(p.poll() is None for p in procs):
        failed = any(p.poll() not in (None, 0) for p in procs)
        if failed or time.monotonic() > deadline:
            for p in procs:
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGKILL)
            break
        time.sleep(0.2)
    outputs = [p.communicate()[0] for p in procs]
    for i, (p, text) in enumerate(zip(procs, outputs)):
        assert p.returncode == 0, "process %d of %d:\n%s" % (i, len(procs), text)
    assert "step 5 loss" in outputs[0]
    copies = [dict(np.load(out))]
    for rank in range(1, ranks):
        copies.append(dict(np.load("%s.rank%d.npz" % (os.path.splitext(str(out))[0], rank))))
    return copies


def test_two_ranks_train_what_one_process_trains(tmp_path):
    [one] = run(1, tmp_path / "one.npz", tmp_path)
    two, other = run(2, tmp_path / "two.npz", tmp_path)
    # DDP keeps the ranks in step: their parameters are bitwise equal.
    assert set(two) == set(other)
    for name in two:
        assert np.array_equal(two[name], other[name]), name
    assert set(one) == set(two) and any(k.startswith("layers.") for k in one)
    for name, want in one.items():
        scale = max(float(np.abs(want).max()), 1e-3)
        assert float(np.abs(two[name] - want).max()) <= 1e-5 * scale, name
