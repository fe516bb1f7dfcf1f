#!/usr/bin/python3
"""Check the compiled training step (hkt-compile --model: entry train_step)
against an independent float64 AdamW step on the float64 reference gradient.

Usage (from lit RUN lines; run with Debian's /usr/bin/python3):

  check_train_step.py --hkt-compile PATH --hkt-run PATH --config JSON
                      --workdir DIR [--batch N] [--steps N] [--seed N]
                      [--tol 1e-4]

Fresh random parameters (SPEC's initialisation plus noise) and moments,
random tokens, labels and hyper-parameters; `--steps` consecutive calls
(steps t, t+1, ...) update the parameters and both moments in place (hkt-run
--params reads them, --output writes them back); the reference repeats the
same steps: m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2, p = p (1 - lr wd)
[matrices only] - lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps). Prints
`... worst=NAME rel_err=... OK` or FAIL (exit 1); usage and tool errors exit 2.
"""

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hkt_model_reference as M  # noqa: E402
from check_layer import (CheckError, read_safetensors, run_tool,  # noqa: E402
                         write_safetensors)
from hkt_seed import pick_seed  # noqa: E402


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hkt-compile", required=True)
    ap.add_argument("--hkt-run", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--batch", type=int, default=3)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args(argv)
    user_cfg = json.loads(args.config)
    cfg = M.parse_model_config(user_cfg)
    seed = args.seed if args.seed is not None else pick_seed("check_train_step.py")
    rng = np.random.default_rng(seed)
    B, T, V = args.batch, cfg["max_len"], cfg["vocab"]

    params = M.random_params(rng, cfg)
    for name in params:
        params[name] = (params[name] + 0.3 * rng.standard_normal(
            params[name].shape)).astype(np.float32)
    state = dict(params)
    for name, p in params.items():
        state["adam.m." + name] = (0.01 * rng.standard_normal(p.shape)).astype(np.float32)
        state["adam.v." + name] = (1e-4 * rng.random(p.shape)).astype(np.float32)
    hyper = {"lr": 0.01, "beta1": 0.85, "beta2": 0.99, "eps": 1e-6,
             "weight_decay": 0.1}
    first_step = int(rng.integers(1, 50))

    wd = args.workdir
    os.makedirs(wd, exist_ok=True)
    cfg_path = os.path.join(wd, "model.json")
    with open(cfg_path, "w") as f:
        json.dump(user_cfg, f)
    moddir = os.path.join(wd, "mod")
    run_tool([args.hkt_compile, "--model", cfg_path, "--max-batch", str(B),
              "-o", moddir], args.timeout)
    for name, value in hyper.items():
        np.save(os.path.join(wd, name + ".npy"), np.array(value, np.float32))

    ref = {k: v.astype(np.float64) for k, v in state.items()}
    worst, worst_name, losses = 0.0, "", []
    for k in range(args.steps):
        t = first_step + k
        lens = rng.integers(1, T + 1, size=B)
        tokens = np.zeros((B, T), np.int32)
        for b, n in enumerate(lens):
            tokens[b, :n] = rng.integers(1, V, size=n)
        labels = rng.integers(0, cfg["classes"], size=B).astype(np.int32)
        np.save(os.path.join(wd, "tokens.npy"), tokens)
        np.save(os.path.join(wd, "labels.npy"), labels)
        np.save(os.path.join(wd, "step.npy"), np.array(t, np.int64))
        st = os.path.join(wd, "state.safetensors")
        write_safetensors(st, state)
        argv = [args.hkt_run, moddir, "--entry", "train_step", "--quiet",
                "--params", st, "--input", "tokens=" + os.path.join(wd, "tokens.npy"),
                "--input", "labels=" + os.path.join(wd, "labels.npy"),
                "--input", "step=" + os.path.join(wd, "step.npy"),
                "--output", "loss=" + os.path.join(wd, "loss.npy")]
        for name in hyper:
            argv += ["--input", "%s=%s" % (name, os.path.join(wd, name + ".npy"))]
        outs = {}
        for i, name in enumerate(state):
            outs[name] = os.path.join(wd, "out%d.npy" % i)
            argv += ["--output", "%s=%s" % (name, outs[name])]
        run_tool(argv, args.timeout)
        state = {name: np.load(path) for name, path in outs.items()}
        loss = float(np.load(os.path.join(wd, "loss.npy")))

        # The reference step, from the reference's own parameters.
        ref_params = {n: ref[n] for n in params}
        ref_loss, grads = M.model_loss_and_grad(ref_params, cfg, tokens, labels)
        b1, b2 = hyper["beta1"], hyper["beta2"]
        for n in params:
            g = grads[n]
            m = b1 * ref["adam.m." + n] + (1 - b1) * g
            v = b2 * ref["adam.v." + n] + (1 - b2) * g * g
            p = ref[n]
            if p.ndim >= 2:
                p = p * (1 - hyper["lr"] * hyper["weight_decay"])
            p = p - hyper["lr"] * (m / (1 - b1 ** t)) / (
                np.sqrt(v / (1 - b2 ** t)) + hyper["eps"])
            ref["adam.m." + n], ref["adam.v." + n], ref[n] = m, v, p
        losses.append((loss, ref_loss))
        errs = {"loss": abs(loss - ref_loss) / max(abs(ref_loss), 1e-6)}
        for n, want in ref.items():
            got = state[n].astype(np.float64)
            den = max(np.linalg.norm(want), 1e-6)
            errs[n] = float(np.linalg.norm(got - want) / den)
        name = max(errs, key=errs.get)
        if errs[name] > worst or not np.isfinite(errs[name]):
            worst, worst_name = errs[name], name
    head = "config=%s seed=%d batch=%d steps=%d" % (
        json.dumps(user_cfg, separators=(",", ":"), sort_keys=True), seed, B,
        args.steps)
    if np.isfinite(worst) and worst <= args.tol:
        print("%s worst=%s rel_err=%.3g OK" % (head, worst_name, worst))
        return 0
    print("%s worst=%s rel_err=%.3g FAIL (tol %g) losses=%s" % (
        head, worst_name, worst, args.tol, losses))
    return 1


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except CheckError as e:
        print("check_train_step.py: error: %s" % e, file=sys.stderr)
        sys.exit(2)
