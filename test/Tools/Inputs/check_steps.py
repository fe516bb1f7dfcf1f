"""Runs the two entries of steps.mlir through hkt-run and checks them against
numpy, straight from SPEC 1 and 4 (float64), on fresh random inputs (the seed is
printed; HKT_TEST_SEED=N reproduces a run)."""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "reference"))
from hkt_seed import pick_seed  # noqa: E402

hkt_run, module, work = sys.argv[1:4]
seed = pick_seed("check_steps.py")
rng = np.random.default_rng(seed)

s = rng.standard_normal((1, 2, 3, 3)).astype(np.float32)
np.save(f"{work}/s.npy", s)
subprocess.run([hkt_run, module, "--entry", "upsample", "--quiet",
                "--input", f"scores={work}/s.npy", "--output", f"up={work}/up.npy"],
               check=True)
up = np.load(f"{work}/up.npy")
want = s.astype(np.float64)[:, :, np.arange(5) // 2][:, :, :, np.arange(6) // 2]
assert up.shape == (1, 2, 5, 6), up.shape
assert np.array_equal(up, want), "upsample differs"

x = rng.standard_normal((2, 7, 3)).astype(np.float32)
w = rng.standard_normal((3, 2)).astype(np.float32)
b = rng.standard_normal(3).astype(np.float32)
for name, value in (("x", x), ("w", w), ("b", b)):
    np.save(f"{work}/{name}.npy", value)
subprocess.run([hkt_run, module, "--entry", "downsample", "--quiet",
                "--input", f"arg0={work}/x.npy", "--input", f"arg1={work}/w.npy",
                "--input", f"arg2={work}/b.npy", "--output", f"result0={work}/y.npy"],
               check=True)
y = np.load(f"{work}/y.npy")
want = np.zeros((2, 3, 3))
for t in range(3):
    want[:, t, :] = b
    for m in range(2):
        if 3 * t - m >= 0:
            want[:, t, :] += w[:, m] * x[:, 3 * t - m, :]
err = np.linalg.norm(y - want) / np.linalg.norm(want)
assert err < 1e-5, err
print(f"seed={seed} upsample exact, downsample rel_err={err:.2e} OK")
