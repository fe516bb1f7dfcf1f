#!/usr/bin/python3
"""Training speed: examples per second of the compiled train step (hkt-run
train) for the models of scripts/experiment.sh, against PyTorch eager
training of the same model (scripts/torch_train.py) and, with
--torch-compile, its torch.compile training, on the same machine, batch and
length. Prints a markdown table. Interleaved: every model is run
`--rounds` times in turn and the best of its rounds is kept (the machine is
shared and noisy).

  /usr/bin/python3 scripts/train_bench.py experiment [--torch /opt/torch-venv/bin/python [--torch-compile]]
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def ours(hkt_run, module, task, batch, steps, threads, ckpt):
    out = subprocess.run(
        [hkt_run, "train", module, "--task", task, "--steps", str(steps),
         "--batch", str(batch), "--eval-examples", "0", "--threads",
         str(threads), "--quiet", "--save", ckpt],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["examples_per_s"]


def torch(python, config, batch, steps, threads, compile=False):
    out = subprocess.run(
        [python, os.path.join(ROOT, "scripts", "torch_train.py"), "--config",
         config, "--batch", str(batch), "--steps", str(steps), "--threads",
         str(threads)] + (["--compile"] if compile else []),
        check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", help="scripts/experiment.sh's directory")
    ap.add_argument("--hkt-run", default=os.path.join(ROOT, "build", "bin", "hkt-run"))
    ap.add_argument("--torch", help="a python with PyTorch (optional)")
    ap.add_argument("--torch-compile", action="store_true",
                    help="also time torch.compile training (PyTorch 2.x)")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--torch-steps", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    runs = []
    for cfg in sorted(glob.glob(os.path.join(args.dir, "*-*.json"))):
        name = os.path.basename(cfg)[:-5]
        task, _, model = name.partition("-")
        if "." in model or not os.path.isdir(os.path.join(args.dir, "mod-" + name)):
            continue
        runs.append((task, model, cfg, os.path.join(args.dir, "mod-" + name)))
    best = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            for task, model, cfg, mod in runs:
                r = ours(args.hkt_run, mod, task, args.batch, args.steps,
                         args.threads, os.path.join(tmp, "c.safetensors"))
                best[(task, model)] = max(best.get((task, model), 0), r)
    peers, compiled = {}, {}
    if args.torch:
        for task, model, cfg, _ in runs:
            peers[(task, model)] = torch(args.torch, cfg, args.batch,
                                         args.torch_steps, args.threads)
            if args.torch_compile:
                compiled[(task, model)] = torch(
                    args.torch, cfg, args.batch, args.torch_steps,
                    args.threads, compile=True)
    print("| task | model | T | hkt-run train (examples/s) | step time / HKT's |"
          + (" PyTorch eager (examples/s) | ours / PyTorch |" if peers else "")
          + (" torch.compile (examples/s) | ours / torch.compile |"
             if compiled else ""))
    print("|---|---|---:|---:|---:|" + ("---:|---:|" if peers else "")
          + ("---:|---:|" if compiled else ""))
    for task, model, cfg, _ in runs:
        T = json.load(open(cfg))["max_len"]
        rate = best[(task, model)]
        line = "| %s | %s | %d | %.1f | %.2f |" % (
            task, model, T, rate, best[(task, "hkt")] / rate)
        if peers:
            p = peers[(task, model)]["examples_per_s"]
            line += " %.2f | %.1fx |" % (p, rate / p)
        if compiled:
            c = compiled[(task, model)]["examples_per_s"]
            line += " %.2f | %.1fx |" % (c, rate / c)
        print(line)
    if peers:
        p = next(iter(peers.values()))
        print("\nPyTorch %s, %d threads, batch %d; ours best of %d rounds of %d "
              "steps, PyTorch the median of %d steps (torch.compile's after "
              "its compiling warm-up step)." % (
                  p["torch"], args.threads, args.batch, args.rounds, args.steps,
                  args.torch_steps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
