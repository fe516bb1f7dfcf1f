#!/usr/bin/python3
"""Benchmark one HKT layer against MHA and against the reference lowering.

Compiles layer configs with build/bin/hkt-compile, times them with
`hkt-run DIR --random 1 --threads N --bench R` and prints one table:
for every sequence length T and causal setting, HKT (levels L, hybrid) and
MHA (levels 1, no hybrid) through the fused pipeline, and HKT through the
reference pipeline where its materialised scores fit in memory.

    scripts/bench.py                                # the full table (slow)
    scripts/bench.py --sizes 256,512 --repeat 2
    scripts/bench.py --fused-pipeline reference     # before `fused` exists

Standard library only. See docs/performance.md for the columns.
"""

import argparse
import datetime
import json
import math
import os
import shlex
import subprocess
import statistics
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

STRIDE = 2
KERNEL = 3
CONV_KERNEL = 3
LARGE_T = 8192  # from here on, at most LARGE_REPEAT timed calls
LARGE_REPEAT = 3
DYNAMIC_PAIRS = 5  # interleaved static / dynamic pairs of the last column


def level_lengths(t, levels, stride):
    """T_0 = T, T_l = ceil(T_{l-1} / s)."""
    lengths = [t]
    for _ in range(1, levels):
        lengths.append(-(-lengths[-1] // stride))
    return lengths


def layer_flops(batch, t, dim, levels, stride, causal):
    """FLOPs of one layer: scores at every level plus A*V (halved when
    causal), the four full-resolution projections and the coarse levels'
    Q/K projections."""
    lengths = level_lengths(t, levels, stride)
    core = sum(2 * batch * tl * tl * dim for tl in lengths)
    core += 2 * batch * t * t * dim
    if causal:
        core /= 2
    proj = 8 * batch * t * dim * dim + 4 * batch * dim * dim * sum(lengths[1:])
    return core + proj


def _check_flops():
    hkt = layer_flops(1, 4096, 512, 3, 2, True) / 1e9
    mha = layer_flops(1, 4096, 512, 1, 2, True) / 1e9
    assert round(hkt, 2) == 31.68, hkt
    assert round(mha, 2) == 25.77, mha
    assert round(hkt / mha, 3) == 1.229, hkt / mha


_check_flops()


def reference_bytes(batch, heads, t, levels):
    """Estimated memory of the reference lowering: about levels + 4
    materialised B x H x T x T f32 score tensors."""
    return (levels + 4) * batch * heads * t * t * 4


def gradient_bytes(batch, heads, t, dim, levels, pipeline):
    """Estimated memory of the gradient call. The fused pipeline's backward
    (hkt.online_attention_backward) is linear in T: about 64 B x T x D f32
    tensors (measured: 2.2 GB at T = 16384, D = 512). The reference
    pipeline's materialised backward: about 3 (levels + 4) B x H x T x T f32
    tensors (the forward's scores recomputed, dP, dS, the block sums)."""
    if pipeline == "reference":
        return 3 * reference_bytes(batch, heads, t, levels)
    return 64 * 4 * batch * t * dim


def positive_int(text):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected an integer, got %r" % text)
    if v < 1:
        raise argparse.ArgumentTypeError("expected a positive integer, got %r" % text)
    return v


def size_list(text):
    sizes = []
    for part in text.split(","):
        sizes.append(positive_int(part.strip()))
    return sizes


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Time HKT (fused), MHA (fused) and HKT (reference) layers "
        "with hkt-compile/hkt-run and print one table.")
    p.add_argument("--sizes", type=size_list,
                   default=[512, 1024, 2048, 4096, 8192, 16384],
                   help="comma-separated sequence lengths T "
                   "(default 512,1024,2048,4096,8192,16384)")
    p.add_argument("--causal", choices=["both", "yes", "no"], default="both",
                   help="which masks to measure (default both)")
    p.add_argument("--repeat", type=positive_int, default=5,
                   help="timed calls per measurement, after one warm-up "
                   "(default 5; at most %d for T >= %d)" % (LARGE_REPEAT, LARGE_T))
    p.add_argument("--threads", type=positive_int, default=2,
                   help="threads for hkt-run (default 2)")
    p.add_argument("--batch", type=positive_int, default=1, help="B (default 1)")
    p.add_argument("--dim", type=positive_int, default=512, help="D (default 512)")
    p.add_argument("--heads", type=positive_int, default=8, help="H (default 8)")
    p.add_argument("--levels", type=positive_int, default=3,
                   help="L of the HKT layer (default 3; MHA is always 1)")
    p.add_argument("--precision", default="f32", choices=("f32", "bf16"),
                   help="hkt-compile --precision of the fused modules (bf16: "
                   "the matmuls on Intel AMX tiles, or on AVX512-BF16 where "
                   "the CPU has no AMX)")
    p.add_argument("--cpu-features", metavar="+F,-G",
                   help="hkt-compile --cpu-features of every module (e.g. "
                   "-amx-tile: bf16 on AVX512-BF16 on an AMX host)")
    p.add_argument("--fused-pipeline", default="fused", metavar="NAME",
                   help="hkt-compile pipeline for the fused columns "
                   "(default fused)")
    p.add_argument("--reference-max-gb", type=float, default=4.0, metavar="GB",
                   help="skip a reference-pipeline run whose estimated memory, "
                   "(levels + 4) * B * H * T^2 * 4 bytes, exceeds this many "
                   "GiB (default 4)")
    p.add_argument("--gradient-max-gb", type=float, default=4.0, metavar="GB",
                   help="skip a gradient call (hkt-compile --backward, hkt-run "
                   "--grads) whose estimated memory, 64 B T D 4 bytes (fused) "
                   "or 3 (levels + 4) B H T^2 4 bytes (reference), exceeds "
                   "this many GiB (default 4)")
    p.add_argument("--timeout", type=float, default=3600.0, metavar="S",
                   help="seconds allowed to one hkt-compile or hkt-run "
                   "(default 3600)")
    p.add_argument("--build", default=os.path.join(REPO, "build"), metavar="DIR",
                   help="build tree holding bin/hkt-compile and bin/hkt-run "
                   "(default: the repository's build/)")
    p.add_argument("--markdown", action="store_true",
                   help="print a Markdown table instead of aligned text")
    p.add_argument("--quiet", action="store_true",
                   help="no progress lines on stderr")
    args = p.parse_args(argv)
    if args.dim % args.heads:
        p.error("--dim %d is not divisible by --heads %d" % (args.dim, args.heads))
    return args


class Failure(Exception):
    """A compile or run that did not give a number: `cell` is what the table
    shows, `note` the footnote."""

    def __init__(self, cell, note):
        super().__init__(note)
        self.cell = cell
        self.note = note


class Skipped(Exception):
    pass


def first_error_line(text):
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    for line in lines:
        i = line.find("error:")
        if i >= 0:
            # Drop "CFG.json:1:1: " and the like: the config is a temporary.
            return line[i:]
    return lines[0] if lines else "(no message)"


class Bench:
    def __init__(self, args, workdir):
        self.args = args
        self.workdir = workdir
        self.compile_tool = os.path.join(args.build, "bin", "hkt-compile")
        self.run_tool = os.path.join(args.build, "bin", "hkt-run")
        # What the first fused module was compiled for (its manifest).
        self.compiled_for = None
        self.target = None  # the first fused module's manifest target
        for tool in (self.compile_tool, self.run_tool):
            if not os.access(tool, os.X_OK):
                sys.exit("bench.py: error: %s not found (build it, or give "
                         "--build DIR)" % tool)

    def progress(self, text):
        if not self.args.quiet:
            print("bench.py: " + text, file=sys.stderr, flush=True)

    def measure(self, what, t, causal, levels, hybrid, pipeline, grad=False,
                bound=None):
        """Compiles and times one layer (with `grad`, its gradient call:
        forward and backward; with `bound`, the module compiled once for
        every length up to it, hkt-compile --max-seq-len, run at T = t);
        returns hkt-run's JSON record."""
        a = self.args
        if grad:
            need = gradient_bytes(a.batch, a.heads, t, a.dim, levels, pipeline)
            if need > a.gradient_max_gb * 2**30:
                self.progress("%s gradient T=%d causal=%s: skipped (needs ~%.1f GiB)"
                              % (what, t, causal, need / 2**30))
                raise Skipped()
        if pipeline == "reference":
            need = reference_bytes(a.batch, a.heads, t, levels)
            if need > a.reference_max_gb * 2**30:
                self.progress("%s T=%d causal=%s: skipped (reference needs ~%.1f GiB)"
                              % (what, t, causal, need / 2**30))
                raise Skipped()
        name = "%s-%s%s-%s-%s%s" % (what.replace(" ", "-"), pipeline,
                                  "" if a.precision == "f32" or
                                  pipeline == "reference" else "-" + a.precision,
                                  "T%d" % t if bound is None else "max%d" % bound,
                                  "causal" if causal else "full",
                                  "-grad" if grad else "")
        cfg = os.path.join(self.workdir, name + ".json")
        out = os.path.join(self.workdir, name)
        with open(cfg, "w") as f:
            json.dump({"batch": a.batch, "seq_len": t, "dim": a.dim,
                       "heads": a.heads, "levels": levels, "stride": STRIDE,
                       "kernel": KERNEL, "conv_kernel": CONV_KERNEL,
                       "hybrid": hybrid, "causal": causal}, f)
        # Footnotes name the pipeline, not the layer (the cell says which),
        # so that one error shared by HKT and MHA gets one footnote.
        label = "pipeline %s" % pipeline
        extra_compile = ["--backward"] if grad else []
        if a.cpu_features:
            extra_compile += ["--cpu-features=" + a.cpu_features]
            label += ", --cpu-features=%s" % a.cpu_features
        if a.precision != "f32" and pipeline != "reference":
            extra_compile += ["--precision", a.precision]
            label += ", --precision %s" % a.precision
        extra_run = ["--grads", out + ".grads.safetensors"] if grad else []
        if bound is not None:
            label += ", --max-seq-len %d" % bound
            extra_compile += ["--max-seq-len", str(bound)]
            extra_run += ["--size", "T=%d" % t]
        # Each module is compiled once (the dynamic column times its modules
        # again).
        if not os.path.isdir(out):
            self.call([self.compile_tool, "--layer", cfg, "--pipeline", pipeline,
                       "-o", out] + extra_compile, "hkt-compile, " + label)
        if self.compiled_for is None and pipeline == a.fused_pipeline:
            self.compiled_for = compiled_for(out)
            self.target = module_target(out)
        n = a.repeat if t < LARGE_T else min(a.repeat, LARGE_REPEAT)
        stdout = self.call([self.run_tool, out, "--random", "1", "--threads",
                            str(a.threads), "--bench", str(n), "--quiet"]
                           + extra_run, "hkt-run, " + label)
        record = None
        for line in stdout.splitlines():
            if line.startswith("{"):
                record = json.loads(line)
        if record is None or "median_ms" not in record:
            raise Failure("n/a", "hkt-run, %s: no timing line in its output" % label)
        self.progress("%s %s T=%d causal=%s: %.3f ms"
                      % (what, label, t, causal, record["median_ms"]))
        return record

    def call(self, cmd, label):
        try:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True,
                                  timeout=self.args.timeout)
        except subprocess.TimeoutExpired:
            raise Failure("timeout", "%s: over %g s" % (label, self.args.timeout))
        if proc.returncode != 0:
            if proc.returncode < 0:
                msg = "killed by signal %d" % -proc.returncode
            else:
                msg = first_error_line(proc.stderr)
            raise Failure("n/a", "%s: %s" % (label, msg))
        return proc.stdout


KERNEL_LABELS = {
    "avx512f": "AVX-512F FMA",
    "avx2-fma": "AVX2 FMA",
    "sse2": "SSE2 mul+add, no FMA",
    "scalar": "scalar mul+add, no vector FMA",
}


def compiled_for(module):
    """The CPU, vector width and tiles a module's manifest records."""
    try:
        with open(os.path.join(module, "manifest.json")) as f:
            manifest = json.load(f)
        cpu = manifest["target"]["cpu"]
        t = manifest.get("tiles")
        if not t:
            return "LLVM CPU %s" % cpu
        return ("LLVM CPU %s, family %s, %d-bit vectors, register tile %dx%d "
                "(%s), attention tiles %dx%d, matmuls %s"
                % (cpu, t.get("family", "?"), t["vector_bits"],
                   t["register_rows"], t["register_vectors"], t["source"],
                   t["tile_q"], t["tile_k"],
                   matmul_precision(manifest["target"])))
    except (OSError, ValueError, KeyError, TypeError) as e:
        return "unknown (%s)" % e


def module_target(module):
    """A module's manifest target, or None where it cannot be read."""
    try:
        with open(os.path.join(module, "manifest.json")) as f:
            return json.load(f)["target"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def uses_amx(target):
    """Whether a bf16 module's matmuls run on AMX tiles (hkt-compile's
    choice, as the runtime reads it: features amx-tile and amx-bf16), not on
    AVX512-BF16."""
    return {"amx-tile", "amx-bf16"} <= set(target.get("features", []))


def matmul_precision(target):
    if target.get("precision") != "bf16":
        return "f32"
    return ("bf16 on AMX tiles" if uses_amx(target)
            else "bf16 on AVX512-BF16 (vdpbf16ps)")


def fma_peak(threads, workdir):
    """fp32 FMA peak of `threads` cores, measured: scripts/fma_peak.c built
    for the x86-64 baseline (it picks its widest kernel at run time:
    AVX-512F, else AVX2 + FMA, else SSE2 mul + add), one copy per thread at
    once. Returns (GFLOP/s, vector bits, kernel label) or None when it cannot
    be built or run."""
    exe = os.path.join(workdir, "fma_peak")
    src = os.path.join(REPO, "scripts", "fma_peak.c")
    try:
        # No -march=native: the kernels carry their own target attributes.
        # -fno-tree-vectorize keeps the scalar kernel scalar,
        # -ffp-contract=off keeps the mul + add kernels mul + add.
        subprocess.run(["cc", "-O3", "-fno-tree-vectorize", "-ffp-contract=off",
                        src, "-o", exe],
                       check=True, capture_output=True, timeout=60)
        procs = [subprocess.Popen([exe], stdout=subprocess.PIPE, text=True)
                 for _ in range(threads)]
        results = [p.communicate(timeout=120)[0].split() for p in procs]
        if any(p.returncode != 0 for p in procs):
            return None
        kernel = results[0][2]
        return (sum(float(r[0]) for r in results), int(results[0][1]),
                KERNEL_LABELS.get(kernel, kernel))
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def bf16_peak(threads, workdir, isa):
    """bf16 peak of `threads` cores on `isa` ("amx" or "avx512bf16"),
    measured: scripts/bf16_peak.c, one
    copy per thread at once. Returns (GFLOP/s, kernel label), or None where
    it cannot be built or run."""
    exe = os.path.join(workdir, "bf16_peak")
    src = os.path.join(REPO, "scripts", "bf16_peak.c")
    try:
        subprocess.run(["cc", "-O2", src, "-o", exe],
                       check=True, capture_output=True, timeout=60)
        cmd = [exe, "--isa", isa]
        procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True,
                                  stderr=subprocess.DEVNULL)
                 for _ in range(threads)]
        results = [p.communicate(timeout=120)[0].split() for p in procs]
        if any(p.returncode != 0 for p in procs):
            return None
        return sum(float(r[0]) for r in results), results[0][1]
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def fmt(value, digits):
    return "-" if value is None else "%.*f" % (digits, value)


COLUMNS = ["T", "causal", "HKT fused ms", "HKT GFLOP/s", "MHA fused ms",
           "MHA GFLOP/s", "HKT/MHA time", "HKT reference ms",
           "fused speed-up", "HKT peak RSS MiB", "HKT RSS above inputs MiB",
           "HKT fwd+bwd ms", "fwd+bwd / fwd", "fwd+bwd RSS above inputs MiB",
           "dynamic T / static"]


def main(argv):
    args = parse_args(argv)
    causals = {"both": [False, True], "yes": [True], "no": [False]}[args.causal]
    notes = []  # footnote texts, numbered from 1

    def cell_of(fn):
        """Runs a measurement; returns (record or None, cell text if none)."""
        try:
            return fn(), None
        except Skipped:
            return None, "-"
        except Failure as f:
            if f.note not in notes:
                notes.append(f.note)
            return None, "%s[%d]" % (f.cell, notes.index(f.note) + 1)

    rows = []
    with tempfile.TemporaryDirectory(prefix="hkt-bench-") as workdir:
        peak_before = fma_peak(args.threads, workdir)
        bench = Bench(args, workdir)
        for t in args.sizes:
            for causal in causals:
                hkt, hkt_cell = cell_of(lambda: bench.measure(
                    "HKT", t, causal, args.levels, True, args.fused_pipeline))
                mha, mha_cell = cell_of(lambda: bench.measure(
                    "MHA", t, causal, 1, False, args.fused_pipeline))
                if args.fused_pipeline == "reference":
                    ref, ref_cell = hkt, hkt_cell  # the same module: reuse
                else:
                    ref, ref_cell = cell_of(lambda: bench.measure(
                        "HKT", t, causal, args.levels, True, "reference"))
                grad, grad_cell = cell_of(lambda: bench.measure(
                    "HKT", t, causal, args.levels, True, args.fused_pipeline,
                    grad=True))
                # The module for every length up to the largest size, at
                # this T, against the static one: the median ratio of
                # DYNAMIC_PAIRS interleaved pairs (a few percent is the
                # question, and a shared machine drifts by more between
                # two runs minutes apart).
                def dynamic_ratio():
                    ratios = []
                    for _ in range(DYNAMIC_PAIRS):
                        s = bench.measure("HKT", t, causal, args.levels, True,
                                          args.fused_pipeline)
                        d = bench.measure("HKT", t, causal, args.levels, True,
                                          args.fused_pipeline,
                                          bound=max(args.sizes))
                        ratios.append(d["median_ms"] / s["median_ms"])
                    return statistics.median(ratios)
                dyn, dyn_cell = cell_of(dynamic_ratio)

                hkt_flops = layer_flops(args.batch, t, args.dim, args.levels,
                                        STRIDE, causal)
                mha_flops = layer_flops(args.batch, t, args.dim, 1, STRIDE, causal)

                def ms(r):
                    return r["median_ms"] if r else None

                def gflops(flops, r):
                    return flops / (r["median_ms"] * 1e-3) / 1e9 if r else None

                def ratio(a, b):
                    return a / b if a is not None and b is not None and b > 0 else None

                rss = hkt.get("max_rss_mb") if hkt else None
                above = (rss - hkt["inputs_mb"]) if rss is not None and \
                    "inputs_mb" in hkt else None
                rows.append([
                    str(t), "yes" if causal else "no",
                    hkt_cell or fmt(ms(hkt), 3),
                    hkt_cell or fmt(gflops(hkt_flops, hkt), 2),
                    mha_cell or fmt(ms(mha), 3),
                    mha_cell or fmt(gflops(mha_flops, mha), 2),
                    fmt(ratio(ms(hkt), ms(mha)), 3),
                    ref_cell or fmt(ms(ref), 3),
                    fmt(ratio(ms(ref), ms(hkt)), 2),
                    hkt_cell or fmt(rss, 1),
                    hkt_cell or fmt(above, 1),
                    grad_cell or fmt(ms(grad), 3),
                    fmt(ratio(ms(grad), ms(hkt)), 2),
                    grad_cell or fmt((grad["max_rss_mb"] - grad["inputs_mb"])
                                     if grad else None, 1),
                    dyn_cell or fmt(dyn, 3),
                ])
        # Again at the end: on a shared machine the two may differ.
        peak_after = fma_peak(args.threads, workdir)
        # The ceiling of the instructions the modules' matmuls use, as their
        # manifest says (hkt-compile's choice).
        bf16_after = None
        if args.precision == "bf16" and bench.target:
            bf16_after = bf16_peak(
                args.threads, workdir,
                "amx" if uses_amx(bench.target) else "avx512bf16")

    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    d = args.dim // args.heads
    header = [
        "command: " + shlex.join([sys.argv[0]] + list(argv)),
        "date: " + datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "cpu: %s (%d logical CPUs)" % (cpu, os.cpu_count() or 0),
        "threads: %d" % args.threads,
        "compiled for: %s" % (bench.compiled_for or "no module compiled"),
        "fp32 FMA peak, measured (scripts/fma_peak.c, %d threads) before / "
        "after the table: %s" % (args.threads, " / ".join(
            "%.1f GFLOP/s (%d-bit vectors, %s)" % p if p else
            "not measured (scripts/fma_peak.c did not build or run)"
            for p in (peak_before, peak_after))),
    ] + ([
        "bf16 peak of the modules' matmul instructions, measured "
        "(scripts/bf16_peak.c, %d threads) after the table: %s"
        % (args.threads, "%.1f GFLOP/s (%s)" % bf16_after if bf16_after
           else "not measured (no module, or scripts/bf16_peak.c did not "
           "build or run)")] if args.precision == "bf16" else []) + [
        "layer: B=%d D=%d H=%d (d=%d) L=%d stride=%d kernel=%d conv_kernel=%d f32%s; "
        "MHA: L=1, hybrid=false" % (args.batch, args.dim, args.heads, d,
                                    args.levels, STRIDE, KERNEL, CONV_KERNEL,
                                    "" if args.precision == "f32" else
                                    " (matmuls --precision %s)" % args.precision),
        "timing: median of %d calls after one warm-up (at most %d for T >= %d); "
        "fused pipeline '%s'; reference skipped above %g GiB, gradient "
        "call above %g GiB; dynamic T: HKT compiled once with --max-seq-len "
        "%d, run at each T (its time over the static module's: the median "
        "ratio of %d interleaved pairs)"
        % (args.repeat, min(args.repeat, LARGE_REPEAT), LARGE_T,
           args.fused_pipeline, args.reference_max_gb, args.gradient_max_gb,
           max(args.sizes), DYNAMIC_PAIRS),
    ]
    out = []
    if args.markdown:
        out += ["- " + h for h in header] + [""]
        out.append("| " + " | ".join(COLUMNS) + " |")
        out.append("|" + "|".join("---:" for _ in COLUMNS) + "|")
        for r in rows:
            out.append("| " + " | ".join(r) + " |")
    else:
        out += header + [""]
        widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c)
                  for i, c in enumerate(COLUMNS)]
        out.append("  ".join(c.rjust(w) for c, w in zip(COLUMNS, widths)))
        for r in rows:
            out.append("  ".join(v.rjust(w) for v, w in zip(r, widths)))
    if notes:
        out.append("")
        for i, note in enumerate(notes, 1):
            out.append("[%d] %s" % (i, note))
    print("\n".join(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
