#!/usr/bin/python3
"""Compile one HKT layer, run it on fresh random inputs, compare with the
float64 reference (hkt_reference.py, written from SPEC.md).

Usage (from lit RUN lines; run with Debian's /usr/bin/python3):

  check_layer.py --hkt-compile PATH --hkt-run PATH --config JSON_OR_FILE
                 --workdir DIR [--pipeline NAME[,NAME...]] [--tiles Q,K] [--cpu NAME] [--seed N]
                 [--lengths random|full|N,N,...] [--theta-dominant L]
                 [--gamma VALUE] [--sharp RMS] [--tol 1e-4] [--special mha|conv]
                 [--param-prefix auto|none|PREFIX] [--timeout S] [--dry-run]

Prints one line `config=... seed=... rel_err=... OK` (exit 0) or `... FAIL ...`
with details (exit 1).  Usage and tool errors exit 2.  The seed comes from
--seed, else the environment variable HKT_TEST_SEED, else os.urandom; it is
printed at once on stderr (which lit shows on failure even when stdout goes to
FileCheck) and in the result line, so a failure can be reproduced with --seed.

--dry-run stops before invoking the tools: it writes layer.json, x.npy,
lengths.npy and params.safetensors, reads them back and checks them, and runs
the reference-side checks (e.g. --special mha's reference identity).
"""

import argparse
import json
import math
import os
import struct
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hkt_reference as R  # noqa: E402
from hkt_seed import pick_seed  # noqa: E402

REQUIRED_KEYS = ("batch", "seq_len", "dim", "heads")
OPTIONAL_KEYS = tuple(R.CFG_DEFAULTS)          # levels stride kernel conv_kernel hybrid causal
SPEC_PREFIX = "layers.0.attn."                 # SPEC's model parameter names


class CheckError(Exception):
    """A usage / tool error (exit 2), as opposed to a numeric mismatch (exit 1)."""


# --------------------------------------------------------------------------
# config
# --------------------------------------------------------------------------

def load_config(text, dynamic=False):
    """A JSON object given inline or as a file name."""
    src = text
    if not text.lstrip().startswith("{"):
        if not os.path.exists(text):
            raise CheckError("--config: %r is neither a JSON object nor a file" % text)
        with open(text) as f:
            src = f.read()
    try:
        cfg = json.loads(src)
    except json.JSONDecodeError as e:
        raise CheckError("--config: bad JSON: %s" % e)
    if not isinstance(cfg, dict):
        raise CheckError("--config: expected a JSON object")
    for k in REQUIRED_KEYS:
        if k not in cfg and not (dynamic and k in ("seq_len", "batch")):
            raise CheckError("--config: missing required key %r" % k)
    unknown = sorted(set(cfg) - set(REQUIRED_KEYS) - set(OPTIONAL_KEYS))
    if unknown:
        raise CheckError("--config: unknown key(s) %s" % ", ".join(unknown))
    for k in ("batch", "seq_len", "dim", "heads", "levels", "stride", "kernel",
              "conv_kernel"):
        if k in cfg and (not isinstance(cfg[k], int) or isinstance(cfg[k], bool)
                         or cfg[k] < 1):
            raise CheckError("--config: %r must be a positive integer" % k)
    for k in ("hybrid", "causal"):
        if k in cfg and not isinstance(cfg[k], bool):
            raise CheckError("--config: %r must be true or false" % k)
    if cfg["dim"] % cfg["heads"]:
        raise CheckError("--config: dim %d is not a multiple of heads %d"
                         % (cfg["dim"], cfg["heads"]))
    return cfg


# --------------------------------------------------------------------------
# file formats
# --------------------------------------------------------------------------

def write_safetensors(path, tensors):
    """float32 safetensors: u64 LE header size, JSON header, raw LE data."""
    header = {}
    blobs = []
    off = 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name], dtype="<f4")
        raw = a.tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hjson += b" " * ((-len(hjson)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for raw in blobs:
            f.write(raw)


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    if n % 8:
        raise CheckError("%s: header size %d is not a multiple of 8" % (path, n))
    header = json.loads(data[8:8 + n].decode("utf-8"))
    body = data[8 + n:]
    out = {}
    end = 0
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        if meta["dtype"] != "F32":
            raise CheckError("%s: %s has dtype %s" % (path, name, meta["dtype"]))
        b, e = meta["data_offsets"]
        a = np.frombuffer(body[b:e], dtype="<f4")
        out[name] = a.reshape(meta["shape"])
        end = max(end, e)
    if end != len(body):
        raise CheckError("%s: data size %d, offsets end at %d" % (path, len(body), end))
    return out


# --------------------------------------------------------------------------
# subprocesses
# --------------------------------------------------------------------------

def run_tool(argv, timeout, env=None):
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout, env=env)
    except FileNotFoundError:
        raise CheckError("cannot execute %s" % argv[0])
    except subprocess.TimeoutExpired as e:
        sys.stderr.write((e.stderr or b"").decode("utf-8", "replace"))
        raise CheckError("timed out after %ss: %s" % (timeout, " ".join(argv)))
    if p.returncode != 0:
        sys.stderr.write(p.stdout.decode("utf-8", "replace"))
        sys.stderr.write(p.stderr.decode("utf-8", "replace"))
        raise CheckError("exit status %d: %s" % (p.returncode, " ".join(argv)))
    return p


def manifest_arg_names(moddir):
    """Argument names of the module's entries (empty set if unreadable)."""
    try:
        with open(os.path.join(moddir, "manifest.json")) as f:
            man = json.load(f)
    except (OSError, ValueError):
        return set(), None
    names = set()
    entries = man.get("entries", [])
    for e in entries:
        for a in e.get("args", []):
            names.add(a.get("name"))
    return names, man


def choose_prefix(option, arg_names, param_names):
    """Safetensors name prefix for the layer's parameters.

    SPEC names a layer's parameters `layers.i.attn.<name>` in the model and
    leaves the single-layer module's names open; `auto` follows the compiled
    module's manifest when its entry lists the parameters as arguments, and
    falls back to the bare names otherwise.
    """
    if option == "none":
        return ""
    if option != "auto":
        return option
    if any(n in arg_names for n in param_names):
        return ""
    if any(SPEC_PREFIX + n in arg_names for n in param_names):
        return SPEC_PREFIX
    return ""


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def rel_err(y, ref):
    den = np.linalg.norm(ref)
    return float(np.linalg.norm(y - ref) / den) if den > 0 else float(np.linalg.norm(y))


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hkt-compile")
    ap.add_argument("--hkt-run")
    ap.add_argument("--config", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--pipeline", default="fused,reference",
                    help="comma-separated hkt-compile pipelines, each checked")
    ap.add_argument("--precision", default="f32", choices=("f32", "tf32", "bf16"),
                    help="hkt-compile --precision (targets nvvm and "
                         "gpu-emulation; tf32: tensor cores)")
    ap.add_argument("--tiles", metavar="Q,K",
                    help="attention tile sizes for the fused pipeline "
                         "(hkt-compile --tile-q Q --tile-k K)")
    ap.add_argument("--cpu", help="hkt-compile --cpu (default: native)")
    ap.add_argument("--cpu-features", metavar="+F,-G",
                    help="hkt-compile --cpu-features")
    ap.add_argument("--register-tile", metavar="RxV",
                    help="hkt-compile --register-tile (fused pipeline, cpu)")
    ap.add_argument("--target", default="cpu",
                    choices=("cpu", "nvvm", "gpu-emulation"),
                    help="hkt-compile --target (nvvm runs on the GPU, "
                         "gpu-emulation runs the GPU kernels on the CPU); "
                         "with anything but cpu, --pipeline must be fused")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--lengths", default="random")
    ap.add_argument("--theta-dominant", type=int)
    ap.add_argument("--gamma", type=float)
    ap.add_argument("--sharp", type=float, metavar="RMS",
                    help="scale wq and wk so that each level's scores have "
                         "this root mean square (nearly one-hot softmax rows)")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--special", choices=("mha", "conv"))
    ap.add_argument("--param-prefix", default="auto",
                    help="auto (follow the manifest), none, or a literal prefix")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds allowed to one hkt-compile or hkt-run "
                         "(default: no limit; a test asserts no run time)")
    ap.add_argument("--max-seq-len", type=int, metavar="N",
                    help="compile one module with a dynamic T <= N "
                         "(hkt-compile --max-seq-len) and run it at every "
                         "length of --seq-lens, each against the reference "
                         "and against a static module of that length")
    ap.add_argument("--seq-lens", metavar="T,T,...",
                    help="with --max-seq-len: the lengths to run")
    ap.add_argument("--static-lens", metavar="T,T,...",
                    help="with --max-seq-len: the lengths of --seq-lens that "
                         "are also compiled statically for the comparison "
                         "(default: every one; each is a compile, which the "
                         "emulated GPU tests cannot afford at every length)")
    ap.add_argument("--max-batch", type=int, metavar="M",
                    help="with --max-seq-len: the batch is dynamic too "
                         "(hkt-compile --max-batch M), the i-th length runs "
                         "at the i-th batch of --batches (cycled)")
    ap.add_argument("--batches", metavar="B,B,...",
                    help="with --max-batch: the batch sizes to run")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--precompiled", metavar="MODDIR",
                    help="run this module (compiled from the same config, "
                         "target and precision) instead of compiling: "
                         "scripts/gpu-check.sh compiles here, runs on a GPU "
                         "machine that has no compiler")
    args = ap.parse_args(argv)
    if not args.dry_run and not ((args.hkt_compile or args.precompiled) and
                                 args.hkt_run):
        ap.error("--hkt-compile (or --precompiled) and --hkt-run are required "
                 "(unless --dry-run)")
    if args.precompiled and (args.pipeline != "fused" or args.hkt_compile):
        ap.error("--precompiled runs one module: --pipeline fused, no "
                 "--hkt-compile")
    if (args.max_seq_len is None) != (args.seq_lens is None):
        ap.error("--max-seq-len and --seq-lens go together")
    if args.static_lens is not None and args.max_seq_len is None:
        ap.error("--static-lens needs --max-seq-len")
    if args.max_seq_len is not None and (args.precompiled or args.dry_run):
        ap.error("--max-seq-len compiles its modules: no --precompiled or "
                 "--dry-run")
    if args.target != "cpu" and args.pipeline != "fused":
        ap.error("--target %s has the fused pipeline only: pass --pipeline fused"
                 % args.target)
    return args


def make_lengths(spec, rng, B, T):
    """None for `full`, else an int32 array of B entries in [1, T]."""
    if spec == "full":
        return None
    if spec == "random":
        return rng.integers(1, T + 1, size=B).astype(np.int32)
    try:
        vals = [int(v) for v in spec.split(",")]
    except ValueError:
        raise CheckError("--lengths: expected random, full or a comma list, got %r"
                         % spec)
    if len(vals) != B:
        raise CheckError("--lengths: %d values for batch %d" % (len(vals), B))
    if any(v < 1 or v > T for v in vals):
        raise CheckError("--lengths: values must lie in [1, %d]: %s" % (T, vals))
    return np.array(vals, dtype=np.int32)


def sharpen_params(x, params, cfg, rms):
    """Sharp attention: scales wq[l] and wk[l] of every level so that the
    level's scores S^(l) (SPEC 3) have root mean square `rms` on these
    inputs, which makes the softmax rows nearly one-hot (rms 60: the largest
    score of a row leads the next by ~10-20). In place, kept in the
    parameters' dtype; returns the largest |S^(l)| after scaling."""
    wq, wk = params["wq"], params["wk"]
    for l, s_l in enumerate(R.level_scores(x, params, cfg)):
        now = math.sqrt(float(np.mean(s_l ** 2)))
        if now > 0:
            g = math.sqrt(rms / now)
            wq[l] = (wq[l].astype(np.float64) * g).astype(wq.dtype)
            wk[l] = (wk[l].astype(np.float64) * g).astype(wk.dtype)
    return max(float(np.abs(s_l).max()) for s_l in R.level_scores(x, params, cfg))


def main(argv):
    args = parse_args(argv)
    user_cfg = load_config(args.config, dynamic=args.max_seq_len is not None)
    if args.max_batch and args.max_seq_len is None:
        raise CheckError("--max-batch needs --max-seq-len")
    cfg = R.full_cfg({k: v for k, v in user_cfg.items()
                      if k not in ("batch", "seq_len", "dim")})
    B, T, D = user_cfg.get("batch"), user_cfg.get("seq_len"), user_cfg["dim"]
    H, L = cfg["heads"], cfg["levels"]
    cfg_str = json.dumps(user_cfg, separators=(",", ":"), sort_keys=True)

    # Option consistency.
    if args.theta_dominant is not None and not 0 <= args.theta_dominant < L:
        raise CheckError("--theta-dominant %d: levels is %d" % (args.theta_dominant, L))
    if args.gamma is not None and not cfg["hybrid"]:
        raise CheckError("--gamma needs hybrid = true")
    if args.special == "mha" and (L != 1 or cfg["hybrid"]):
        raise CheckError("--special mha needs levels = 1 and hybrid = false")
    if args.special == "conv":
        if not cfg["hybrid"]:
            raise CheckError("--special conv needs hybrid = true")
        if args.gamma is None:
            args.gamma = -30.0
        if args.gamma > -20:
            raise CheckError("--special conv needs gamma <= -20 (beta ~ 0), got %g"
                             % args.gamma)

    if args.seed is not None:
        seed = args.seed
        print("check_layer.py: seed=%d (from --seed)" % seed, file=sys.stderr,
              flush=True)
    else:
        seed = pick_seed("check_layer.py")
    rng = np.random.default_rng(seed)
    head = "config=%s seed=%d" % (cfg_str, seed)

    if args.max_seq_len is not None:
        return check_dynamic(args, user_cfg, cfg, seed, rng, head)

    # Fresh inputs, float32; the reference sees the same float32 values.
    x = rng.standard_normal((B, T, D)).astype(np.float32)
    params = R.random_params(rng, cfg, D, dtype=np.float32)
    if args.theta_dominant is not None:
        params["theta"][:] = 0.0
        params["theta"][:, args.theta_dominant] = 30.0
    if args.gamma is not None:
        params["gamma"][:] = args.gamma
    if args.sharp is not None:
        head += " sharp=%g max_score=%.0f" % (
            args.sharp, sharpen_params(x, params, cfg, args.sharp))
    lengths = make_lengths(args.lengths, rng, B, T)

    wd = args.workdir
    os.makedirs(wd, exist_ok=True)
    layer_json = os.path.join(wd, "layer.json")
    moddir = os.path.join(wd, "mod")
    x_path = os.path.join(wd, "x.npy")
    len_path = os.path.join(wd, "lengths.npy")
    st_path = os.path.join(wd, "params.safetensors")
    y_path = os.path.join(wd, "y.npy")
    # The config exactly as given, so that the compiler's defaults are exercised.
    with open(layer_json, "w") as f:
        json.dump(user_cfg, f, indent=1)
        f.write("\n")
    np.save(x_path, np.ascontiguousarray(x, dtype="<f4"))
    np.save(len_path, (lengths if lengths is not None
                       else np.full(B, T, np.int32)).astype("<i4"))
    if os.path.exists(y_path):
        os.remove(y_path)

    # Reference (float64 on the float32-rounded inputs).
    p64 = {k: v.astype(np.float64) for k, v in params.items()}
    x64 = x.astype(np.float64)
    ref = R.hkt_layer(x64, p64, cfg, lengths)
    extra = []                         # (label, reference) compared with y too
    notes = []
    if args.special == "mha":
        ym = R.mha(x64, p64["wq"][0], p64["wk"][0], p64["wv"], p64["wo"], H,
                   cfg["causal"], lengths)
        r = rel_err(ref, ym)
        notes.append("ref_vs_mha=%.3e" % r)
        if not r <= 1e-12:
            print("%s FAIL reference hkt_layer(L=1) != mha: rel %.3e > 1e-12"
                  % (head, r))
            return 1
        extra.append(("mha", ym))
    if args.special == "conv":
        extra.append(("conv", R.conv_only_layer(x64, p64)))
    if args.theta_dominant is not None:
        extra.append(("level%d" % args.theta_dominant,
                      R.single_level_layer(x64, p64, cfg, args.theta_dominant,
                                           lengths)))

    if args.dry_run:
        # Read every file back and check it.
        with open(layer_json) as f:
            assert json.load(f) == user_cfg, "layer.json round trip"
        xb = np.load(x_path)
        assert xb.dtype == np.dtype("<f4") and xb.shape == (B, T, D)
        assert np.array_equal(xb, x)
        lb = np.load(len_path)
        assert lb.dtype == np.dtype("<i4") and lb.shape == (B,)
        assert ((lb >= 1) & (lb <= T)).all()
        if lengths is not None:
            assert np.array_equal(lb, lengths)
        names = list(params)
        write_safetensors(st_path, {n: params[n] for n in names})
        back = read_safetensors(st_path)
        assert sorted(back) == sorted(names), (sorted(back), names)
        for n in names:
            assert back[n].shape == params[n].shape and np.array_equal(back[n], params[n]), n
        for label, yx in extra:
            if label == "mha":
                continue                  # already noted above
            notes.append("ref_vs_%s=%.3e" % (label, rel_err(ref, yx)))
        print(" ".join([head] + notes + ["DRY-RUN OK (files in %s)" % wd]))
        return 0

    # Every pipeline compiles and runs the same inputs; each must agree.
    status = 0
    for pipeline in args.pipeline.split(","):
        status |= check_pipeline(args, pipeline, layer_json, moddir + "-" + pipeline,
                                 params, st_path, x_path, lengths, len_path,
                                 y_path, ref, extra, notes, head, seed, B, T, D)
    return status


def check_pipeline(args, pipeline, layer_json, moddir, params, st_path, x_path,
                   lengths, len_path, y_path, ref, extra, notes, head, seed,
                   B, T, D):
    head = "%s pipeline=%s" % (head, pipeline)
    cmd = compile_cmd(args, pipeline, layer_json, moddir)
    if args.cpu:
        head = "%s cpu=%s" % (head, args.cpu)
    if args.cpu_features:
        head = "%s cpu-features=%s" % (head, args.cpu_features)
    if args.target != "cpu":
        head = "%s target=%s" % (head, args.target)
    if args.precision != "f32":
        head = "%s precision=%s" % (head, args.precision)
    if args.tiles and pipeline == "fused":
        head = "%s tiles=%s" % (head, args.tiles)
    if args.precompiled:
        moddir = args.precompiled
    else:
        run_tool(cmd, args.timeout)

    # Parameters, named as the module expects.
    arg_names, manifest = manifest_arg_names(moddir)
    prefix = choose_prefix(args.param_prefix, arg_names, list(params))
    write_safetensors(st_path, {prefix + n: v for n, v in params.items()})

    # Run.
    if os.path.exists(y_path):
        os.remove(y_path)
    cmd = [args.hkt_run, moddir, "--params", st_path, "--input", "x=" + x_path]
    if lengths is not None:
        cmd += ["--input", "lengths=" + len_path]
    cmd += ["--output", "y=" + y_path]
    # The emulated GPU's blocks are OpenMP work-sharing on however few cores
    # lit leaves: idle threads must sleep, not spin.
    env = None
    if args.target == "gpu-emulation":
        env = dict(os.environ, OMP_WAIT_POLICY="passive", KMP_BLOCKTIME="0")
    run_tool(cmd, args.timeout, env)

    # Compare.
    if not os.path.exists(y_path):
        raise CheckError("hkt-run wrote no %s" % y_path)
    y = np.load(y_path)
    if y.shape != (B, T, D):
        print("%s FAIL y has shape %s, expected %s" % (head, y.shape, (B, T, D)))
        return 1
    if y.dtype != np.float32:
        notes.append("y_dtype=%s" % y.dtype)
    y = y.astype(np.float64)
    if not np.isfinite(y).all():
        bad = np.argwhere(~np.isfinite(y))[0]
        print("%s FAIL y has non-finite values (first at %s)" % (head, tuple(bad)))
        return 1

    err = rel_err(y, ref)
    results = [("rel_err", err)] + [("rel_err_%s" % lbl, rel_err(y, r))
                                    for lbl, r in extra]
    ok = all(e <= args.tol for _, e in results)
    line = "%s %s" % (head, " ".join("%s=%.3e" % kv for kv in results))
    if notes:
        line += " " + " ".join(notes)
    if ok:
        print(line + " OK")
        return 0
    # Details: where the worst disagreement is.
    diff = np.abs(y - ref)
    b, i, c = np.unravel_index(np.argmax(diff), diff.shape)
    rows = np.sqrt((diff ** 2).sum(axis=2)) / np.maximum(
        np.sqrt((ref ** 2).sum(axis=2)), 1e-30)
    print("%s FAIL (tol %g)" % (line, args.tol))
    print("  lengths=%s" % (None if lengths is None else lengths.tolist()))
    print("  max |y - ref| = %.3e at [b=%d, t=%d, c=%d]: y=%.6g ref=%.6g"
          % (diff[b, i, c], b, i, c, y[b, i, c], ref[b, i, c]))
    worst = np.argsort(rows.ravel())[::-1][:5]
    print("  worst rows (b, t, rel): %s" % ", ".join(
        "(%d, %d, %.2e)" % (w // T, w % T, rows.ravel()[w]) for w in worst))
    print("  reproduce with --seed %d" % seed)
    return 1


def compile_cmd(args, pipeline, layer_json, moddir):
    cmd = [args.hkt_compile, "--layer", layer_json, "-o", moddir,
           "--pipeline", pipeline]
    if args.cpu:
        cmd += ["--cpu", args.cpu]
    if args.cpu_features:
        cmd += ["--cpu-features=" + args.cpu_features]
    if args.target != "cpu":
        cmd += ["--target", args.target]
    if args.precision != "f32":
        cmd += ["--precision", args.precision]
    if args.tiles and pipeline == "fused":
        tile_q, tile_k = args.tiles.split(",")
        cmd += ["--tile-q", tile_q, "--tile-k", tile_k]
    if args.register_tile and pipeline == "fused":
        cmd += ["--register-tile", args.register_tile]
    return cmd


def run_layer(args, moddir, wd, tag, x, lengths, params):
    """Runs the module on x (B x T x D) and lengths; returns y (float32)."""
    x_path = os.path.join(wd, "x-%s.npy" % tag)
    len_path = os.path.join(wd, "lengths-%s.npy" % tag)
    y_path = os.path.join(wd, "y-%s.npy" % tag)
    st_path = os.path.join(wd, "params.safetensors")
    arg_names, _ = manifest_arg_names(moddir)
    prefix = choose_prefix(args.param_prefix, arg_names, list(params))
    write_safetensors(st_path, {prefix + n: v for n, v in params.items()})
    np.save(x_path, np.ascontiguousarray(x, dtype="<f4"))
    np.save(len_path, lengths.astype("<i4"))
    if os.path.exists(y_path):
        os.remove(y_path)
    env = None
    if args.target == "gpu-emulation":
        env = dict(os.environ, OMP_WAIT_POLICY="passive", KMP_BLOCKTIME="0")
    run_tool([args.hkt_run, moddir, "--params", st_path, "--input",
              "x=" + x_path, "--input", "lengths=" + len_path, "--output",
              "y=" + y_path], args.timeout, env)
    if not os.path.exists(y_path):
        raise CheckError("hkt-run wrote no %s" % y_path)
    return np.load(y_path)


def seq_lens(args):
    """(--max-seq-len, the lengths of --seq-lens), each length in [1, N]."""
    N = args.max_seq_len
    try:
        lens = [int(v) for v in args.seq_lens.split(",")]
    except ValueError:
        raise CheckError("--seq-lens: expected a comma list of integers")
    if any(t < 1 or t > N for t in lens):
        raise CheckError("--seq-lens: lengths must lie in [1, %d]: %s" % (N, lens))
    return N, lens


def static_lens(args, lens):
    """The lengths compared against a static module: --static-lens (each
    one of --seq-lens), else every length."""
    if args.static_lens is None:
        return set(lens)
    try:
        chosen = {int(v) for v in args.static_lens.split(",")}
    except ValueError:
        raise CheckError("--static-lens: expected a comma list of integers")
    if not chosen <= set(lens):
        raise CheckError("--static-lens: %s are not in --seq-lens %s"
                         % (sorted(chosen - set(lens)), lens))
    return chosen


def batch_sizes(args, user_cfg):
    """The batch of each run: --batches (each in [1, --max-batch]) with
    --max-batch, else the config's."""
    if not args.max_batch:
        if args.batches:
            raise CheckError("--batches needs --max-batch")
        return [user_cfg["batch"]]
    try:
        batches = [int(v) for v in (args.batches or str(args.max_batch)).split(",")]
    except ValueError:
        raise CheckError("--batches: expected a comma list of integers")
    if any(b < 1 or b > args.max_batch for b in batches):
        raise CheckError("--batches: sizes must lie in [1, %d]: %s"
                         % (args.max_batch, batches))
    return batches


def max_batch_flags(args):
    return ["--max-batch", str(args.max_batch)] if args.max_batch else []


def check_dynamic(args, user_cfg, cfg, seed, rng, head):
    """One module with a dynamic T <= --max-seq-len, run at every length of
    --seq-lens on fresh inputs: each result against the float64 reference
    (--tol) and against a module compiled for that static length (the same
    numbers: bitwise when the tiles are the same, else within 1e-6)."""
    N, lens = seq_lens(args)
    compared = static_lens(args, lens)
    batches = batch_sizes(args, user_cfg)
    D = user_cfg["dim"]
    wd = args.workdir
    os.makedirs(wd, exist_ok=True)
    params = R.random_params(rng, cfg, D, dtype=np.float32)
    p64 = {k: v.astype(np.float64) for k, v in params.items()}
    dyn_cfg = dict(user_cfg, seq_len=None)
    if args.max_batch:
        dyn_cfg["batch"] = None
    dyn_json = os.path.join(wd, "layer-dynamic.json")
    with open(dyn_json, "w") as f:
        json.dump(dyn_cfg, f)
    status = 0
    for pipeline in args.pipeline.split(","):
        dyn_mod = os.path.join(wd, "mod-dynamic-" + pipeline)
        cmd = compile_cmd(args, pipeline, dyn_json, dyn_mod)
        run_tool(cmd + ["--max-seq-len", str(N)] + max_batch_flags(args),
                 args.timeout)
        with open(os.path.join(dyn_mod, "manifest.json")) as f:
            x_spec = [a for a in json.load(f)["entries"][0]["args"]
                      if a["name"] == "x"][0]
        if x_spec["shape"][1] != -1 or x_spec["dims"][1] != {"symbol": "T", "max": N}:
            print("%s pipeline=%s FAIL the manifest's x is %s" % (head, pipeline, x_spec))
            return 1
        for i, T in enumerate(lens):
            B = batches[i % len(batches)]
            line = "%s pipeline=%s max_seq_len=%d T=%d" % (head, pipeline, N, T)
            if args.max_batch:
                line += " max_batch=%d B=%d" % (args.max_batch, B)
            x = rng.standard_normal((B, T, D)).astype(np.float32)
            lengths = rng.integers(1, T + 1, size=B).astype(np.int32)
            ref = R.hkt_layer(x.astype(np.float64), p64, cfg, lengths)
            y = run_layer(args, dyn_mod, wd, "dyn-%s-%d" % (pipeline, T), x,
                          lengths, params)
            if T not in compared:
                # Against the reference only (--static-lens).
                err = rel_err(y.astype(np.float64), ref)
                line += " rel_err=%.3e" % err
                if y.shape == (B, T, D) and np.isfinite(y).all() and err <= args.tol:
                    print(line + " OK")
                else:
                    print(line + " FAIL (tol %g; y shape %s)" % (args.tol, y.shape))
                    print("  reproduce with --seed %d" % seed)
                    status = 1
                continue
            static_json = os.path.join(wd, "layer-%d-%d.json" % (B, T))
            with open(static_json, "w") as f:
                json.dump(dict(user_cfg, seq_len=T, batch=B), f)
            static_mod = os.path.join(wd, "mod-%s-%d-%d" % (pipeline, B, T))
            run_tool(compile_cmd(args, pipeline, static_json, static_mod),
                     args.timeout)
            ys = run_layer(args, static_mod, wd, "static-%s-%d" % (pipeline, T),
                           x, lengths, params)
            if y.shape != (B, T, D) or ys.shape != (B, T, D):
                print("%s FAIL y has shape %s (static %s), expected %s"
                      % (line, y.shape, ys.shape, (B, T, D)))
                status = 1
                continue
            err = rel_err(y.astype(np.float64), ref)
            bitwise = np.array_equal(y, ys)
            vs_static = rel_err(y.astype(np.float64), ys.astype(np.float64))
            line += " rel_err=%.3e vs_static=%s" % (
                err, "bitwise" if bitwise else "%.3e" % vs_static)
            # bf16 on the CPU: which matmuls take AMX tiles depends on their
            # shapes (a static length's attention tiles may be too narrow),
            # so a static module may round where the dynamic one does not:
            # the two agree to bf16's rounding, not to f32's.
            static_bound = (1e-2 if args.target == "cpu" and
                            args.precision == "bf16" else 1e-6)
            if (np.isfinite(y).all() and err <= args.tol and
                    vs_static <= static_bound):
                print(line + " OK")
            else:
                print(line + " FAIL (tol %g; static within %g)"
                      % (args.tol, static_bound))
                print("  reproduce with --seed %d" % seed)
                status = 1
    return status


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except CheckError as e:
        print("check_layer.py: error: %s" % e, file=sys.stderr)
        sys.exit(2)
