"""Independent float64 reference for one HKT layer (SPEC.md sections 1-8).

Written from /work/shared/SPEC.md only, never from the compiler's code, so that
the test suite compares two independent readings of the specification.  Standard
library + numpy only; run with Debian's /usr/bin/python3.

Conventions (SPEC.md "Notation", section 2):
  x        : B x T x D
  wq, wk   : L x D x D      (input-major: Q = X W)
  wv, wo   : D x D
  down_w   : (L-1) x D x k  (absent when L == 1)
  down_b   : (L-1) x D
  theta    : H x L
  conv_u   : D x kc         (only when hybrid)
  gamma    : H              (only when hybrid)
  lengths  : B key lengths, 1 <= len[b] <= T (None = all T)
Head h owns columns [h*d, (h+1)*d) of every D-wide tensor.

Everything is computed in float64 whatever the input dtype.
"""

import math

import numpy as np

# Defaults of SPEC.md's Notation table and layer-config paragraph.
CFG_DEFAULTS = {
    "levels": 3,
    "stride": 2,
    "kernel": 3,
    "conv_kernel": 3,
    "hybrid": True,
    "causal": False,
}


def full_cfg(cfg):
    """The layer config with SPEC defaults filled in (heads is required)."""
    out = dict(CFG_DEFAULTS)
    out.update(cfg)
    if "heads" not in out:
        raise ValueError("layer config needs 'heads'")
    return out


def level_lengths(T, levels, stride):
    """T_0 = T, T_l = ceil(T_{l-1} / s)."""
    lens = [T]
    for _ in range(1, levels):
        lens.append(-(-lens[-1] // stride))
    return lens


# --------------------------------------------------------------------------
# Section 1: causal strided depthwise downsampling
# --------------------------------------------------------------------------

def causal_downsample(xp, w, b, stride):
    """One level of SPEC section 1.

    out[b, t, c] = b[c] + sum_m w[c, m] * xp[b, s*t - m, c], negative index -> 0.
    xp: B x Tp x D, w: D x k, b: D.  Returns B x ceil(Tp/s) x D.
    """
    xp = np.asarray(xp, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    B, Tp, D = xp.shape
    Tn = -(-Tp // stride)
    out = np.broadcast_to(b, (B, Tn, D)).copy()
    t = np.arange(Tn)
    for m in range(w.shape[1]):
        src = stride * t - m
        ok = src >= 0                      # causal left padding: zero term
        out[:, ok, :] += w[:, m] * xp[:, src[ok], :]
    return out


def level_inputs(x, params, cfg):
    """[X^(0), ..., X^(L-1)]."""
    cfg = full_cfg(cfg)
    L, s = cfg["levels"], cfg["stride"]
    xs = [np.asarray(x, dtype=np.float64)]
    for l in range(1, L):
        xs.append(causal_downsample(xs[-1], params["down_w"][l - 1],
                                    params["down_b"][l - 1], s))
    return xs


# --------------------------------------------------------------------------
# Sections 2-4: projections, level scores, upsampling and fusion
# --------------------------------------------------------------------------

def _split_heads(z, heads):
    """B x T x D -> B x H x T x d (head h = columns h*d .. (h+1)*d - 1)."""
    B, T, D = z.shape
    d = D // heads
    return np.stack([z[:, :, h * d:(h + 1) * d] for h in range(heads)], axis=1)


def _merge_heads(z):
    """B x H x T x d -> B x T x D."""
    return np.concatenate([z[:, h] for h in range(z.shape[1])], axis=-1)


def level_scores(x, params, cfg):
    """[S^(0), ..., S^(L-1)], S^(l): B x H x T_l x T_l (section 3)."""
    cfg = full_cfg(cfg)
    H, L = cfg["heads"], cfg["levels"]
    D = np.asarray(x).shape[-1]
    if D % H:
        raise ValueError("dim %d is not a multiple of heads %d" % (D, H))
    d = D // H
    wq = np.asarray(params["wq"], dtype=np.float64)
    wk = np.asarray(params["wk"], dtype=np.float64)
    scores = []
    for l, xl in enumerate(level_inputs(x, params, cfg)):
        q = _split_heads(xl @ wq[l], H)
        k = _split_heads(xl @ wk[l], H)
        scores.append((q @ np.swapaxes(k, -1, -2)) / math.sqrt(d))
    return scores


def upsample(s_l, T, factor):
    """Nearest-neighbour upsampling of B x H x T_l x T_l to B x H x T x T:
    out[.., i, j] = s_l[.., floor(i/factor), floor(j/factor)]."""
    if factor == 1:
        return s_l
    up = np.repeat(np.repeat(s_l, factor, axis=2), factor, axis=3)
    return up[:, :, :T, :T]   # ceil(T/f)*f >= T; the tail rows/cols are dropped


def fusion_weights(theta):
    """lambda[h, :] = softmax(theta[h, :])."""
    theta = np.asarray(theta, dtype=np.float64)
    e = np.exp(theta - theta.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def fused_scores(x, params, cfg):
    """S[b, h, i, j] = sum_l lambda[h, l] * S^(l)[b, h, i // s^l, j // s^l].

    Same maths as summing lambda * upsample(S^(l)), but accumulated in place
    through a block view (no T x T temporaries per level), which keeps T = 1024
    fast: on a grid padded to Tp = ceil(T / s^(L-1)) * s^(L-1), every level's
    factor f = s^l divides Tp, so S viewed as (B, H, Tp/f, f, Tp/f, f) gets the
    (zero-padded) level matrix broadcast over the two f axes.
    """
    cfg = full_cfg(cfg)
    s, L = cfg["stride"], cfg["levels"]
    B, T = np.asarray(x).shape[:2]
    H = cfg["heads"]
    lam = fusion_weights(params["theta"])
    fmax = s ** (L - 1)
    Tp = -(-T // fmax) * fmax
    S = np.zeros((B, H, Tp, Tp))
    for l, s_l in enumerate(level_scores(x, params, cfg)):
        f = s ** l
        n = Tp // f                       # >= T_l = ceil(T / f)
        padded = np.zeros((B, H, n, n))
        Tl = s_l.shape[-1]
        padded[:, :, :Tl, :Tl] = lam[:, l][None, :, None, None] * s_l
        S.reshape(B, H, n, f, n, f)[...] += padded[:, :, :, None, :, None]
    return S[:, :, :T, :T]


def single_level_scores(x, params, cfg, level):
    """The level-`level` scores alone, upsampled to T x T (what the fused scores
    become when theta[:, level] dominates)."""
    cfg = full_cfg(cfg)
    T = np.asarray(x).shape[1]
    s_l = level_scores(x, params, cfg)[level]
    return upsample(s_l, T, cfg["stride"] ** level)


# --------------------------------------------------------------------------
# Sections 5-8: masks, attention, hybrid, output
# --------------------------------------------------------------------------

def apply_masks(S, causal, lengths):
    """Section 5: -inf where j > i (causal) and where j >= len[b]."""
    S = np.asarray(S, dtype=np.float64)   # np.where below never writes into it
    T = S.shape[-1]
    i = np.arange(T)[:, None]
    j = np.arange(T)[None, :]
    if causal:
        S = np.where((j > i)[None, None], -np.inf, S)
    if lengths is not None:
        ln = np.asarray(lengths).reshape(-1)
        keymask = np.arange(T)[None, :] >= ln[:, None]          # B x T
        S = np.where(keymask[:, None, None, :], -np.inf, S)
    return S


def softmax_last(S):
    m = S.max(axis=-1, keepdims=True)
    e = np.exp(S - m)
    return e / e.sum(axis=-1, keepdims=True)


def causal_depthwise_conv(v, u):
    """C[b, i, c] = sum_{m=0..kc-1} u[c, m] * v[b, i - m, c] (negative i-m -> 0).
    v: B x T x D, u: D x kc."""
    v = np.asarray(v, dtype=np.float64)
    u = np.asarray(u, dtype=np.float64)
    B, T, D = v.shape
    out = np.zeros_like(v)
    for m in range(u.shape[1]):
        if m >= T:
            break
        out[:, m:, :] += u[:, m] * v[:, :T - m, :]
    return out


def sigmoid(z):
    z = np.asarray(z, dtype=np.float64)
    return np.where(z >= 0, 1.0 / (1.0 + np.exp(-np.abs(z))),
                    np.exp(-np.abs(z)) / (1.0 + np.exp(-np.abs(z))))


def _check_lengths(lengths, B, T):
    if lengths is None:
        return None
    ln = np.asarray(lengths).reshape(-1).astype(np.int64)
    if ln.shape != (B,):
        raise ValueError("lengths must have %d entries, got %s" % (B, ln.shape))
    if (ln < 1).any() or (ln > T).any():
        raise ValueError("lengths must lie in [1, %d]: %s" % (T, ln))
    return ln


def layer_from_scores(x, S, params, cfg, lengths=None):
    """Sections 5-8 given the fused (unmasked) scores S: B x H x T x T."""
    cfg = full_cfg(cfg)
    H = cfg["heads"]
    x = np.asarray(x, dtype=np.float64)
    B, T, D = x.shape
    lengths = _check_lengths(lengths, B, T)
    v = x @ np.asarray(params["wv"], dtype=np.float64)
    A = softmax_last(apply_masks(S, cfg["causal"], lengths))
    attn = _merge_heads(A @ _split_heads(v, H))
    if cfg["hybrid"]:
        d = D // H
        C = causal_depthwise_conv(v, params["conv_u"])
        beta = np.repeat(sigmoid(params["gamma"]), d)            # per column
        O = beta * attn + (1.0 - beta) * C
    else:
        O = attn
    return O @ np.asarray(params["wo"], dtype=np.float64)


def hkt_layer(x, params, cfg, lengths=None):
    """One HKT layer, SPEC sections 1-8.  x: B x T x D -> y: B x T x D (float64)."""
    cfg = full_cfg(cfg)
    check_params(params, cfg, np.asarray(x).shape[-1])
    S = fused_scores(x, params, cfg)
    return layer_from_scores(x, S, params, cfg, lengths)


def single_level_layer(x, params, cfg, level, lengths=None):
    """The layer with the fused scores replaced by the level-`level` scores alone,
    upsampled (SPEC special case: one theta level dominating)."""
    cfg = full_cfg(cfg)
    check_params(params, cfg, np.asarray(x).shape[-1])
    S = single_level_scores(x, params, cfg, level)
    return layer_from_scores(x, S, params, cfg, lengths)


def conv_only_layer(x, params):
    """SPEC special case beta = 0: Y = CausalDepthwiseConv_u(X Wv) Wo."""
    x = np.asarray(x, dtype=np.float64)
    v = x @ np.asarray(params["wv"], dtype=np.float64)
    return causal_depthwise_conv(v, params["conv_u"]) @ np.asarray(
        params["wo"], dtype=np.float64)


def param_shapes(cfg, D):
    """Expected {name: shape} for one layer (SPEC parameter table)."""
    cfg = full_cfg(cfg)
    H, L, k, kc = cfg["heads"], cfg["levels"], cfg["kernel"], cfg["conv_kernel"]
    shapes = {"wq": (L, D, D), "wk": (L, D, D), "wv": (D, D), "wo": (D, D)}
    if L > 1:
        shapes["down_w"] = (L - 1, D, k)
        shapes["down_b"] = (L - 1, D)
    shapes["theta"] = (H, L)
    if cfg["hybrid"]:
        shapes["conv_u"] = (D, kc)
        shapes["gamma"] = (H,)
    return shapes


def check_params(params, cfg, D):
    want = param_shapes(cfg, D)
    for name, shape in want.items():
        if name not in params:
            raise ValueError("missing parameter %r" % name)
        got = tuple(np.shape(params[name]))
        if got != shape:
            raise ValueError("parameter %r has shape %s, expected %s"
                             % (name, got, shape))


# --------------------------------------------------------------------------
# Plain multi-head attention, written separately (the MHA baseline)
# --------------------------------------------------------------------------

def mha(x, wq, wk, wv, wo, heads, causal=False, lengths=None):
    """Standard multi-head attention (no biases, input-major weights).

    x: B x T x D; wq, wk, wv, wo: D x D.  Deliberately reuses no helper of
    hkt_layer above: reshape-based heads, its own masking and
    softmax, so that the L=1 special case compares two separate codes.
    """
    x = np.asarray(x, dtype=np.float64)
    B, T, D = x.shape
    d = D // heads
    q = (x @ np.asarray(wq, np.float64)).reshape(B, T, heads, d).transpose(0, 2, 1, 3)
    k = (x @ np.asarray(wk, np.float64)).reshape(B, T, heads, d).transpose(0, 2, 1, 3)
    v = (x @ np.asarray(wv, np.float64)).reshape(B, T, heads, d).transpose(0, 2, 1, 3)
    logits = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d)        # B x H x T x T
    allowed = np.ones((B, 1, T, T), dtype=bool)
    if causal:
        allowed &= np.tril(np.ones((T, T), dtype=bool))[None, None]
    if lengths is not None:
        ln = np.asarray(lengths).reshape(B, 1, 1, 1)
        allowed &= np.arange(T).reshape(1, 1, 1, T) < ln
    logits = np.where(allowed, logits, -np.inf)
    logits = logits - logits.max(axis=-1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(axis=-1, keepdims=True)
    o = (p @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return o @ np.asarray(wo, np.float64)


# --------------------------------------------------------------------------
# Random parameters (used by the driver and the self-tests)
# --------------------------------------------------------------------------

def random_params(rng, cfg, D, dtype=np.float32):
    """Random layer parameters, rounded to `dtype` (float32 by default):
    weight matrices ~ N(0, 1/sqrt(D)) (std), down_w/down_b/conv_u ~ N(0, 0.5),
    theta ~ N(0, 1), gamma ~ N(0, 1)."""
    cfg = full_cfg(cfg)
    shapes = param_shapes(cfg, D)
    wstd = 1.0 / math.sqrt(D)
    std = {"wq": wstd, "wk": wstd, "wv": wstd, "wo": wstd,
           "down_w": 0.5, "down_b": 0.5, "conv_u": 0.5,
           "theta": 1.0, "gamma": 1.0}
    return {name: (rng.standard_normal(shape) * std[name]).astype(dtype)
            for name, shape in shapes.items()}
