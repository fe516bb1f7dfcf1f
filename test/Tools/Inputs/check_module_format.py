"""Runs the entries of inout.mlir or dynamic.mlir, compiled into MODULE,
through hkt-run and checks them with numpy (float64).

    check_module_format.py HKT_RUN MODULE WORKDIR inout|dynamic

inout: the new values of the in-out arguments written back with
--output NAME=FILE (sgd, momentum, swap), repeated steps (--bench), and the
input files left as they were. dynamic: several batch sizes up to the bound, a result of dynamic
shape among them.
The inputs are random with a fixed seed, printed first (HKT_TEST_SEED=N
picks another).
"""
import os
import subprocess
import sys

import numpy as np

hkt_run, module, work, which = sys.argv[1:5]
seed = int(os.environ.get("HKT_TEST_SEED", "7"), 0)
print(f"seed={seed}", end=" ")
rng = np.random.default_rng(seed)


def save(**arrays):
    for name, value in arrays.items():
        np.save(f"{work}/{name}.npy", value)


def run(entry, inputs, outputs, *extra):
    argv = [hkt_run, module, "--entry", entry, "--quiet", *extra]
    for name, file in inputs.items():
        argv += ["--input", f"{name}={work}/{file}.npy"]
    for name, file in outputs.items():
        argv += ["--output", f"{name}={work}/{file}.npy"]
    subprocess.run(argv, check=True)
    return [np.load(f"{work}/{file}.npy") for file in outputs.values()]


def close(got, want, what):
    err = np.max(np.abs(got.astype(np.float64) - want)) / max(
        1.0, np.max(np.abs(want)))
    assert got.shape == want.shape, (what, got.shape, want.shape)
    assert err < 1e-6, (what, err)


if which == "inout":
    p = rng.standard_normal((4, 8)).astype(np.float32)
    g = rng.standard_normal((4, 8)).astype(np.float32)
    lr = np.float32(0.25)
    save(p=p, g=g, lr=np.array(lr))
    p1, g2 = run("sgd", {"p": "p", "g": "g", "lr": "lr"},
                 {"p": "p1", "g2": "g2"})
    p64, g64 = p.astype(np.float64), g.astype(np.float64)
    close(p1, p64 - 0.25 * g64, "sgd p")
    close(g2, (g64 * g64).sum(), "sgd g2")
    assert np.array_equal(np.load(f"{work}/p.npy"), p), "the input file changed"
    # --bench 2: a warm-up and two timed calls, each a step from the last.
    (p3,) = run("sgd", {"p": "p", "g": "g", "lr": "lr"}, {"p": "p3"},
                "--bench", "2")
    close(p3, p64 - 3 * 0.25 * g64, "sgd p after 3 steps")

    p = rng.standard_normal(16).astype(np.float32)
    v = rng.standard_normal(16).astype(np.float32)
    g = rng.standard_normal(16).astype(np.float32)
    save(p=p, v=v, g=g)
    pn, vn, pold = run("momentum", {"p": "p", "v": "v", "g": "g"},
                       {"p": "pn", "v": "vn", "p_old": "pold"})
    v_want = np.float32(0.9) * v.astype(np.float64) + g
    close(vn, v_want, "momentum v")
    close(pn, p - np.float32(0.5) * v_want, "momentum p")
    assert np.array_equal(pold, p), "momentum p_old is not the old p"

    a = rng.integers(-100, 100, 3).astype(np.int32)
    b = rng.integers(-100, 100, 3).astype(np.int32)
    save(a=a, b=b)
    a1, b1 = run("swap", {"a": "a", "b": "b"}, {"a": "a1", "b": "b1"})
    assert np.array_equal(a1, b) and np.array_equal(b1, a), (a, b, a1, b1)
    print("sgd, momentum, swap OK")
elif which == "dynamic":
    w = rng.standard_normal(4).astype(np.float32)
    for batch in (1, 3, 8):
        x = rng.standard_normal((batch, 4)).astype(np.float32)
        mask = rng.standard_normal(batch).astype(np.float32)
        save(x=x, mask=mask, w=w)
        (y,) = run("colsum", {"x": "x", "mask": "mask", "w": "w"}, {"y": "y"})
        want = (x.astype(np.float64) * mask[:, None] * w[None, :]).sum(0)
        close(y, want, f"colsum at batch {batch}")
        (y, s) = run("rowscale", {"x": "x", "w": "w"}, {"y": "y", "s": "s"})
        close(y, x.astype(np.float64) * w[None, :], f"rowscale y at batch {batch}")
        close(s, x.astype(np.float64).sum(), f"rowscale s at batch {batch}")
    print("colsum, rowscale at batch 1, 3, 8 OK")
else:
    sys.exit(f"unknown check '{which}'")
