#!/usr/bin/python3
"""Learning curves and the results table of scripts/experiment.sh.

Reads DIR/<task>-<model>-s<seed>.jsonl (hkt-run train --log) and
DIR/<task>-<model>-s<seed>.test.json (hkt-run eval --split test), writes
DIR/<task>.png (training loss and validation accuracy against the step, the
mean over the seeds of each model with its range shaded) and prints a
markdown table: test accuracy mean +- std over the seeds, the training
examples per second and the step time relative to the first model.

  /usr/bin/python3 scripts/plot.py DIR [--models hkt,mha,l1hybrid]
"""
import argparse
import collections
import glob
import json
import os
import re
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

NAME = re.compile(r"(?P<task>[a-z0-9]+)-(?P<model>[a-z0-9]+)-s(?P<seed>\d+)\.jsonl$")


def read_log(path):
    loss, acc, rate = [], [], []
    for line in open(path):
        r = json.loads(line)
        if "loss" in r:
            loss.append((r["step"], r["loss"]))
            rate.append(r["examples_per_s"])
        elif r.get("split") == "valid":
            acc.append((r["step"], r["accuracy"]))
    return loss, acc, rate


def band(ax, runs, label):
    """Mean over the runs at the steps they all have, min-max shaded."""
    steps = sorted(set.intersection(*[set(s for s, _ in r) for r in runs]))
    if not steps:
        return
    vals = np.array([[dict(r)[s] for s in steps] for r in runs])
    line, = ax.plot(steps, vals.mean(0), label=label)
    ax.fill_between(steps, vals.min(0), vals.max(0), alpha=0.2,
                    color=line.get_color())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--models", default="hkt,mha,l1hybrid")
    args = ap.parse_args()
    models = args.models.split(",")
    runs = collections.defaultdict(lambda: collections.defaultdict(dict))
    for path in sorted(glob.glob(os.path.join(args.dir, "*.jsonl"))):
        m = NAME.search(os.path.basename(path))
        if m:
            runs[m["task"]][m["model"]][int(m["seed"])] = path
    if not runs:
        sys.exit("no logs <task>-<model>-s<seed>.jsonl in " + args.dir)

    rows = []
    for task in sorted(runs):
        fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(11, 4))
        for model in models:
            seeds = runs[task].get(model, {})
            if not seeds:
                continue
            logs = [read_log(p) for p in seeds.values()]
            band(ax_loss, [l for l, _, _ in logs], model)
            if all(a for _, a, _ in logs):
                band(ax_acc, [a for _, a, _ in logs], model)
            tests = []
            for seed, path in seeds.items():
                test = path[:-len(".jsonl")] + ".test.json"
                if os.path.exists(test):
                    tests.append(json.load(open(test))["accuracy"])
            rate = statistics.mean(statistics.median(r) for _, _, r in logs)
            rows.append((task, model, tests, rate, len(seeds)))
        ax_loss.set(title=task + ": training loss", xlabel="step", ylabel="loss")
        ax_acc.set(title=task + ": validation accuracy", xlabel="step",
                   ylabel="accuracy")
        for ax in (ax_loss, ax_acc):
            ax.grid(alpha=0.3)
            ax.legend()
        fig.tight_layout()
        out = os.path.join(args.dir, task + ".png")
        fig.savefig(out, dpi=110)
        print("wrote " + out, file=sys.stderr)

    print("| task | model | seeds | test accuracy (mean +- std) | examples/s | step time / first model |")
    print("|---|---|---:|---:|---:|---:|")
    base = {}
    for task, model, tests, rate, n in rows:
        base.setdefault(task, rate)
        acc = ("%.2f%% +- %.2f" % (100 * statistics.mean(tests),
                                   100 * (statistics.stdev(tests) if len(tests) > 1 else 0))
               if tests else "-")
        print("| %s | %s | %d | %s | %.1f | %.2f |" % (
            task, model, n, acc, rate, base[task] / rate))
    return 0


if __name__ == "__main__":
    sys.exit(main())
