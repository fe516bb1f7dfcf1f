#!/usr/bin/env python3
"""The numerical checks of the GPU tests, split for a GPU machine that has
no compiler (scripts/gpu-check.sh):

  gpu_grid.py prepare --out DIR --hkt-compile PATH   compile each module here
  gpu_grid.py run --dir DIR --hkt-run PATH           run and check each there

In the order `run` checks them:
  1. the self-test of the mma.sync and ldmatrix fragment maps: the bf16
     GEMM kernel (hkt-nvvm-lower-gemm) on one block (16 x 16 x 16) and on
     partial tiles, against the product of the bf16-rounded operands up to
     f32 accumulation (test/Integration/Inputs/check_gemm.py); seconds, and
     a layout bug stops the run before the grids;
  2. the forward grid, read from gpu-layer.test's RUN lines;
  3. the gradient grid (--backward, bf16), read from gpu-gradients.test's.
Each line's options are kept; every module is checked against the float64
reference on fresh random inputs, as the lit tests do.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
INTEGRATION = os.path.join(ROOT, "test", "Integration")
REFERENCE = os.path.join(ROOT, "test", "reference")
CHECK_GEMM = os.path.join(INTEGRATION, "Inputs", "check_gemm.py")
SELF_TEST_SHAPES = ("16,16,16", "100,40,72")
# (kind, lit test, RUN-line prefix, checker)
GRIDS = (("layer", "gpu-layer.test", "%check-layer", "check_layer.py"),
         ("grad", "gpu-gradients.test", "%check-gradients", "check_gradients.py"))


def grid(test, prefix):
    """[(options of the checker without --workdir)] of the test's RUN lines."""
    out = []
    for line in open(os.path.join(INTEGRATION, test)):
        if not line.startswith("RUN: " + prefix):
            continue
        words = shlex.split(line[len("RUN: " + prefix):].split("|")[0])
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
    for i, shape in enumerate(SELF_TEST_SHAPES):
        work = os.path.join(args.out, "gemm%d" % i)
        subprocess.run([sys.executable, CHECK_GEMM, "--hkt-compile",
                        args.hkt_compile, "--workdir", work, "--shape", shape,
                        "--target", "nvvm", "--compile-only"], check=True)
        entries.append({"kind": "gemm", "module": "gemm%d/mm" % i,
                        "options": ["--shape", shape, "--target", "nvvm"]})
    for kind, test, prefix, _ in GRIDS:
        for i, opts in enumerate(grid(test, prefix)):
            name = "%s%d" % (kind, i)
            moddir = os.path.join(args.out, name)
            cfg = os.path.join(args.out, name + ".json")
            with open(cfg, "w") as f:
                f.write(option(opts, "--config"))
            cmd = [args.hkt_compile, "--layer", cfg, "-o", moddir, "--target",
                   option(opts, "--target"), "--precision",
                   option(opts, "--precision", "f32")]
            if kind == "grad":
                cmd.append("--backward")
            if "--tiles" in opts:
                q, k = option(opts, "--tiles").split(",")
                cmd += ["--tile-q", q, "--tile-k", k]
            subprocess.run(cmd, check=True)
            os.remove(cfg)
            entries.append({"kind": kind, "module": name, "options": opts})
            print("compiled", moddir, flush=True)
    with open(os.path.join(args.out, "grid.json"), "w") as f:
        json.dump(entries, f, indent=1)


def check(args, e):
    """Runs one entry's checker on its module; (ok, last line or output)."""
    wd = os.path.join(args.workdir, e["module"].replace("/", "-"))
    module = os.path.join(args.dir, e["module"])
    if e["kind"] == "gemm":
        cmd = [sys.executable, CHECK_GEMM, "--hkt-run", args.hkt_run,
               "--precompiled", module, "--workdir", wd] + e["options"]
    else:
        checker = {kind: c for kind, _, _, c in GRIDS}[e["kind"]]
        cmd = [sys.executable, os.path.join(REFERENCE, checker),
               "--hkt-run", args.hkt_run, "--precompiled", module,
               "--workdir", wd] + e["options"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    last = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
    ok = p.returncode == 0 and last.endswith(" OK")
    return ok, last if ok else p.stdout.strip()


def run(args):
    with open(os.path.join(args.dir, "grid.json")) as f:
        entries = json.load(f)
    failed = 0
    for e in entries:
        ok, text = check(args, e)
        failed += not ok
        print(("PASS " if ok else "FAIL ") + text, flush=True)
        if not ok and e["kind"] == "gemm":
            print("gpu grid: the fragment self-test failed (an mma.sync or "
                  "ldmatrix layout bug?); the grids are not run")
            return 1
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
