"""Compile once, call from anywhere: hkt-compile run into a cache directory.

    m = hkt.compile_layer({"batch": 2, "seq_len": None, "dim": 512, "heads": 8,
                           "levels": 3, "causal": True},
                          max_seq_len=4096, backward=True)

The module lands in $HKT_CACHE_DIR (default ~/.cache/hkt) under a key made of
the config, the flags, the compiler (a hash of the hkt-compile binary) and
this machine's CPU (its model name and feature flags: a module is compiled for
the host's CPU), so a second call with the same arguments opens the module
without compiling. A compile goes to a temporary directory renamed into place
when done: an interrupted compile leaves nothing a later call would open.
"""
import hashlib
import json
import os
import shutil
import subprocess
import tempfile

from . import _capi

_binary_hashes = {}


def compiler_path():
    """hkt-compile: $HKT_COMPILE, else the repository's build/bin (this
    package run from the source tree), else the PATH."""
    env = os.environ.get("HKT_COMPILE")
    if env:
        # A bare name is looked up on the PATH, as a shell would.
        found = env if os.sep in env else shutil.which(env)
        if not found or not os.path.exists(found):
            raise FileNotFoundError("hkt: HKT_COMPILE=%s: no such program" % env)
        return found
    here = os.path.dirname(os.path.abspath(__file__))
    built = os.path.normpath(os.path.join(here, "..", "..", "build", "bin",
                                          "hkt-compile"))
    if os.path.exists(built):
        return built
    found = shutil.which("hkt-compile")
    if not found:
        raise FileNotFoundError(
            "hkt: no hkt-compile (set HKT_COMPILE, or build the repository "
            "with scripts/setup.sh)")
    return found


def _compiler_hash(path):
    st = os.stat(path)
    key = (path, st.st_mtime_ns, st.st_size)
    if key not in _binary_hashes:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        _binary_hashes[key] = h.hexdigest()
    return _binary_hashes[key]


def _host_cpu():
    try:
        with open("/proc/cpuinfo") as f:
            model = flags = ""
            for line in f:
                k, _, v = line.partition(":")
                if k.strip() == "model name" and not model:
                    model = v.strip()
                elif k.strip() == "flags" and not flags:
                    flags = " ".join(sorted(v.split()))
            return model + "|" + flags
    except OSError:
        return "unknown"


def cache_dir():
    return os.environ.get("HKT_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "hkt")


def _compile(kind, config, flags):
    """The module for `config` (--layer or --model) and `flags`, compiled
    into the cache unless it is there."""
    tool = compiler_path()
    text = json.dumps(config, sort_keys=True)
    key = hashlib.sha256(json.dumps(
        [kind, text, flags, _compiler_hash(tool), _host_cpu()]).encode()
    ).hexdigest()[:32]
    root = cache_dir()
    out = os.path.join(root, "%s-%s" % (kind, key))
    if not os.path.isfile(os.path.join(out, "manifest.json")):
        os.makedirs(root, exist_ok=True)
        work = tempfile.mkdtemp(prefix=".compiling-", dir=root)
        try:
            cfg = os.path.join(work, "config.json")
            with open(cfg, "w") as f:
                f.write(text)
            mod = os.path.join(work, "module")
            p = subprocess.run([tool, "--" + kind, cfg, "-o", mod] + flags,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
            if p.returncode != 0:
                raise _capi.Error("hkt-compile failed: " + (
                    p.stderr.strip() or "exit status %d" % p.returncode))
            try:
                os.rename(mod, out)
            except OSError:
                # Another process compiled the same module first: use its.
                if not os.path.isfile(os.path.join(out, "manifest.json")):
                    raise
        finally:
            shutil.rmtree(work, ignore_errors=True)
    from . import load
    return load(out)


def _flags(target, precision, backward, max_batch, extra):
    flags = []
    if target != "cpu":
        flags += ["--target", target]
    if precision:
        flags += ["--precision", precision]
    if backward:
        flags.append("--backward")
    if max_batch is not None:
        flags += ["--max-batch", str(int(max_batch))]
    return flags + extra


def compile_layer(config, backward=False, target="cpu", precision=None,
                  max_seq_len=None, max_batch=None):
    """A layer (a layer config as a dict: docs/module-format.md) compiled
    with hkt-compile --layer, cached; returns the loaded module. With
    `max_seq_len` one module serves every length up to it (and every batch up
    to `max_batch`)."""
    extra = ["--max-seq-len", str(int(max_seq_len))] if max_seq_len else []
    return _compile("layer", dict(config),
                    _flags(target, precision, backward, max_batch, extra))


def compile_model(config, target="cpu", precision=None, max_batch=None,
                  inference=False):
    """SPEC's classifier (a model config as a dict) compiled with
    hkt-compile --model, cached: entries logits and loss, and unless
    `inference` loss_grad and train_step."""
    extra = ["--inference"] if inference else []
    return _compile("model", dict(config),
                    _flags(target, precision, False, max_batch, extra))
