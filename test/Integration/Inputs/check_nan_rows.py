"""A NaN in the input reaches every output row that attends it: after
check_layer.py has left its layer, parameters, x and lengths in WORKDIR,
sets x[0, t0, c] = NaN (t0 inside batch row 0's length; the seed is printed)
and runs each module MODDIR given. The layer is causal, so every row t in
[t0, length) of batch row 0 attends key t0 and must be NaN (the softmax's
row maximum may leave a NaN score out, but exp(S - m) and the row sum carry
it); batch row 1 never sees it and must stay finite.

    check_nan_rows.py HKT_RUN WORKDIR MODDIR..."""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "reference"))
from hkt_seed import pick_seed  # noqa: E402

hkt_run, work = sys.argv[1:3]
seed = pick_seed("check_nan_rows.py")
rng = np.random.default_rng(seed)
x = np.load(f"{work}/x.npy")
lengths = np.load(f"{work}/lengths.npy")
assert x.shape[0] == 2 and lengths[0] >= 1, (x.shape, lengths)
t0 = int(rng.integers(0, lengths[0]))
x[0, t0, int(rng.integers(0, x.shape[2]))] = np.nan
np.save(f"{work}/x-nan.npy", x)
for moddir in sys.argv[3:]:
    subprocess.run([hkt_run, f"{work}/{moddir}", "--quiet",
                    "--params", f"{work}/params.safetensors",
                    "--input", f"x={work}/x-nan.npy",
                    "--input", f"lengths={work}/lengths.npy",
                    "--output", f"y={work}/y-nan.npy"], check=True)
    y = np.load(f"{work}/y-nan.npy")
    nan_rows = np.isnan(y[0, t0:lengths[0]]).all(axis=-1)
    assert nan_rows.all(), (moddir, t0, np.nonzero(~nan_rows)[0] + t0)
    assert np.isfinite(y[1, :lengths[1]]).all(), (moddir, "batch row 1")
    print(f"seed={seed} {moddir}: t0={t0} rows [t0, length) NaN, "
          f"batch row 1 finite OK")
