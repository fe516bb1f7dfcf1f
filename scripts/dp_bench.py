#!/usr/bin/python3
"""Data-parallel scaling on this machine: examples per second of hkt-run
train for one model (the ListOps model of scripts/experiment.sh by default),
on one process and on N ranks under mpirun (a module compiled with --ranks
N), at the same global batch. Interleaved rounds, best of each kept (the
machine is shared and noisy). Prints a markdown table.

  /usr/bin/python3 scripts/dp_bench.py [--ranks 2] [--batch 32] [--steps 20]
"""
import argparse
import json
import os
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = {"vocab": 16, "max_len": 512, "dim": 64, "heads": 4, "layers": 2,
         "levels": 3, "stride": 2, "kernel": 3, "conv_kernel": 3,
         "hybrid": True, "causal": False, "ffn": 128, "classes": 10}


def train(cmd, module, args, threads, ckpt):
    out = subprocess.run(
        cmd + [os.path.join(args.bin, "hkt-run"), "train", module, "--task",
               args.task, "--steps", str(args.steps), "--batch",
               str(args.batch), "--eval-examples", "0", "--threads",
               str(threads), "--quiet", "--save", ckpt],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["examples_per_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--config", help="a model config (default: the ListOps model)")
    ap.add_argument("--task", default="listops")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workdir", help="keep the modules here (default: a temporary directory)")
    args = ap.parse_args()
    cores = os.cpu_count()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.workdir or tmp
        os.makedirs(work, exist_ok=True)
        config = args.config or os.path.join(work, "model.json")
        if not args.config:
            with open(config, "w") as f:
                json.dump(MODEL, f)
        share = -(-args.batch // args.ranks)
        one, many = os.path.join(work, "one"), os.path.join(work, "ranks")
        for out, extra in ((one, []), (many, ["--ranks", str(args.ranks)])):
            if not os.path.isfile(os.path.join(out, "manifest.json")):
                subprocess.run([os.path.join(args.bin, "hkt-compile"), "--model",
                                config, "--max-batch", str(args.batch), "-o", out]
                               + extra, check=True)
        mpirun = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to",
                  "none", "-np", str(args.ranks)]
        per_rank = max(1, cores // args.ranks)
        runs = [("1 process, %d threads" % cores, [], one, cores),
                ("1 process, %d thread%s" % (per_rank, "s" * (per_rank > 1)), [], one, per_rank),
                ("%d ranks x %d thread%s (mpirun)" % (args.ranks, per_rank, "s" * (per_rank > 1)),
                 mpirun, many, per_rank)]
        best = {}
        ckpt = os.path.join(work, "bench.ckpt")
        for _ in range(args.rounds):
            for name, cmd, module, threads in runs:
                rate = train(cmd, module, args, threads, ckpt)
                best[name] = max(best.get(name, 0.0), rate)
    base = best[runs[0][0]]
    print("global batch %d (%d rows per rank on %d ranks), %d steps, %s, "
          "%d cores, best of %d interleaved rounds\n"
          % (args.batch, share, args.ranks, args.steps, args.task, cores,
             args.rounds))
    print("| run | examples/s | vs 1 process, all cores |")
    print("|---|---:|---:|")
    for name, *_ in runs:
        print("| %s | %.1f | %.2f |" % (name, best[name], best[name] / base))


if __name__ == "__main__":
    main()
