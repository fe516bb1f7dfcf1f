"""Checks for test/Tools/train.test (hkt-run init / train / predict).

    check_training.py init W.safetensors MODEL.json
        every SPEC parameter with its shape, and SPEC's initialisation: LayerNorm
        weights 1, biases, theta and down_b 0, down_w tap 0 = 1 and the others
        0, gamma 2, the matrices of std ~0.02 and mean ~0.
    check_training.py falls LOG.jsonl
        the mean of the last three logged losses is below 0.85 x the first's.
    check_training.py resume A.ckpt B.ckpt A.jsonl B.jsonl
        the same losses at every step and bit-identical tensors and metadata
        step / data position in both checkpoints; the learning rates follow
        the warm-up and cosine schedule of the test.
    check_training.py fake-traffic ONE.err MORE.err STEPS W.safetensors
        the copies the fake CUDA driver counted (test/Unit/Inputs/
        fake_libcuda.c) in a 1-step run (ONE.err) and a run of STEPS steps
        (MORE.err) of hkt-run train on a cuda module: the weights and
        moments (three times W's bytes) go up once and come down once, the
        steps after the first move less than 1/10 of W's bytes each way
        and less than W's bytes from device to device.
    check_training.py resume-close A.ckpt B.ckpt A.jsonl B.jsonl TOL
        the same, within TOL relative to each tensor's largest element (a
        GPU's f32 atomics add in no fixed order: a resumed run continues
        as the straight one up to that round-off), the losses too.
    check_training.py poison W.safetensors OUT.safetensors
        W with head.b set to +inf (a weight file whose loss is nan).
    check_training.py predict P.npy TEXT.tsv
        one int32 prediction in [0, classes) per test line (n % 10 == 9).
    check_training.py export CKPT.safetensors W.safetensors
        W holds exactly CKPT's weights, bit-identical, no optimizer state,
        and CKPT's model config and step in its metadata.
    check_training.py plain CKPT.safetensors OUT.safetensors
        CKPT's tensors (optimizer state included) without any metadata: a
        weight file from another tool.
    check_training.py argmax LOGITS.npy P.npy
        the predictions are the logits' argmax, row by row.
    check_training.py finite LOG.jsonl N
        N logged steps, each loss finite.
    check_training.py follows A.jsonl B.jsonl TOL
        the same steps logged in both, each loss of B within TOL (relative)
        of A's (a GPU module's run against the CPU module's).
    check_training.py nccl-log ERR MODULE_DIR STEPS RANKS
        what the fake NCCL (test/Unit/Inputs/fake_libnccl.c) reported for a
        data-parallel GPU run: RANKS ranks joined one communicator of RANKS
        with the id rank 0 made, each ran STEPS all-reduces of the model's
        parameter count + 2 floats (the gradients and [n * loss, n]), none
        refused, and destroyed its communicator.
    check_training.py traffic RESULT.json MODULE_DIR STEPS
        hkt-run train's device_traffic of a run of STEPS steps on a GPU
        module's device twin: every train_step argument uploaded once, then
        each step only the arguments that are not in-out (the batch, the
        step and its scalars) and the loss back; the in-out ones (weights,
        moments) downloaded once, for the checkpoint.
"""
import json
import os
import re
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "reference"))
import hkt_model_reference as M  # noqa: E402
from check_layer import write_safetensors  # noqa: E402


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    body = data[8 + n:]
    out = {}
    for name, t in header.items():
        b, e = t["data_offsets"]
        assert t["dtype"] == "F32", (name, t["dtype"])
        out[name] = np.frombuffer(body[b:e], "<f4").reshape(t["shape"])
    return out, meta


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check_init(path, config):
    cfg = M.parse_model_config(config)
    tensors, meta = read(path)
    shapes = M.param_shapes(cfg)
    if sorted(tensors) != sorted(shapes):
        fail("names %s, expected %s" % (sorted(tensors), sorted(shapes)))
    if json.loads(meta["model"]) != cfg:
        fail("metadata model %s" % meta["model"])
    for name, shape in shapes.items():
        a = tensors[name]
        if tuple(a.shape) != tuple(shape):
            fail("%s has shape %s, expected %s" % (name, a.shape, shape))
        kind = M._init_kind(name)
        if kind == "ones" and not (a == 1).all():
            fail(name + " is not all ones")
        if kind == "zeros" and not (a == 0).all():
            fail(name + " is not all zeros")
        if kind == "gamma" and not (a == 2).all():
            fail(name + " is not all 2")
        if kind == "down_w" and not ((a[..., 0] == 1).all() and (a[..., 1:] == 0).all()):
            fail(name + ": tap 0 must be 1, the others 0")
        if kind == "normal" and a.size >= 64:
            if not (0.015 < a.std() < 0.025 and abs(a.mean()) < 0.01):
                fail("%s: std %.4f mean %.4f, expected ~0.02 and ~0" % (
                    name, a.std(), a.mean()))
    print("init OK")


def losses(path):
    return [json.loads(line) for line in open(path) if '"loss"' in line]


def check_falls(path):
    rows = losses(path)
    first, last = rows[0]["loss"], np.mean([r["loss"] for r in rows[-3:]])
    if not last < 0.85 * first:
        fail("loss %.4f at the start, %.4f at the end" % (first, last))
    print("loss falls OK")


def compare_runs(a, b, alog, blog, tol):
    """Checkpoints A and B hold the same tensors (bit for bit when tol is
    None, else within tol of each tensor's largest element) and the same
    step and data position; the logs the same steps and losses. Returns
    (tensors, losses, worst relative difference)."""
    ta, ma = read(a)
    tb, mb = read(b)
    if sorted(ta) != sorted(tb):
        fail("tensor names differ")
    worst = 0.0
    for name in ta:
        if tol is None:
            if ta[name].tobytes() != tb[name].tobytes():
                fail("%s differs (max abs diff %g)" % (
                    name, float(np.abs(ta[name] - tb[name]).max())))
            continue
        scale = max(float(np.abs(ta[name]).max()), 1e-30)
        err = float(np.abs(ta[name].astype(np.float64) - tb[name]).max()) / scale
        worst = max(worst, err)
        if not err <= tol:
            fail("%s differs by %.3g of its largest element" % (name, err))
    for key in ("step", "examples_seen"):
        if ma[key] != mb[key]:
            fail("metadata %s: %s vs %s" % (key, ma[key], mb[key]))
    la = [(r["step"], r["loss"]) for r in losses(alog)]
    lb = [(r["step"], r["loss"]) for r in losses(blog)]
    same = la == lb if tol is None else (
        [s for s, _ in la] == [s for s, _ in lb] and
        all(abs(x - y) <= tol * abs(x) for (_, x), (_, y) in zip(la, lb)))
    if not same:
        fail("losses differ: %s vs %s" % (la, lb))
    return len(ta), len(la), worst


def check_resume(a, b, alog, blog):
    tensors, nlosses, _ = compare_runs(a, b, alog, blog, None)
    # The schedule of both runs (lr 1e-3, 2 warm-up steps, cosine to step 6).
    for r in losses(blog):
        t = r["step"]
        want = 1e-3 * t / 2 if t <= 2 else \
            1e-3 * 0.5 * (1 + np.cos(np.pi * (t - 2) / 4))
        if abs(r["lr"] - want) > 1e-12:
            fail("lr %g at step %d, expected %g" % (r["lr"], t, want))
    print("resume exact: %d losses, %d tensors OK" % (nlosses, tensors))


def fake_copies(path):
    """(bytes up, bytes down, bytes device to device) of the fake driver's
    report in `path`."""
    import re
    m = re.search(r"fake-cuda: copies host->device \d+ \((\d+) bytes\), "
                  r"device->host \d+ \((\d+) bytes\), "
                  r"device->device \d+ \((\d+) bytes\)", open(path).read())
    if not m:
        fail("no fake-cuda copy report in %s" % path)
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def check_fake_traffic(one, more, steps, weights):
    steps = int(steps)
    w = sum(t.nbytes for t in read(weights)[0].values())
    up1, down1, dev1 = fake_copies(one)
    upn, downn, devn = fake_copies(more)
    per_up, per_down = (upn - up1) / (steps - 1), (downn - down1) / (steps - 1)
    # On the device too the weights and moments stay put: an in-out
    # argument's final copy onto itself is skipped (mgpuMemcpy).
    per_dev = (devn - dev1) / (steps - 1)
    if not per_dev < w:
        fail("each step copied %d bytes on the device; the weights are %d"
             % (per_dev, w))
    if not 3 * w <= up1 < 3 * w + w / 10:
        fail("1 step: %d bytes up, weights and moments are %d" % (up1, 3 * w))
    if not 3 * w <= down1 < 3 * w + w / 10:
        fail("1 step: %d bytes down, weights and moments are %d"
             % (down1, 3 * w))
    if not (0 < per_up < w / 10 and 0 < per_down < w / 10):
        fail("each step moved %d bytes up and %d down; the weights are %d"
             % (per_up, per_down, w))
    print("weights and moments once each way (%d bytes); each further step "
          "%d bytes up, %d down, %d on the device OK"
          % (3 * w, per_up, per_down, per_dev))


def check_resume_close(a, b, alog, blog, tol):
    tensors, nlosses, worst = compare_runs(a, b, alog, blog, float(tol))
    print("resume within %.2g: %d losses, %d tensors OK" % (
        worst, nlosses, tensors))


def check_predict(path, text):
    p = np.load(path)
    lines = open(text, "rb").read().rstrip(b"\n").split(b"\n")
    n = sum(1 for i in range(len(lines)) if i % 10 == 9)
    if p.dtype != np.int32 or p.shape != (n,):
        fail("predictions %s %s, expected int32 (%d,)" % (p.dtype, p.shape, n))
    if p.min() < 0 or p.max() >= 10:  # the test's model has 10 classes
        fail("predictions outside the classes")
    print("predictions OK")


def poison(path, out):
    with open(path, "rb") as f:
        data = bytearray(f.read())
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    b, e = header["head.b"]["data_offsets"]
    data[8 + n + b:8 + n + e] = np.full((e - b) // 4, np.inf, "<f4").tobytes()
    with open(out, "wb") as f:
        f.write(data)


def check_export(ckpt, weights):
    c, cmeta = read(ckpt)
    w, wmeta = read(weights)
    want = sorted(n for n in c if not n.startswith(("adam.m.", "adam.v.")))
    if sorted(w) != want:
        fail("exported %s, expected %s" % (sorted(w), want))
    if len(want) == len(c):
        fail("the checkpoint has no optimizer state to drop")
    for n in want:
        if not np.array_equal(w[n], c[n]):
            fail("%s differs from the checkpoint's" % n)
    for key in ("model", "step"):
        if wmeta.get(key) != cmeta.get(key):
            fail("metadata %s: %r, the checkpoint has %r"
                 % (key, wmeta.get(key), cmeta.get(key)))
    if wmeta.get("format") != "hkt-checkpoint":
        fail("metadata format %r" % wmeta.get("format"))
    print("export OK: %d weights, %d moments dropped, step %s"
          % (len(w), len(c) - len(w), wmeta["step"]))


def plain(ckpt, out):
    write_safetensors(out, read(ckpt)[0])


def check_argmax(logits, predictions):
    z, p = np.load(logits), np.load(predictions)
    if p.shape != z.shape[:1] or not np.array_equal(z.argmax(axis=1), p):
        fail("predictions %s are not the argmax of the logits %s"
             % (p.tolist(), z.argmax(axis=1).tolist()))
    print("argmax OK")


def check_finite(path, n):
    got = [r["loss"] for r in losses(path)]
    if len(got) != int(n):
        fail("%d logged losses, expected %s" % (len(got), n))
    if not all(np.isfinite(v) for v in got):
        fail("non-finite losses: %s" % got)
    print("%d losses finite, last %.3f" % (len(got), got[-1]))


def check_follows(a, b, tol):
    ra = {r["step"]: r["loss"] for r in losses(a)}
    rb = {r["step"]: r["loss"] for r in losses(b)}
    if sorted(ra) != sorted(rb) or not ra:
        fail("steps %s and %s" % (sorted(ra), sorted(rb)))
    worst = max(abs(rb[t] - ra[t]) / abs(ra[t]) for t in ra)
    if not worst <= float(tol):
        fail("losses %s and %s differ by %.3g relative (tol %s)"
             % ([ra[t] for t in sorted(ra)], [rb[t] for t in sorted(rb)],
                worst, tol))
    print("%d losses follow within %.2g" % (len(ra), worst))


def check_traffic(result, module, steps):
    steps = int(steps)
    got = json.loads(open(result).read().strip().splitlines()[-1])
    traffic = got["device_traffic"]
    manifest = json.load(open(os.path.join(module, "manifest.json")))
    entry = [e for e in manifest["entries"] if e["name"] == "train_step"][0]
    size = {"f32": 4, "i32": 4, "i64": 8, "f64": 8}

    def nbytes(spec, batch):
        n = size[spec["dtype"]]
        for d in spec["shape"]:
            n *= batch if d == -1 else d
        return n
    inout = [a for a in entry["args"] if a["role"] == "inout"]
    per_step = [a for a in entry["args"] if a["role"] != "inout"]
    want = {
        "uploads": len(entry["args"]) + steps * len(per_step),
        "downloads": steps + len(inout),
        "bytes_down": steps * 4 + sum(nbytes(a, 1) for a in inout),
    }
    for k, v in want.items():
        if traffic[k] != v:
            fail("%s: %d, expected %d (%s)" % (k, traffic[k], v, traffic))
    up = traffic["bytes_up"]
    # The batch's size (a dynamic dimension) is not in the result: the
    # uploads' bytes are checked against the weights and moments' bytes.
    weights = sum(nbytes(a, 1) for a in inout)
    if not weights < up < weights + (steps + 1) * sum(
            nbytes(a, 64) for a in per_step):
        fail("bytes_up %d for weights and moments of %d bytes" % (up, weights))
    print("device traffic OK: %d uploads, %d downloads" % (
        traffic["uploads"], traffic["downloads"]))


def check_nccl_log(err, module, steps, ranks):
    steps, ranks = int(steps), int(ranks)
    manifest = json.load(open(os.path.join(module, "manifest.json")))
    logits = [e for e in manifest["entries"] if e["name"] == "logits"][0]
    count = 2 + sum(int(np.prod(a["shape"])) for a in logits["args"]
                    if a["role"] == "parameter")
    joined, ran = {}, {}
    for line in open(err):
        m = re.match(r"fake-nccl: rank (\d+) of (\d+) joined (\S+)$", line)
        if m:
            if int(m.group(2)) != ranks:
                fail("a communicator of %s ranks, expected %d" % (m.group(2), ranks))
            joined.setdefault(int(m.group(1)), []).append(m.group(3))
        m = re.match(r"fake-nccl: rank (\d+): (\d+) all-reduces of (\d+) "
                     r"floats \(sum\), (\d+) refused, communicator (.*)$", line)
        if m:
            ran[int(m.group(1))] = (int(m.group(2)), int(m.group(3)),
                                    int(m.group(4)), m.group(5))
    if sorted(joined) != list(range(ranks)) or any(len(v) != 1 for v in joined.values()):
        fail("ranks joined: %s" % joined)
    ids = {v[0] for v in joined.values()}
    if len(ids) != 1:
        fail("the ranks joined with different ids: %s" % ids)
    want = (steps, count, 0, "destroyed")
    for r in range(ranks):
        if ran.get(r) != want:
            fail("rank %d: %s, expected %s" % (r, ran.get(r), want))
    print("nccl OK: %d ranks, one id, %d all-reduces of %d floats each" % (
        ranks, steps, count))


if __name__ == "__main__":
    mode = sys.argv[1]
    {"init": check_init, "falls": check_falls, "resume": check_resume,
     "predict": check_predict, "poison": poison, "export": check_export,
     "plain": plain, "argmax": check_argmax,
     "finite": check_finite, "follows": check_follows,
     "traffic": check_traffic, "nccl-log": check_nccl_log,
     "resume-close": check_resume_close,
     "fake-traffic": check_fake_traffic}[mode](*sys.argv[2:])
