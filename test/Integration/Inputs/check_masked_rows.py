"""Runs @masked (Inputs/masked-rows.mlir) with lengths = [0, 3]: batch row 0
has every key masked and must come out as exactly 0 (fused path), row 1 must
match numpy's float64 attention over its first 3 keys (SPEC 3-6). Fresh random
inputs: the seed is printed (HKT_TEST_SEED=N reproduces a run)."""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "reference"))
from hkt_seed import pick_seed  # noqa: E402

hkt_run, module, work = sys.argv[1:4]
seed = pick_seed("check_masked_rows.py")
rng = np.random.default_rng(seed)
q, k, v = (rng.standard_normal((2, 6, 4)).astype(np.float32) for _ in range(3))
theta = rng.standard_normal((2, 1)).astype(np.float32)
lengths = np.array([0, 3], dtype=np.int32)
for name, value in (("q", q), ("k", k), ("v", v), ("theta", theta), ("lengths", lengths)):
    np.save(f"{work}/{name}.npy", value)
subprocess.run([hkt_run, module, "--quiet"]
               + [a for n in ("q", "k", "v", "theta", "lengths")
                  for a in ("--input", f"{n}={work}/{n}.npy")]
               + ["--output", f"attn={work}/attn.npy"], check=True)
out = np.load(f"{work}/attn.npy")
assert np.all(out[0] == 0.0), f"fully masked row is not 0: {out[0]}"
want = np.zeros((6, 4))
for h in range(2):
    cols = slice(2 * h, 2 * h + 2)
    s = q[1][:, cols].astype(np.float64) @ k[1][:3, cols].T / np.sqrt(2.0)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    want[:, cols] = (p / p.sum(axis=1, keepdims=True)) @ v[1][:3, cols]
err = np.linalg.norm(out[1] - want) / np.linalg.norm(want)
assert err < 1e-5, err
print(f"seed={seed} masked row exactly 0, other row rel_err={err:.2e} OK")
