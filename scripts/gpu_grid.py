#!/usr/bin/env python3
"""The numerical grid of test/Integration/gpu-layer.test, split for a GPU
machine that has no compiler (scripts/gpu-check.sh):

  gpu_grid.py prepare --out DIR --hkt-compile PATH   compile each module here
  gpu_grid.py run --dir DIR --hkt-run PATH           run and check each there

The grid is read from gpu-layer.test's RUN lines (one list for both), each
line's check_layer.py options kept; `run` checks every module against the
float64 reference on fresh random inputs, as the lit test does.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
TEST = os.path.join(ROOT, "test", "Integration", "gpu-layer.test")
CHECK = os.path.join(ROOT, "test", "reference", "check_layer.py")


def grid():
    """[(options of check_layer.py without --workdir)] of the test's RUN lines."""
    out = []
    for line in open(TEST):
        if not line.startswith("RUN: %check-layer"):
            continue
        words = shlex.split(line[len("RUN: %check-layer"):].split("|")[0])
        opts, i = [], 0
        while i < len(words):
            if words[i] == "--workdir":
                i += 2
                continue
            opts.append(words[i])
            i += 1
        out.append(opts)
    return out


def option(opts, name, default=None):
    return opts[opts.index(name) + 1] if name in opts else default


def prepare(args):
    os.makedirs(args.out, exist_ok=True)
    entries = []
    for i, opts in enumerate(grid()):
        moddir = os.path.join(args.out, "layer%d" % i)
        cfg = os.path.join(args.out, "layer%d.json" % i)
        with open(cfg, "w") as f:
            f.write(option(opts, "--config"))
        cmd = [args.hkt_compile, "--layer", cfg, "-o", moddir, "--target",
               option(opts, "--target"), "--precision", option(opts, "--precision", "f32")]
        if "--tiles" in opts:
            q, k = option(opts, "--tiles").split(",")
            cmd += ["--tile-q", q, "--tile-k", k]
        subprocess.run(cmd, check=True)
        os.remove(cfg)
        entries.append({"module": "layer%d" % i, "options": opts})
        print("compiled", moddir, flush=True)
    with open(os.path.join(args.out, "grid.json"), "w") as f:
        json.dump(entries, f, indent=1)


def run(args):
    with open(os.path.join(args.dir, "grid.json")) as f:
        entries = json.load(f)
    failed = 0
    for e in entries:
        wd = os.path.join(args.workdir, e["module"])
        p = subprocess.run([sys.executable, CHECK, "--hkt-run", args.hkt_run,
                            "--precompiled", os.path.join(args.dir, e["module"]),
                            "--workdir", wd] + e["options"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        last = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
        ok = p.returncode == 0 and last.endswith(" OK")
        failed += not ok
        print(("PASS " if ok else "FAIL ") + (last if ok else p.stdout.strip()), flush=True)
    print("gpu grid: %d passed, %d failed" % (len(entries) - failed, failed))
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--out", required=True)
    p.add_argument("--hkt-compile", required=True)
    r = sub.add_parser("run")
    r.add_argument("--dir", required=True)
    r.add_argument("--hkt-run", required=True)
    r.add_argument("--workdir", default="/tmp/hkt-gpu-grid")
    args = ap.parse_args()
    sys.exit(prepare(args) if args.cmd == "prepare" else run(args))


if __name__ == "__main__":
    main()
