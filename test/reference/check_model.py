#!/usr/bin/python3
"""Compile SPEC's classifier model (hkt-compile --model --backward), run its
logits entry and its loss gradient (hkt-run --grads), compare the logits, the
loss and the gradient of every parameter with the float64 reference
(hkt_model_reference.py, written from SPEC.md).

Usage (from lit RUN lines; run with Debian's /usr/bin/python3):

  check_model.py --hkt-compile PATH --hkt-run PATH --config JSON
                 --workdir DIR [--batch N,...] [--max-batch N] [--short N]
                 [--pipeline NAME] [--seed N] [--tol 1e-4]
                 [--target cpu|gpu-emulation] [--precision f32|bf16]
                 [--precompiled DIR] [--lengths N,...] [--static DIR]

The model is compiled once (its batch is dynamic, bounded by --max-batch,
default the largest of --batch) and checked at every batch size of --batch
(default 3), each on fresh tokens and labels. Tokens are fresh random rows of random lengths in [1, max_len] (ids in
[1, vocab), then padding 0); with --short N the token file holds only N
positions (a --fixed-len module's hkt-run pads it to max_len); with
--lengths the rows have these lengths (the batch is their count, the token
file as wide as the longest). With --static DIR (a module of the same
config compiled --fixed-len), its logits on the same tokens (padded to
max_len by hkt-run) must be within 1e-5 of the module's (relative to the
largest logit; float32 sums in other tile orders). Parameters: SPEC's initialisation
plus noise of std 0.3 on every tensor, so that no term is trivially zero.
Prints `config=... seed=... batch=B worst=NAME rel_err=... OK` or FAIL per
batch size (exit 1 if any fails);
usage and tool errors exit 2.
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


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hkt-compile", required=True)
    ap.add_argument("--hkt-run", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--batch", default="3",
                    help="batch sizes, comma-separated (default 3)")
    ap.add_argument("--max-batch", type=int)
    ap.add_argument("--short", type=int)
    ap.add_argument("--lengths",
                    help="the rows' lengths, comma-separated (sets --batch)")
    ap.add_argument("--static",
                    help="a --fixed-len module whose logits must agree")
    ap.add_argument("--pipeline", default="reference")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--target", default="cpu")
    ap.add_argument("--precision", default="f32")
    ap.add_argument("--precompiled",
                    help="a module hkt-compile built from --config before")
    return ap.parse_args(argv)


def rel(got, want, floor):
    den = max(np.linalg.norm(want), floor)
    return float(np.linalg.norm(np.asarray(got, np.float64) - want) / den)


def main(argv):
    args = parse_args(argv)
    user_cfg = json.loads(args.config)
    cfg = M.parse_model_config(user_cfg)
    seed = args.seed if args.seed is not None else pick_seed("check_model.py")
    rng = np.random.default_rng(seed)
    lengths = [int(n) for n in args.lengths.split(",")] if args.lengths else None
    batches = [len(lengths)] if lengths else [int(b) for b in args.batch.split(",")]
    T = cfg["max_len"]
    max_batch = args.max_batch or max(batches)

    params = M.random_params(rng, cfg)
    for name in params:
        params[name] = (params[name] + 0.3 * rng.standard_normal(
            params[name].shape)).astype(np.float32)
    wd = args.workdir
    os.makedirs(wd, exist_ok=True)
    cfg_path = os.path.join(wd, "model.json")
    with open(cfg_path, "w") as f:
        json.dump(user_cfg, f)
    st = os.path.join(wd, "params.safetensors")
    write_safetensors(st, params)
    moddir = args.precompiled or os.path.join(wd, "mod")
    target = []
    if args.target != "cpu":
        target = ["--target", args.target, "--precision", args.precision]
    if not args.precompiled:
        run_tool([args.hkt_compile, "--model", cfg_path, "--max-batch",
                  str(max_batch), "--backward", "--pipeline", args.pipeline,
                  "-o", moddir] + target, args.timeout)
    failed = 0
    for B in batches:
        failed += check_batch(args, user_cfg, cfg, params, rng, seed, B, wd,
                              st, moddir, lengths)
    return 1 if failed else 0


def check_batch(args, user_cfg, cfg, params, rng, seed, B, wd, st, moddir,
                lengths):
    T, V = cfg["max_len"], cfg["vocab"]
    if lengths:
        lens = np.array(lengths)
        width = int(lens.max())
    else:
        width = args.short if args.short else T
        lens = rng.integers(1, width + 1, size=B)
    tokens = np.zeros((B, width), np.int32)
    for b, n in enumerate(lens):
        tokens[b, :n] = rng.integers(1, V, size=n)
    labels = rng.integers(0, cfg["classes"], size=B).astype(np.int32)
    full = np.zeros((B, T), np.int32)
    full[:, :width] = tokens

    ref_logits = M.model_forward(params, cfg, full)
    scales = {}
    ref_loss, ref_grads = M.model_loss_and_grad(params, cfg, full, labels,
                                                scales=scales)

    tok_path = os.path.join(wd, "tokens-%d.npy" % B)
    lab_path = os.path.join(wd, "labels-%d.npy" % B)
    np.save(tok_path, tokens)
    np.save(lab_path, labels)
    logits_path = os.path.join(wd, "logits-%d.npy" % B)
    # The emulated GPU's teams outnumber the cores: waiting threads must
    # sleep, not spin.
    env = None
    if args.target == "gpu-emulation":
        env = dict(os.environ, OMP_WAIT_POLICY="passive", KMP_BLOCKTIME="0")
    run_tool([args.hkt_run, moddir, "--entry", "logits", "--quiet", "--params", st,
              "--input", "tokens=" + tok_path, "--output", "logits=" + logits_path],
             args.timeout, env)
    grads_path = os.path.join(wd, "grads-%d.safetensors" % B)
    p = run_tool([args.hkt_run, moddir, "--quiet", "--params", st,
                  "--input", "tokens=" + tok_path, "--input", "labels=" + lab_path,
                  "--grads", grads_path], args.timeout, env)
    line = [l for l in p.stdout.decode().splitlines() if l.startswith("{")]
    if not line:
        raise CheckError("hkt-run --grads printed no JSON line")
    loss = json.loads(line[-1])["loss"]
    grads = read_safetensors(grads_path)
    if sorted(grads) != sorted(ref_grads):
        raise CheckError("gradients %s, expected %s" % (sorted(grads), sorted(ref_grads)))

    floor = 1e-3 * max(np.linalg.norm(g) for g in ref_grads.values())
    errors = {"logits": rel(np.load(logits_path), ref_logits, 0.0),
              "loss": abs(loss - ref_loss) / max(abs(ref_loss), 1e-6)}
    for name, want in ref_grads.items():
        # Each layer's dtheta, ddown_b, ddown_w and dgamma are cancelling
        # sums: their round-off is relative to the scale of their terms, as
        # in check_gradients.py (bf16 on the emulated GPU, seed 658675600:
        # dtheta 0.173 of its own norm; ddown_w 0.065 on seed 5).
        scale = np.linalg.norm(scales[name]) if name in scales else 0.0
        errors["d" + name] = rel(grads[name], want, max(floor, scale))
    if args.static:
        static_path = os.path.join(wd, "static-logits-%d.npy" % B)
        run_tool([args.hkt_run, args.static, "--entry", "logits", "--quiet",
                  "--params", st, "--input", "tokens=" + tok_path,
                  "--output", "logits=" + static_path], args.timeout, env)
        dynamic, static = np.load(logits_path), np.load(static_path)
        diff = float(np.abs(dynamic - static).max() / np.abs(static).max())
        if not diff <= 1e-5:
            print("logits differ from the --fixed-len module's by %.3g of the "
                  "largest (tol 1e-5) FAIL" % diff)
            return 1
        print("batch=%d lengths=%s: logits within %.3g of the --fixed-len "
              "module's" % (B, ",".join(str(n) for n in lens), diff))
    worst = max(errors, key=errors.get)
    head = "config=%s seed=%d batch=%d" % (
        json.dumps(user_cfg, separators=(",", ":"), sort_keys=True), seed, B)
    if all(np.isfinite(e) and e <= args.tol for e in errors.values()):
        print("%s worst=%s rel_err=%.3g OK" % (head, worst, errors[worst]))
        return 0
    print("%s worst=%s rel_err=%.3g FAIL (tol %g): %s" % (
        head, worst, errors[worst], args.tol,
        " ".join("%s=%.3g" % kv for kv in sorted(errors.items()))))
    return 1


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except CheckError as e:
        print("check_model.py: error: %s" % e, file=sys.stderr)
        sys.exit(2)
