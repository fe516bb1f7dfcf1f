"""Self-tests of the HKT float64 reference (no compiler needed).

    /usr/bin/python3 test/reference/test_reference.py [-v]

Checks the reference against SPEC.md's special cases, against a scalar-loop
transcription of the formulas (a second, naive reading of the spec), and the
causality / key-length properties, on random inputs: the seed is
HKT_TEST_SEED if set, else fresh, and is printed first (each test draws from
its own stream, derived from the seed and the test's name).
"""

import math
import os
import sys
import unittest
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hkt_reference as R  # noqa: E402
from hkt_seed import pick_seed  # noqa: E402

SEED = None  # set in __main__


def make(rng, B, T, D, **cfg):
    cfg = R.full_cfg(cfg)
    x = rng.standard_normal((B, T, D)).astype(np.float32).astype(np.float64)
    params = {k: v.astype(np.float64) for k, v in R.random_params(rng, cfg, D).items()}
    return x, params, cfg


def rel(a, b):
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300)


def naive_hkt_layer(x, p, cfg, lengths=None):
    """Scalar loops, transcribed formula by formula from SPEC.md (tiny sizes only)."""
    cfg = R.full_cfg(cfg)
    B, T, D = x.shape
    H, L, s = cfg["heads"], cfg["levels"], cfg["stride"]
    k, kc = cfg["kernel"], cfg["conv_kernel"]
    d = D // H
    # 1. levels
    X = [x]
    Tl = [T]
    for l in range(1, L):
        Tn = math.ceil(Tl[-1] / s)
        Xn = np.zeros((B, Tn, D))
        for b in range(B):
            for t in range(Tn):
                for c in range(D):
                    acc = p["down_b"][l - 1, c]
                    for m in range(k):
                        idx = s * t - m
                        if idx >= 0:
                            acc += p["down_w"][l - 1, c, m] * X[-1][b, idx, c]
                    Xn[b, t, c] = acc
        X.append(Xn)
        Tl.append(Tn)
    # 2-3. projections and level scores
    Sl = []
    for l in range(L):
        Q = X[l] @ p["wq"][l]
        K = X[l] @ p["wk"][l]
        S = np.zeros((B, H, Tl[l], Tl[l]))
        for b in range(B):
            for h in range(H):
                for q in range(Tl[l]):
                    for pp in range(Tl[l]):
                        S[b, h, q, pp] = sum(Q[b, q, h * d + e] * K[b, pp, h * d + e]
                                             for e in range(d)) / math.sqrt(d)
        Sl.append(S)
    V = x @ p["wv"]
    # 4. fusion weights
    lam = np.zeros((H, L))
    for h in range(H):
        z = sum(math.exp(p["theta"][h, l]) for l in range(L))
        for l in range(L):
            lam[h, l] = math.exp(p["theta"][h, l]) / z
    O = np.zeros((B, T, D))
    for b in range(B):
        for h in range(H):
            for i in range(T):
                row = []
                for j in range(T):
                    if cfg["causal"] and j > i:
                        row.append(-math.inf)
                        continue
                    if lengths is not None and j >= lengths[b]:
                        row.append(-math.inf)
                        continue
                    row.append(sum(lam[h, l] * Sl[l][b, h, i // s ** l, j // s ** l]
                                   for l in range(L)))
                mx = max(row)
                w = [math.exp(r - mx) if r != -math.inf else 0.0 for r in row]
                z = sum(w)
                for e in range(d):
                    c = h * d + e
                    attn = sum(w[j] * V[b, j, c] for j in range(T)) / z
                    if cfg["hybrid"]:
                        conv = sum(p["conv_u"][c, m] * V[b, i - m, c]
                                   for m in range(kc) if i - m >= 0)
                        beta = 1.0 / (1.0 + math.exp(-p["gamma"][h]))
                        O[b, i, c] = beta * attn + (1 - beta) * conv
                    else:
                        O[b, i, c] = attn
    return O @ p["wo"]


class ReferenceTests(unittest.TestCase):

    def setUp(self):
        seed = SEED if SEED is not None else pick_seed("test_reference.py")
        name = self.id().rsplit(".", 1)[-1]
        self.rng = np.random.default_rng([seed, zlib.crc32(name.encode())])

    # --- against the naive transcription -------------------------------
    def test_matches_naive(self):
        cases = [
            dict(B=2, T=7, D=4, heads=2, levels=3, stride=2, kernel=3, causal=True),
            dict(B=2, T=7, D=4, heads=2, levels=3, stride=2, kernel=3, causal=False),
            dict(B=1, T=11, D=6, heads=3, levels=3, stride=3, kernel=5,
                 conv_kernel=4, causal=True),
            dict(B=2, T=9, D=2, heads=1, levels=2, stride=2, kernel=1,
                 hybrid=False, causal=False),
            dict(B=1, T=5, D=3, heads=3, levels=4, stride=2, kernel=2,
                 conv_kernel=1, causal=True),
            dict(B=1, T=1, D=1, heads=1, levels=3, causal=True),
            dict(B=2, T=6, D=4, heads=2, levels=1, hybrid=False, causal=True),
        ]
        for c in cases:
            c = dict(c)
            B, T, D = c.pop("B"), c.pop("T"), c.pop("D")
            x, p, cfg = make(self.rng, B, T, D, **c)
            for lengths in (None, self.rng.integers(1, T + 1, size=B)):
                y = R.hkt_layer(x, p, cfg, lengths)
                yn = naive_hkt_layer(x, p, cfg, lengths)
                self.assertEqual(y.shape, (B, T, D))
                self.assertLess(rel(y, yn), 1e-12, (c, lengths))

    # --- SPEC special cases ------------------------------------------------
    def test_l1_equals_mha(self):
        for causal in (False, True):
            for lengths in (None, "random"):
                B, T, D, H = 3, 37, 16, 4
                x, p, cfg = make(self.rng, B, T, D, heads=H, levels=1,
                                 hybrid=False, causal=causal)
                ln = None if lengths is None else self.rng.integers(1, T + 1, size=B)
                y = R.hkt_layer(x, p, cfg, ln)
                ym = R.mha(x, p["wq"][0], p["wk"][0], p["wv"], p["wo"], H, causal, ln)
                self.assertLess(rel(y, ym), 1e-12, (causal, ln))

    def test_mha_textbook(self):
        # mha itself against one-head-at-a-time textbook attention.
        B, T, D, H = 2, 10, 6, 3
        d = D // H
        x = self.rng.standard_normal((B, T, D))
        wq, wk, wv, wo = (self.rng.standard_normal((D, D)) / math.sqrt(D)
                          for _ in range(4))
        ym = R.mha(x, wq, wk, wv, wo, H, True, None)
        O = np.zeros((B, T, D))
        for b in range(B):
            for h in range(H):
                cs = slice(h * d, (h + 1) * d)
                q, k, v = x[b] @ wq[:, cs], x[b] @ wk[:, cs], x[b] @ wv[:, cs]
                a = q @ k.T / math.sqrt(d)
                a[np.triu_indices(T, 1)] = -np.inf
                a = np.exp(a - a.max(1, keepdims=True))
                O[b, :, cs] = (a / a.sum(1, keepdims=True)) @ v
        self.assertLess(rel(ym, O @ wo), 1e-12)

    def test_gamma_to_minus_inf_is_conv(self):
        for causal in (False, True):
            B, T, D, H = 2, 29, 8, 2
            x, p, cfg = make(self.rng, B, T, D, heads=H, causal=causal)
            p["gamma"][:] = -60.0          # beta ~ 1e-26
            ln = self.rng.integers(1, T + 1, size=B)
            y = R.hkt_layer(x, p, cfg, ln)
            yc = R.causal_depthwise_conv(x @ p["wv"], p["conv_u"]) @ p["wo"]
            self.assertLess(rel(y, yc), 1e-12)
            self.assertLess(rel(y, R.conv_only_layer(x, p)), 1e-12)

    def test_causal_depthwise_conv(self):
        B, T, D, kc = 2, 6, 3, 4
        v = self.rng.standard_normal((B, T, D))
        u = self.rng.standard_normal((D, kc))
        c = R.causal_depthwise_conv(v, u)
        for b in range(B):
            for i in range(T):
                for ch in range(D):
                    want = sum(u[ch, m] * v[b, i - m, ch] for m in range(kc) if i >= m)
                    self.assertAlmostEqual(c[b, i, ch], want, places=12)
        # kernel longer than the sequence
        c1 = R.causal_depthwise_conv(v[:, :2], u)
        self.assertLess(rel(c1, c[:, :2]), 1e-15)

    def test_dominant_theta(self):
        for causal in (False, True):
            B, T, D, H, L = 2, 45, 8, 2, 3
            x, p, cfg = make(self.rng, B, T, D, heads=H, levels=L, causal=causal)
            ln = self.rng.integers(1, T + 1, size=B)
            for l in range(L):
                p["theta"][:] = 0.0
                p["theta"][:, l] = 30.0
                y = R.hkt_layer(x, p, cfg, ln)
                ys = R.single_level_layer(x, p, cfg, l, ln)
                self.assertLess(rel(y, ys), 1e-9, (causal, l))
                # and the single-level scores really are the block-constant
                # upsampling of the level-l matrix
                S = R.single_level_scores(x, p, cfg, l)
                f = 2 ** l
                Sl = R.level_scores(x, p, cfg)[l]
                self.assertEqual(Sl.shape[-1], math.ceil(T / f))
                self.assertTrue(np.array_equal(S[:, :, ::f, ::f], Sl))
                # the levels differ, so the check is not vacuous
                if l > 0:
                    self.assertGreater(rel(ys, R.single_level_layer(x, p, cfg, 0, ln)),
                                       1e-3)

    # --- structural properties --------------------------------------------
    def test_causality(self):
        B, T, D, H = 2, 23, 8, 2
        for (L, s, k) in ((3, 2, 3), (3, 3, 5), (4, 2, 2)):
            x, p, cfg = make(self.rng, B, T, D, heads=H, levels=L, stride=s,
                             kernel=k, causal=True)
            y = R.hkt_layer(x, p, cfg)
            for t in (0, 1, 5, 8, 13, T - 1):
                x2 = x.copy()
                x2[:, t, :] += self.rng.standard_normal((B, D)) * 3
                y2 = R.hkt_layer(x2, p, cfg)
                self.assertTrue(np.array_equal(y[:, :t], y2[:, :t]), (L, s, k, t))
                self.assertFalse(np.allclose(y[:, t:], y2[:, t:]))
            # each coarse level on its own is causal too (dominant theta)
            for l in range(1, L):
                p2 = dict(p, theta=np.zeros((H, L)))
                p2["theta"][:, l] = 30.0
                ya = R.single_level_layer(x, p2, cfg, l)
                for t in (3, 7, 16):
                    x2 = x.copy()
                    x2[:, t, :] += 1.0
                    yb = R.single_level_layer(x2, p2, cfg, l)
                    self.assertTrue(np.array_equal(ya[:, :t], yb[:, :t]), (l, t))
        # non-causal attention does see the future (sanity of the test)
        x, p, cfg = make(self.rng, B, T, D, heads=H, causal=False)
        x2 = x.copy()
        x2[:, T - 1] += 1.0
        self.assertFalse(np.allclose(R.hkt_layer(x, p, cfg)[:, 0],
                                     R.hkt_layer(x2, p, cfg)[:, 0]))

    def test_key_lengths(self):
        B, T, D, H = 3, 31, 8, 2
        for causal in (False, True):
            for (L, s, k) in ((3, 2, 3), (3, 3, 5), (1, 2, 3)):
                x, p, cfg = make(self.rng, B, T, D, heads=H, levels=L, stride=s,
                                 kernel=k, causal=causal)
                ln = np.array([1, 17, T])
                y = R.hkt_layer(x, p, cfg, ln)
                x2 = x.copy()
                for b in range(B):
                    x2[b, ln[b]:] = self.rng.standard_normal((T - ln[b], D)) * 5
                y2 = R.hkt_layer(x2, p, cfg, ln)
                for b in range(B):
                    self.assertTrue(np.array_equal(y[b, :ln[b]], y2[b, :ln[b]]),
                                    (causal, L, b))
                # full lengths == no lengths
                self.assertTrue(np.array_equal(R.hkt_layer(x, p, cfg, [T] * B),
                                               R.hkt_layer(x, p, cfg)))
                if not causal:
                    # lengths actually mask something
                    self.assertFalse(np.allclose(y[1], R.hkt_layer(x, p, cfg)[1]))

    def test_edge_shapes(self):
        # T = 1, H = 1, d = 1, T not a multiple of s^(L-1), T_l = 1, stride 3 k 5.
        cases = [
            (1, 1, 1, dict(heads=1)),
            (2, 1, 4, dict(heads=4, causal=True)),
            (1, 13, 3, dict(heads=3, stride=3, kernel=5)),
            (2, 10, 2, dict(heads=2, levels=5, causal=True)),       # T_4 = 1
            (1, 2, 2, dict(heads=1, levels=4, stride=3, kernel=5)),
            (1, 1, 2, dict(heads=2, levels=1, hybrid=False)),
        ]
        for B, T, D, c in cases:
            x, p, cfg = make(self.rng, B, T, D, **c)
            y = R.hkt_layer(x, p, cfg, self.rng.integers(1, T + 1, size=B))
            self.assertEqual(y.shape, (B, T, D))
            self.assertTrue(np.isfinite(y).all(), (B, T, D, c))
        self.assertEqual(R.level_lengths(13, 4, 3), [13, 5, 2, 1])
        self.assertEqual(R.level_lengths(10, 5, 2), [10, 5, 3, 2, 1])
        # T = 1: every level has one token, softmax over one key -> Attn = V.
        x, p, cfg = make(self.rng, 2, 1, 4, heads=2, causal=False)
        v = x @ p["wv"]
        beta = np.repeat(R.sigmoid(p["gamma"]), 2)
        want = (beta * v + (1 - beta) * p["conv_u"][:, 0] * v) @ p["wo"]
        self.assertLess(rel(R.hkt_layer(x, p, cfg), want), 1e-12)

    def test_downsample_formula(self):
        # X^(1)[t] = db + sum_m dw[m] X[s t - m]; identity-like init subsamples.
        x = self.rng.standard_normal((1, 9, 2))
        w = np.zeros((2, 3))
        w[:, 0] = 1.0
        out = R.causal_downsample(x, w, np.zeros(2), 2)
        self.assertTrue(np.array_equal(out, x[:, ::2]))
        w = np.zeros((2, 3))
        w[:, 2] = 1.0
        out = R.causal_downsample(x, w, np.ones(2), 2)
        want = np.ones((1, 5, 2))
        want[:, 1:] += x[:, 0:7:2]
        self.assertTrue(np.array_equal(out, want))

    def test_long_sequence(self):
        # T = 1024 is handled (the integration tests compare with the
        # reference up to T = 1000 at D = 512), and a prefix of the sequence
        # gives the same rows as the whole one (causal, key lengths clipped).
        B, T, D, H = 2, 1024, 32, 4
        x, p, cfg = make(self.rng, B, T, D, heads=H, causal=True)
        ln = self.rng.integers(1, T + 1, size=B)
        y = R.hkt_layer(x, p, cfg, ln)
        self.assertEqual(y.shape, (B, T, D))
        self.assertTrue(np.isfinite(y).all())
        t = 333
        yp = R.hkt_layer(x[:, :t], p, cfg, np.minimum(ln, t))
        self.assertLess(rel(yp, y[:, :t]), 1e-12)

    def test_param_validation(self):
        x, p, cfg = make(self.rng, 1, 4, 4, heads=2)
        bad = dict(p, wq=p["wq"][:2])
        with self.assertRaises(ValueError):
            R.hkt_layer(x, bad, cfg)
        with self.assertRaises(ValueError):
            R.hkt_layer(x, p, cfg, [5])
        with self.assertRaises(ValueError):
            R.hkt_layer(x, p, cfg, [0])


if __name__ == "__main__":
    SEED = pick_seed("test_reference.py")
    prog = unittest.main(exit=False, verbosity=2 if "-v" in sys.argv else 1)
    res = prog.result
    n = res.testsRun
    bad = len(res.failures) + len(res.errors)
    print("test_reference: %d tests, %d failed (seed %d)" % (n, bad, SEED))
    sys.exit(1 if bad or not res.wasSuccessful() else 0)
