"""Runs both entries of chain.mlir (@fusable, @not_fusable) from each compiled
module through hkt-run on the same fresh random inputs and compares them with
numpy in float64, straight from SPEC 3-6.

Usage: check_chain.py HKT_RUN WORKDIR MODULE_DIR...
Prints one line per (module, entry); exits non-zero on the first mismatch.
"""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "reference"))
from hkt_seed import pick_seed  # noqa: E402

B, T, D, H, STRIDE = 1, 10, 4, 2, 2
T1 = -(-T // STRIDE)  # ceil(T / s)
TOL = 1e-5

hkt_run, work = sys.argv[1:3]
modules = sys.argv[3:]
seed = pick_seed("check_chain.py")
rng = np.random.default_rng(seed)

inputs = {
    "q0": rng.standard_normal((B, T, D)),
    "k0": rng.standard_normal((B, T, D)),
    "q1": rng.standard_normal((B, T1, D)),
    "k1": rng.standard_normal((B, T1, D)),
    "theta": rng.standard_normal((H, 2)),
    "v": rng.standard_normal((B, T, D)),
}
inputs = {name: value.astype(np.float32) for name, value in inputs.items()}
for name, value in inputs.items():
    np.save(f"{work}/{name}.npy", value)


def reference(q0, k0, q1, k1, theta, v):
    """SPEC 3-6 in float64, from the float32 inputs the module sees."""
    q0, k0, q1, k1, theta, v = (a.astype(np.float64) for a in (q0, k0, q1, k1, theta, v))
    d = D // H

    def heads(x):  # B x T x D -> B x H x T x d (head h owns columns h*d..)
        return x.reshape(x.shape[0], x.shape[1], H, d).transpose(0, 2, 1, 3)

    # SPEC 3: level scores.
    s0 = heads(q0) @ heads(k0).transpose(0, 1, 3, 2) / np.sqrt(d)
    s1 = heads(q1) @ heads(k1).transpose(0, 1, 3, 2) / np.sqrt(d)
    # SPEC 4: nearest-neighbour upsampling, convex weights softmax(theta).
    up = np.arange(T) // STRIDE
    s1 = s1[:, :, up][:, :, :, up]
    lam = np.exp(theta - theta.max(axis=1, keepdims=True))
    lam /= lam.sum(axis=1, keepdims=True)
    s = lam[None, :, 0, None, None] * s0 + lam[None, :, 1, None, None] * s1
    # SPEC 5: causal mask.
    s = np.where(np.triu(np.ones((T, T), dtype=bool), k=1), -np.inf, s)
    # SPEC 6: softmax over keys, then A V per head.
    a = np.exp(s - s.max(axis=3, keepdims=True))
    a /= a.sum(axis=3, keepdims=True)
    out = a @ heads(v)
    return out.transpose(0, 2, 1, 3).reshape(B, T, D)


want = reference(**inputs)
status = 0
for module in modules:
    for entry in ("fusable", "not_fusable"):
        out = f"{work}/{os.path.basename(module)}_{entry}.npy"
        argv = [hkt_run, module, "--entry", entry, "--quiet", "--output", f"attn={out}"]
        for name in inputs:
            argv += ["--input", f"{name}={work}/{name}.npy"]
        subprocess.run(argv, check=True)
        got = np.load(out)
        assert got.shape == (B, T, D) and got.dtype == np.float32, (got.shape, got.dtype)
        err = float(np.linalg.norm(got - want) / np.linalg.norm(want))
        ok = bool(np.isfinite(got).all()) and err <= TOL
        print(f"{os.path.basename(module)} {entry} seed={seed} rel_err={err:.2e} "
              + ("OK" if ok else "FAIL"))
        status |= not ok
sys.exit(status)
