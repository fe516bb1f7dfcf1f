"""Self-tests of the float64 backward references (no compiler needed).

    /usr/bin/python3 test/reference/test_reference_grad.py [-v]

hkt_reference_grad.py (one layer's analytic backward, SPEC "Backward") and
hkt_model_reference.py (SPEC's classifier model, its loss and analytic
backward) are checked against central finite differences in float64 on a grid
of small shapes, and against SPEC's special cases (L = 1 without hybrid is
MHA, beta -> 0 is the convolution alone, a dominant theta level, padding never
reaches the loss).  Finite differences look at a random subset of each
tensor's entries (always including the extremes of every index range).  One
line per case gives the worst relative error,
max|analytic - fd| / max(max|fd|, tiny), over the tensors of the case.

Random inputs: the seed is HKT_TEST_SEED if set, else fresh, and is printed
first (each test draws from its own stream, derived from the seed and the
test's name).  Exit status 1 on any failure.
"""

import itertools
import json
import math
import os
import sys
import tempfile
import unittest
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hkt_reference as R  # noqa: E402
import hkt_reference_grad as RG  # noqa: E402
import hkt_model_reference as M  # noqa: E402
from hkt_seed import pick_seed  # noqa: E402

SEED = None  # set in __main__

FD_STEP = 1e-6
LAYER_TOL = 1e-6     # worst seen ~1e-7: FD round-off, loss ~1e1, step 1e-6
MODEL_TOL = 1e-5     # the model's small gradients (~1e-4) against FD round-off
TINY_REL = 1e-2     # tiny = TINY_REL * the largest |fd| entry of the case
ENTRIES = 20         # finite-difference entries per tensor

WORST = {}           # kind -> (err, case), for the summary line


def note(kind, err, case):
    if err > WORST.get(kind, (-1.0, ""))[0]:
        WORST[kind] = (err, case)


def pick_entries(rng, shape, n=ENTRIES):
    """Indices to check: every entry of a small tensor, else the two corners,
    both ends of every axis (the other coordinates random) and random ones."""
    shape = tuple(shape)
    size = int(np.prod(shape)) if shape else 1
    if size <= n:
        return list(np.ndindex(*shape))
    picked = [tuple(0 for _ in shape), tuple(s - 1 for s in shape)]
    for ax, s in enumerate(shape):
        for end in (0, s - 1):
            idx = [int(rng.integers(e)) for e in shape]
            idx[ax] = end
            picked.append(tuple(idx))
    seen = set()
    out = [i for i in picked if not (i in seen or seen.add(i))]
    while len(out) < n:
        idx = tuple(int(rng.integers(e)) for e in shape)
        if idx not in seen:
            seen.add(idx)
            out.append(idx)
    return out


def fd_errors(f, arrays, analytic, rng, names=None, step=FD_STEP, n=ENTRIES):
    """{name: (max|analytic - fd|, max|fd|)} of analytic[name] against central
    differences of the scalar f() with respect to arrays[name] (float64,
    perturbed in place and restored), on pick_entries of each tensor.
    rel_errors turns them into relative errors."""
    errs = {}
    for name in (names if names is not None else list(arrays)):
        a = arrays[name]
        assert a.dtype == np.float64
        assert analytic[name].shape == a.shape, (name, analytic[name].shape, a.shape)
        idxs = pick_entries(rng, a.shape, n)
        num = np.empty(len(idxs))
        ana = np.empty(len(idxs))
        for r, idx in enumerate(idxs):
            old = a[idx]
            a[idx] = old + step
            fp = f()
            a[idx] = old - step
            fm = f()
            a[idx] = old
            num[r] = (fp - fm) / (2 * step)
            ana[r] = analytic[name][idx]
        errs[name] = (float(np.abs(ana - num).max()), float(np.abs(num).max()))
    return errs


def rel_errors(raw):
    """{name: max|a - b| / max(max|b|, tiny)} with tiny = TINY_REL times the
    largest max|b| of the case: a tensor whose gradient vanishes (every score's,
    when each row has a single valid key, or the coarse levels', when all valid
    keys of a row fall into one block) is measured against the case's scale,
    where finite differences only see round-off (~1e-10)."""
    scale = max([ref for _, ref in raw.values()] + [0.0])
    tiny = max(TINY_REL * scale, 1e-300)
    return {name: diff / max(ref, tiny) for name, (diff, ref) in raw.items()}


def layer_case(rng, B, T, D, lengths="none", **cfg):
    """x, params (float64), cfg, lengths, dy for one layer case."""
    cfg = R.full_cfg(cfg)
    x = rng.standard_normal((B, T, D))
    params = {k: v.astype(np.float64) for k, v in R.random_params(rng, cfg, D).items()}
    if lengths == "random":
        ln = rng.integers(1, T + 1, size=B)
    elif lengths == "none":
        ln = None
    else:
        ln = np.asarray(lengths)
    dy = rng.standard_normal((B, T, D))
    return x, params, cfg, ln, dy


def describe(B, T, D, cfg, ln):
    return ("B=%d T=%d D=%d H=%d L=%d s=%d k=%d kc=%d %s %s lengths=%s"
            % (B, T, D, cfg["heads"], cfg["levels"], cfg["stride"], cfg["kernel"],
               cfg["conv_kernel"], "causal" if cfg["causal"] else "noncausal",
               "hybrid" if cfg["hybrid"] else "nohybrid",
               "none" if ln is None else ",".join(str(int(v)) for v in ln)))


def report(kind, case, raw, tol):
    """Prints the case line (raw: fd_errors' dict); returns a failure message
    or None."""
    errs = rel_errors(raw)
    name = max(errs, key=errs.get)
    worst = errs[name]
    note(kind, worst, case)
    ok = worst <= tol
    print("%s %s: worst rel err %.2e (%s) %s"
          % (kind, case, worst, name, "OK" if ok else "FAIL"), flush=True)
    if ok:
        return None
    bad = ", ".join("%s %.2e" % (k, v) for k, v in sorted(errs.items()) if v > tol)
    return "%s %s: %s" % (kind, case, bad)


def check_layer_fd(rng, x, params, cfg, ln, dy, names=None):
    """Relative errors of hkt_layer_grad against finite differences of
    sum(hkt_layer * dy), for x and every parameter (or `names`)."""
    g = RG.hkt_layer_grad(x, params, cfg, dy, ln)
    assert set(g) == set(params) | {"x"}, sorted(g)
    arrays = dict(params, x=x)

    def f():
        return float((R.hkt_layer(x, params, cfg, ln) * dy).sum())
    return fd_errors(f, arrays, g, rng, names)


# --------------------------------------------------------------------------
# an MHA backward written separately (textbook, one head at a time)
# --------------------------------------------------------------------------

def mha_backward(x, wq, wk, wv, wo, heads, causal, lengths, dy):
    """Gradients of sum(mha(x, ...) * dy): dict x wq wk wv wo."""
    B, T, D = x.shape
    d = D // heads
    out = {n: np.zeros_like(a) for n, a in
           (("x", x), ("wq", wq), ("wk", wk), ("wv", wv), ("wo", wo))}
    for b in range(B):
        o_all = np.zeros((T, D))
        do_all = dy[b] @ wo.T
        dq_all = np.zeros((T, D))
        dk_all = np.zeros((T, D))
        dv_all = np.zeros((T, D))
        for h in range(heads):
            cs = slice(h * d, (h + 1) * d)
            q, k, v = x[b] @ wq[:, cs], x[b] @ wk[:, cs], x[b] @ wv[:, cs]
            a = q @ k.T / math.sqrt(d)
            for i in range(T):
                for j in range(T):
                    if (causal and j > i) or (lengths is not None and j >= lengths[b]):
                        a[i, j] = -np.inf
            pr = np.exp(a - a.max(axis=1, keepdims=True))
            pr /= pr.sum(axis=1, keepdims=True)
            o_all[:, cs] = pr @ v
            do = do_all[:, cs]
            dp = do @ v.T
            da = pr * (dp - (dp * pr).sum(axis=1, keepdims=True))
            dq_all[:, cs] = da @ k / math.sqrt(d)
            dk_all[:, cs] = da.T @ q / math.sqrt(d)
            dv_all[:, cs] = pr.T @ do
        out["wo"] += o_all.T @ dy[b]
        out["wq"] += x[b].T @ dq_all
        out["wk"] += x[b].T @ dk_all
        out["wv"] += x[b].T @ dv_all
        out["x"][b] = dq_all @ wq.T + dk_all @ wk.T + dv_all @ wv.T
    return out


# --------------------------------------------------------------------------
# the layer
# --------------------------------------------------------------------------

class LayerGradTests(unittest.TestCase):

    def setUp(self):
        seed = SEED if SEED is not None else pick_seed("test_reference_grad.py")
        name = self.id().rsplit(".", 1)[-1]
        self.rng = np.random.default_rng([seed, zlib.crc32(name.encode())])

    def run_cases(self, cases, kind="layer"):
        failures = []
        for (B, T, D, lengths, c) in cases:
            x, p, cfg, ln, dy = layer_case(self.rng, B, T, D, lengths, **c)
            errs = check_layer_fd(self.rng, x, p, cfg, ln, dy)
            msg = report(kind, describe(B, T, D, cfg, ln), errs, LAYER_TOL)
            if msg:
                failures.append(msg)
        self.assertFalse(failures, "\n".join(failures))

    def test_grid(self):
        # L = 1..4 x stride 2, 3 x causal x key lengths x hybrid; T is not a
        # multiple of s^(L-1) (T_l = 1 at the coarsest levels of L = 4);
        # B, H, d, k and kc cycle through small values (B = 1, H = 1, d = 1,
        # k and kc longer than some levels).
        shapes = [(2, 2, 4), (1, 1, 3), (3, 3, 6), (2, 4, 4), (1, 2, 6), (2, 1, 2)]
        kernels = [(3, 3), (1, 2), (2, 4), (5, 1), (3, 2), (4, 3)]
        cases = []
        for n, (L, s, causal, lengths, hybrid) in enumerate(itertools.product(
                (1, 2, 3, 4), (2, 3), (False, True), ("none", "random"),
                (True, False))):
            if L == 1 and s == 3:
                continue                  # the stride plays no part at L = 1
            B, H, D = shapes[n % len(shapes)]
            k, kc = kernels[(n // 2) % len(kernels)]
            T = {2: 7, 3: 8}[s] if L > 1 else 6
            cases.append((B, T, D, lengths, dict(heads=H, levels=L, stride=s,
                                                  kernel=k, conv_kernel=kc,
                                                  causal=causal, hybrid=hybrid)))
        self.run_cases(cases)

    def test_edge_shapes(self):
        cases = [
            # T = 1 (every level has one token)
            (1, 1, 1, "none", dict(heads=1, levels=3)),
            (2, 1, 4, "random", dict(heads=2, levels=4, stride=3, causal=True)),
            (2, 1, 3, "none", dict(heads=3, levels=1, hybrid=False)),
            # B = 1, H = 1, d = 1
            (1, 5, 1, "random", dict(heads=1, levels=3, causal=True)),
            (1, 9, 3, "none", dict(heads=3, levels=2, stride=3, kernel=5)),
            # T a multiple of s^(L-1); T = s^(L-1) + 1; T_l = 1 twice
            (2, 8, 4, "random", dict(heads=2, levels=4, stride=2)),
            (1, 9, 2, "none", dict(heads=1, levels=4, stride=2, causal=True)),
            (2, 5, 4, "random", dict(heads=2, levels=4, stride=3, kernel=5,
                                     causal=True)),
            # kernels longer than the sequence; key lengths of 1 and T
            (2, 2, 4, [1, 2], dict(heads=2, levels=2, kernel=5, conv_kernel=4)),
            (3, 6, 4, [1, 6, 3], dict(heads=2, levels=3, causal=True)),
            # levels beyond the coarsest useful one (T_l = 1 from level 3 on)
            (1, 6, 2, "none", dict(heads=2, levels=5, stride=2, kernel=2)),
            # stride 1: every level has T tokens
            (1, 5, 4, "random", dict(heads=2, levels=3, stride=1, kernel=2)),
        ]
        self.run_cases(cases, kind="edge")

    def test_head_width_64(self):
        cases = [
            (1, 6, 128, "random", dict(heads=2, levels=3, causal=True)),
            (2, 5, 64, "none", dict(heads=1, levels=2, stride=3, hybrid=False)),
        ]
        self.run_cases(cases, kind="d64")

    def test_forward_matches_reference(self):
        for c in (dict(heads=2, levels=3, causal=True), dict(heads=1, levels=1,
                                                            hybrid=False)):
            x, p, cfg, ln, dy = layer_case(self.rng, 2, 11, 4, "random", **c)
            y, g, lse, drow = RG.hkt_layer_forward_backward(x, p, cfg, dy, ln)
            self.assertLess(np.abs(y - R.hkt_layer(x, p, cfg, ln)).max(), 1e-12)
            for name, a in dict(p, x=x).items():
                self.assertEqual(g[name].shape, a.shape, name)
                self.assertEqual(g[name].dtype, np.float64, name)

    # --- saved statistics -------------------------------------------------
    def test_lse_and_drow(self):
        for causal, hybrid in itertools.product((False, True), (False, True)):
            B, T, D, H = 2, 13, 6, 3
            x, p, cfg, ln, dy = layer_case(self.rng, B, T, D, "random", heads=H,
                                           levels=3, causal=causal, hybrid=hybrid)
            lse = RG.row_logsumexp(x, p, cfg, ln)
            drow = RG.row_drow(x, p, cfg, dy, ln)
            self.assertEqual(lse.shape, (B, H, T))
            self.assertEqual(drow.shape, (B, H, T))
            # lse independently: the reference's own fused, masked scores
            Sm = R.apply_masks(R.fused_scores(x, p, cfg), causal, ln)
            want = np.logaddexp.reduce(Sm, axis=-1)
            self.assertLess(np.abs(lse - want).max(), 1e-12)
            # A recomputed from lse (what a fused backward does)
            A = np.exp(Sm - lse[..., None])
            self.assertLess(np.abs(A.sum(-1) - 1).max(), 1e-12)
            # Drow = sum_j A dA, dA = dAttn V^T, dAttn = beta dY Wo^T
            d = D // H
            dAttn = dy @ p["wo"].T
            if hybrid:
                dAttn = dAttn * np.repeat(R.sigmoid(p["gamma"]), d)
            dA = R._split_heads(dAttn, H) @ np.swapaxes(
                R._split_heads(x @ p["wv"], H), -1, -2)
            self.assertLess(np.abs(drow - (A * dA).sum(-1)).max(), 1e-12)
            # with hybrid it is not dO . O
            if hybrid:
                c = RG.forward_cache(x, p, cfg, ln)
                dOO = (R._split_heads(dy @ p["wo"].T, H)
                       * R._split_heads(c["O"], H)).sum(-1)
                self.assertGreater(np.abs(dOO - drow).max(), 1e-3)

    def test_block_sums_adjoint(self):
        # <upsample(a), M> = <a, block_sums(M)> (T not a multiple of f)
        for T, f in ((7, 2), (8, 3), (1, 4), (9, 9), (5, 1)):
            n = -(-T // f)
            a = self.rng.standard_normal((2, 3, n, n))
            Mx = self.rng.standard_normal((2, 3, T, T))
            lhs = (R.upsample(a, T, f) * Mx).sum()
            rhs = (a * RG.block_sums(Mx, f, n)).sum()
            self.assertLess(abs(lhs - rhs), 1e-12 * max(1.0, abs(lhs)))

    def test_masked_scores_have_zero_gradient(self):
        x, p, cfg, ln, dy = layer_case(self.rng, 3, 9, 4, [2, 9, 5], heads=2,
                                       levels=3, causal=True)
        c = RG.forward_cache(x, p, cfg, ln)
        _, aux = RG.backward_from_cache(c, dy)
        self.assertTrue((aux["dS"][~c["allowed"]] == 0).all())
        self.assertTrue((~c["allowed"]).any())
        # and the rows of dS sum to 0 (softmax)
        self.assertLess(np.abs(aux["dS"].sum(-1)).max(), 1e-12)

    # --- SPEC special cases -------------------------------------------------
    def test_l1_is_mha(self):
        failures = []
        for causal, lengths in itertools.product((False, True), ("none", "random")):
            B, T, D, H = 2, 6, 6, 3
            x, p, cfg, ln, dy = layer_case(self.rng, B, T, D, lengths, heads=H,
                                           levels=1, hybrid=False, causal=causal)
            g = RG.hkt_layer_grad(x, p, cfg, dy, ln)
            # a separately written MHA backward
            gm = mha_backward(x, p["wq"][0], p["wk"][0], p["wv"], p["wo"], H,
                              causal, ln, dy)
            # Relative to the largest entry; an all-zero gradient (every
            # row's only key is key 0, e.g. both lengths 1 when causal:
            # seed 1469849960 gave 0 / 0 for dwq) must be zero in both.
            def rel(a, b):
                return np.abs(a - b).max() / max(np.abs(b).max(), 1e-300)
            for name in ("x", "wv", "wo"):
                self.assertLess(rel(g[name], gm[name]), 1e-12, name)
            for name in ("wq", "wk"):
                self.assertLess(rel(g[name][0], gm[name]), 1e-12, name)
            self.assertTrue((g["theta"] == 0).all())      # lambda = 1 always
            # and finite differences of hkt_reference.mha, every entry
            wq, wk = p["wq"][0].copy(), p["wk"][0].copy()
            wv, wo = p["wv"], p["wo"]
            arrays = {"x": x, "wq": wq, "wk": wk, "wv": wv, "wo": wo}

            def f():
                return float((R.mha(x, wq, wk, wv, wo, H, causal, ln) * dy).sum())
            ana = {"x": g["x"], "wq": g["wq"][0], "wk": g["wk"][0],
                   "wv": g["wv"], "wo": g["wo"]}
            errs = fd_errors(f, arrays, ana, self.rng, n=10 ** 9)
            msg = report("mha", describe(B, T, D, cfg, ln), errs, LAYER_TOL)
            if msg:
                failures.append(msg)
        self.assertFalse(failures, "\n".join(failures))

    def test_beta_zero_is_conv(self):
        # gamma -> -inf: the gradients are those of CausalDepthwiseConv_u(X Wv) Wo;
        # the attention's parameters get none.
        failures = []
        for causal in (False, True):
            B, T, D, H = 2, 9, 4, 2
            x, p, cfg, ln, dy = layer_case(self.rng, B, T, D, "random", heads=H,
                                           levels=3, causal=causal)
            p["gamma"][:] = -60.0
            g = RG.hkt_layer_grad(x, p, cfg, dy, ln)
            for name in ("wq", "wk", "down_w", "down_b", "theta", "gamma"):
                self.assertLess(np.abs(g[name]).max(), 1e-20, name)
            arrays = {"x": x, "wv": p["wv"], "wo": p["wo"], "conv_u": p["conv_u"]}

            def f():
                return float((R.conv_only_layer(x, p) * dy).sum())
            errs = fd_errors(f, arrays, g, self.rng)
            msg = report("conv", describe(B, T, D, cfg, ln), errs, LAYER_TOL)
            if msg:
                failures.append(msg)
        self.assertFalse(failures, "\n".join(failures))

    def test_dominant_theta(self):
        # theta[:, l] = +30: the gradients of the level-l layer alone (upsampled);
        # the other levels' projections get (almost) none.
        failures = []
        B, T, D, H, L = 2, 10, 4, 2, 3
        for l in range(L):
            x, p, cfg, ln, dy = layer_case(self.rng, B, T, D, "random", heads=H,
                                           levels=L, causal=bool(l % 2))
            p["theta"][:] = 0.0
            p["theta"][:, l] = 30.0
            g = RG.hkt_layer_grad(x, p, cfg, dy, ln)
            others = [m for m in range(L) if m != l]
            self.assertLess(np.abs(g["wq"][others]).max(), 1e-9)
            self.assertLess(np.abs(g["wk"][others]).max(), 1e-9)
            arrays = dict(p, x=x)
            names = ["x", "wv", "wo", "conv_u", "gamma"]

            def f():
                return float((R.single_level_layer(x, p, cfg, l, ln) * dy).sum())
            errs = fd_errors(f, arrays, g, self.rng, names)
            # level l's own projections and the downsamplings below it: views
            # (perturbing them perturbs p) against the matching gradient slices
            views = {"wq": p["wq"][l], "wk": p["wk"][l]}
            sub = {"wq": g["wq"][l], "wk": g["wk"][l]}
            if l > 0:
                views.update(down_w=p["down_w"][:l], down_b=p["down_b"][:l])
                sub.update(down_w=g["down_w"][:l], down_b=g["down_b"][:l])
            for name, view in views.items():
                assert np.shares_memory(view, p[name])
            errs.update(fd_errors(f, views, sub, self.rng))
            msg = report("theta-dominant-%d" % l, describe(B, T, D, cfg, ln), errs,
                         LAYER_TOL)
            if msg:
                failures.append(msg)
        self.assertFalse(failures, "\n".join(failures))

    def test_bad_dy(self):
        x, p, cfg, ln, dy = layer_case(self.rng, 1, 4, 4, "none", heads=2)
        with self.assertRaises(ValueError):
            RG.hkt_layer_grad(x, p, cfg, dy[:, :3], ln)
        with self.assertRaises(ValueError):
            RG.hkt_layer_grad(x, p, cfg, dy, [0])


# --------------------------------------------------------------------------
# the model
# --------------------------------------------------------------------------

def model_cfg(**over):
    cfg = {"vocab": 9, "max_len": 12, "dim": 8, "heads": 2, "layers": 2,
           "levels": 3, "stride": 2, "kernel": 3, "conv_kernel": 3, "hybrid": True,
           "causal": False, "ffn": 12, "classes": 4}
    cfg.update(over)
    return cfg


def model_inputs(rng, cfg, B, T, lengths):
    """tokens with the given len[b] (nonzero tokens also after the first
    padding token) and labels."""
    tok = rng.integers(1, cfg["vocab"], size=(B, T))
    for b, n in enumerate(lengths):
        if n < T:
            tok[b, n] = 0
            tail = rng.integers(0, cfg["vocab"], size=T - n - 1)
            tok[b, n + 1:] = tail
    labels = rng.integers(0, cfg["classes"], size=B)
    return tok.astype(np.int32), labels


def noisy_params(rng, cfg):
    """SPEC's initialisation plus noise, so that every path carries signal."""
    p = {}
    for name, a in M.random_params(rng, cfg).items():
        scale = 0.3 if a.ndim >= 2 else 0.5
        p[name] = a.astype(np.float64) + rng.standard_normal(a.shape) * scale
    return p


def independent_mha_model_loss(p, cfg, tok, labels):
    """The MHA baseline (L = 1, hybrid false) written with hkt_reference.mha
    and its own LayerNorm / GELU / pooling (shares nothing with M's code)."""
    def ln(z, w, b):
        mu = z.mean(-1, keepdims=True)
        var = z.var(-1, keepdims=True)
        return (z - mu) / np.sqrt(var + 1e-5) * w + b

    def gelu(z):
        return 0.5 * z * (1 + np.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z ** 3)))
    B, T = tok.shape
    lens = np.array([list(r).index(0) if 0 in list(r) else T for r in tok])
    x = np.stack([p["embed"][tok[b]] + p["pos"][:T] for b in range(B)])
    for i in range(cfg["layers"]):
        q = "layers.%d." % i
        a = ln(x, p[q + "ln1.weight"], p[q + "ln1.bias"])
        x = x + R.mha(a, p[q + "attn.wq"][0], p[q + "attn.wk"][0], p[q + "attn.wv"],
                      p[q + "attn.wo"], cfg["heads"], cfg["causal"], lens)
        a = ln(x, p[q + "ln2.weight"], p[q + "ln2.bias"])
        x = x + gelu(a @ p[q + "ffn.w1"] + p[q + "ffn.b1"]) @ p[q + "ffn.w2"] \
            + p[q + "ffn.b2"]
    x = ln(x, p["ln_f.weight"], p["ln_f.bias"])
    loss = 0.0
    for b in range(B):
        pooled = x[b, :lens[b]].mean(axis=0)
        logits = pooled @ p["head.w"] + p["head.b"]
        loss += np.logaddexp.reduce(logits) - logits[labels[b]]
    return loss / B


class ModelTests(unittest.TestCase):

    def setUp(self):
        seed = SEED if SEED is not None else pick_seed("test_reference_grad.py")
        name = self.id().rsplit(".", 1)[-1]
        self.rng = np.random.default_rng([seed, zlib.crc32(name.encode())])

    def test_model_grad_fd(self):
        failures = []
        cases = [
            ("hkt", model_cfg(), 3, 10, [10, 6, 1]),
            ("mha", model_cfg(levels=1, hybrid=False), 3, 9, [4, 9, 1]),
            ("hkt-causal-s3", model_cfg(levels=2, stride=3, kernel=2, conv_kernel=2,
                                        causal=True, heads=4, max_len=11),
             2, 11, [7, 11]),
            ("hkt-B1-T1", model_cfg(layers=1, heads=1, dim=3, classes=2), 1, 1, [1]),
        ]
        for name, cfg, B, T, lens in cases:
            p = noisy_params(self.rng, cfg)
            tok, labels = model_inputs(self.rng, cfg, B, T, lens)
            self.assertEqual(M.token_lengths(tok, cfg).tolist(), lens)
            loss, g, dx0 = M.model_loss_and_grad(p, cfg, tok, labels,
                                                 return_input_grad=True)
            self.assertEqual(list(g), list(M.param_shapes(cfg)))
            self.assertAlmostEqual(loss, M.model_loss(p, cfg, tok, labels), places=12)
            # nothing reaches the padded positions
            for b, n in enumerate(lens):
                self.assertTrue((dx0[b, n:] == 0).all(), (name, b))
            self.assertTrue((g["pos"][T:] == 0).all())
            self.assertTrue((g["pos"][max(lens):] == 0).all())

            def f():
                return M.model_loss(p, cfg, tok, labels)
            errs = fd_errors(f, p, g, self.rng)
            case = "%s N=%d B=%d T=%d D=%d H=%d L=%d len=%s" % (
                name, cfg["layers"], B, T, cfg["dim"], cfg["heads"], cfg["levels"],
                ",".join(map(str, lens)))
            msg = report("model", case, errs, MODEL_TOL)
            if msg:
                failures.append(msg)
        self.assertFalse(failures, "\n".join(failures))

    def test_padding_does_not_reach_loss(self):
        for cfg in (model_cfg(), model_cfg(causal=True, levels=4, stride=2),
                    model_cfg(levels=1, hybrid=False)):
            B, T = 3, 12
            lens = [5, 1, 12]
            p = noisy_params(self.rng, cfg)
            tok, labels = model_inputs(self.rng, cfg, B, T, lens)
            loss, g = M.model_loss_and_grad(p, cfg, tok, labels)
            tok2 = tok.copy()
            for b, n in enumerate(lens):
                if n + 1 < T:
                    tok2[b, n + 1:] = self.rng.integers(0, cfg["vocab"],
                                                        size=T - n - 1)
            self.assertFalse(np.array_equal(tok, tok2))
            loss2, g2 = M.model_loss_and_grad(p, cfg, tok2, labels)
            self.assertLess(abs(loss - loss2), 1e-13 * abs(loss))
            for name in g:
                self.assertLess(np.abs(g[name] - g2[name]).max(),
                                1e-12 * max(np.abs(g[name]).max(), 1e-300), name)
            # the tokens before the padding do matter
            tok3 = tok.copy()
            tok3[0, lens[0] - 1] = tok[0, lens[0] - 1] % (cfg["vocab"] - 1) + 1
            self.assertNotEqual(M.model_loss(p, cfg, tok3, labels), loss)

    def test_mha_baseline_independent(self):
        for causal in (False, True):
            cfg = model_cfg(levels=1, hybrid=False, causal=causal)
            p = noisy_params(self.rng, cfg)
            tok, labels = model_inputs(self.rng, cfg, 3, 11, [11, 3, 7])
            want = independent_mha_model_loss(p, cfg, tok, labels)
            self.assertAlmostEqual(M.model_loss(p, cfg, tok, labels), want, places=12)

    def test_loss_value(self):
        cfg = model_cfg(classes=5)
        p = noisy_params(self.rng, cfg)
        tok, labels = model_inputs(self.rng, cfg, 2, 8, [8, 3])
        p["head.w"][:] = 0.0
        p["head.b"][:] = 0.0
        self.assertAlmostEqual(M.model_loss(p, cfg, tok, labels), math.log(5),
                               places=13)
        p["head.b"][:] = [0.0, 1.0, 2.0, 3.0, 4.0]
        lse = math.log(sum(math.exp(v) for v in range(5)))
        want = np.mean([lse - labels[b] for b in range(2)])
        self.assertAlmostEqual(M.model_loss(p, cfg, tok, labels), want, places=13)
        logits = M.model_forward(p, cfg, tok)
        self.assertEqual(logits.shape, (2, 5))

    def test_config(self):
        good = model_cfg()
        self.assertEqual(M.parse_model_config(good), good)
        self.assertEqual(M.parse_model_config(json.dumps(good)), good)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(good, f)
        try:
            self.assertEqual(M.parse_model_config(f.name), good)
        finally:
            os.unlink(f.name)
        spec_example = {"vocab": 20, "max_len": 512, "dim": 128, "heads": 4,
                        "layers": 2, "levels": 3, "stride": 2, "kernel": 3,
                        "conv_kernel": 3, "hybrid": True, "causal": False,
                        "ffn": 256, "classes": 10}
        self.assertEqual(M.parse_model_config(spec_example), spec_example)
        for key in M.MODEL_KEYS:
            bad = dict(good)
            del bad[key]
            with self.assertRaisesRegex(ValueError, repr(key)):
                M.parse_model_config(bad)
        bads = [("dim", 7), ("max_len", 0), ("max_len", -3), ("heads", 0),
                ("vocab", 1), ("layers", 0), ("levels", 0), ("ffn", 0),
                ("classes", 0), ("stride", 0), ("kernel", 0), ("conv_kernel", 0),
                ("dim", 8.0), ("heads", True), ("hybrid", 1), ("causal", "no"),
                ("levels", "3")]
        for key, val in bads:
            with self.assertRaisesRegex(ValueError, repr(key)):
                M.parse_model_config(dict(good, **{key: val}))
        with self.assertRaisesRegex(ValueError, "'dropout'"):
            M.parse_model_config(dict(good, dropout=0.1))
        with self.assertRaises(ValueError):
            M.parse_model_config("{not json")
        with self.assertRaises(ValueError):
            M.parse_model_config("[1, 2]")

    def test_inputs(self):
        cfg = model_cfg(max_len=6)
        p = M.random_params(self.rng, cfg)
        ok = np.array([[1, 2, 3, 0, 0, 5], [4, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 8]])
        self.assertEqual(M.token_lengths(ok, cfg).tolist(), [3, 1, 6])
        self.assertTrue(np.isfinite(M.model_loss(p, cfg, ok, [0, 1, 3])))
        with self.assertRaisesRegex(ValueError, "max_len"):
            M.model_forward(p, cfg, np.ones((1, 7), dtype=np.int32))
        with self.assertRaisesRegex(ValueError, "len 0"):
            M.model_forward(p, cfg, np.array([[1, 2], [0, 3]]))
        with self.assertRaisesRegex(ValueError, "vocab"):
            M.model_forward(p, cfg, np.array([[1, 9]]))
        with self.assertRaisesRegex(ValueError, "vocab"):
            M.model_forward(p, cfg, np.array([[1, -1]]))
        with self.assertRaises(ValueError):
            M.model_forward(p, cfg, np.array([[1.0, 2.0]]))
        with self.assertRaises(ValueError):
            M.model_forward(p, cfg, np.array([1, 2]))
        for labels in ([0, 1, 4], [0, -1, 1], [0, 1]):
            with self.assertRaises(ValueError):
                M.model_loss(p, cfg, ok, labels)
        with self.assertRaises(ValueError):
            M.model_loss_and_grad(p, cfg, ok, [0, 1, 4])
        bad = dict(p)
        del bad["head.b"]
        with self.assertRaisesRegex(ValueError, "head.b"):
            M.model_forward(bad, cfg, ok)
        with self.assertRaisesRegex(ValueError, "embed"):
            M.model_forward(dict(p, embed=p["embed"][:3]), cfg, ok)
        with self.assertRaises(ValueError):
            M.model_forward(dict(p, extra=np.zeros(2)), cfg, ok)

    def test_param_shapes_and_init(self):
        cfg = model_cfg(dim=64, heads=4, ffn=96, vocab=50, max_len=40, classes=10,
                        levels=3, kernel=4, conv_kernel=2)
        shapes = M.param_shapes(cfg)
        D, L, k, kc, F = 64, 3, 4, 2, 96
        want = {"embed": (50, D), "pos": (40, D), "ln_f.weight": (D,),
                "ln_f.bias": (D,), "head.w": (D, 10), "head.b": (10,)}
        for i in range(2):
            q = "layers.%d." % i
            want.update({q + "ln1.weight": (D,), q + "ln1.bias": (D,),
                         q + "attn.wq": (L, D, D), q + "attn.wk": (L, D, D),
                         q + "attn.wv": (D, D), q + "attn.wo": (D, D),
                         q + "attn.down_w": (L - 1, D, k),
                         q + "attn.down_b": (L - 1, D), q + "attn.theta": (4, L),
                         q + "attn.conv_u": (D, kc), q + "attn.gamma": (4,),
                         q + "ln2.weight": (D,), q + "ln2.bias": (D,),
                         q + "ffn.w1": (D, F), q + "ffn.b1": (F,),
                         q + "ffn.w2": (F, D), q + "ffn.b2": (D,)})
        self.assertEqual(shapes, want)
        p = M.random_params(self.rng, cfg)
        self.assertEqual({n: a.shape for n, a in p.items()}, want)
        for name, a in p.items():
            self.assertEqual(a.dtype, np.float32, name)
            leaf = name.split(".")[-1]
            if name in ("embed", "pos", "head.w") or leaf in (
                    "wq", "wk", "wv", "wo", "w1", "w2", "conv_u"):
                self.assertLess(abs(float(a.mean())), 0.02 * 5 / math.sqrt(a.size),
                                name)
                self.assertLess(abs(float(a.std()) / 0.02 - 1), 0.2, name)
            elif leaf == "weight":
                self.assertTrue((a == 1).all(), name)
            elif leaf == "down_w":
                self.assertTrue((a[..., 0] == 1).all() and (a[..., 1:] == 0).all())
            elif leaf == "gamma":
                self.assertTrue((a == 2).all())
            else:                             # biases, down_b, theta
                self.assertTrue((a == 0).all(), name)
        self.assertEqual(M.random_params(self.rng, cfg, np.float64)["embed"].dtype,
                         np.float64)
        # L = 1: no downsampling; hybrid false: no conv_u / gamma
        s1 = M.param_shapes(model_cfg(levels=1, hybrid=False, layers=1))
        self.assertEqual(sorted(n for n in s1 if ".attn." in n),
                         ["layers.0.attn.theta", "layers.0.attn.wk",
                          "layers.0.attn.wo", "layers.0.attn.wq", "layers.0.attn.wv"])
        self.assertEqual(s1["layers.0.attn.theta"], (2, 1))

    def test_init_is_finite_and_trainable(self):
        # SPEC's initialisation itself: the loss is about log(classes) and the
        # gradient is finite and nonzero for the head.
        cfg = model_cfg()
        p = M.random_params(self.rng, cfg)
        tok, labels = model_inputs(self.rng, cfg, 4, 12, [12, 5, 1, 9])
        loss, g = M.model_loss_and_grad(p, cfg, tok, labels)
        self.assertLess(abs(loss - math.log(cfg["classes"])), 0.1)
        for name, a in g.items():
            self.assertTrue(np.isfinite(a).all(), name)
        self.assertGreater(np.abs(g["head.b"]).max(), 0)


if __name__ == "__main__":
    import time
    t0 = time.time()
    SEED = pick_seed("test_reference_grad.py")
    prog = unittest.main(exit=False, verbosity=2 if "-v" in sys.argv else 1)
    res = prog.result
    n = res.testsRun
    bad = len(res.failures) + len(res.errors)
    for kind in sorted(WORST):
        err, case = WORST[kind]
        print("worst %s: %.2e (%s)" % (kind, err, case))
    print("test_reference_grad: %d tests, %d failed (seed %d, %.1f s)"
          % (n, bad, SEED, time.time() - t0))
    sys.exit(1 if bad or not res.wasSuccessful() else 0)
