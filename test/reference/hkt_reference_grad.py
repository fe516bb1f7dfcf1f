"""Independent float64 reference for the backward of one HKT layer (SPEC.md
"Backward").

Written from /work/shared/SPEC.md only, never from the compiler's code.  It
follows SPEC's backward equations one by one on materialised T x T matrices
(dS, the block sums G^(l), dlambda -> dtheta, Drow = dAttn . Attn, dgamma, du,
the downsampling backward from the coarsest level down); it does not use
finite differences (test_reference_grad.py checks it against them).
Standard library + numpy only; run with Debian's /usr/bin/python3.

The loss is sum(y * dy) for a given dy (B x T x D), i.e. dy is the gradient of
the loss with respect to the layer output y.  Gradients are returned under the
names of the inputs: "x" and the parameters of hkt_reference.param_shapes (wq
wk wv wo down_w down_b theta conv_u gamma, those the config has), with the
same shapes, in float64.

Conventions are those of hkt_reference.py (same cfg dicts, same lengths).
"""

import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hkt_reference as R  # noqa: E402


# --------------------------------------------------------------------------
# Forward with everything the backward needs (SPEC sections 1-8)
# --------------------------------------------------------------------------

def forward_cache(x, params, cfg, lengths=None):
    """One HKT layer, keeping the intermediates.  Returns a dict:

      cfg, B, T, D, H, d, L, s, lengths (checked, or None)
      p        : the parameters in float64
      xs       : [X^(0) .. X^(L-1)]               (section 1)
      q, k     : per level, B x H x T_l x d        (section 2, heads split)
      s_l      : per level, S^(l): B x H x T_l x T_l (section 3)
      lam      : lambda, H x L                     (section 4)
      S        : fused scores, B x H x T x T (unmasked)
      allowed  : B x H x T x T bool (section 5; False = -inf)
      A        : softmax probabilities (0 where masked)       (section 6)
      lse      : B x H x T row log-sum-exp of the masked S
      v, vh    : V (B x T x D) and its heads (B x H x T x d)
      attn_h   : A V, B x H x T x d;  attn: B x T x D
      C, beta  : convolution branch and sigmoid(gamma) (section 7; hybrid only)
      O, y     : section 8
    """
    cfg = R.full_cfg(cfg)
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 3:
        raise ValueError("x must be B x T x D, got shape %s" % (x.shape,))
    B, T, D = x.shape
    H, L, s = cfg["heads"], cfg["levels"], cfg["stride"]
    if D % H:
        raise ValueError("dim %d is not a multiple of heads %d" % (D, H))
    d = D // H
    R.check_params(params, cfg, D)
    lengths = R._check_lengths(lengths, B, T)
    p = {name: np.asarray(params[name], dtype=np.float64)
         for name in R.param_shapes(cfg, D)}

    # 1. levels; 2. projections; 3. level scores
    xs = R.level_inputs(x, p, cfg)
    q = [R._split_heads(xl @ p["wq"][l], H) for l, xl in enumerate(xs)]
    k = [R._split_heads(xl @ p["wk"][l], H) for l, xl in enumerate(xs)]
    s_l = [ql @ np.swapaxes(kl, -1, -2) / math.sqrt(d) for ql, kl in zip(q, k)]
    for l, sc in enumerate(s_l):
        assert sc.shape[-1] == R.level_lengths(T, L, s)[l]

    # 4. upsampling and convex fusion
    lam = R.fusion_weights(p["theta"])
    S = np.zeros((B, H, T, T))
    for l in range(L):
        S += lam[:, l][None, :, None, None] * R.upsample(s_l[l], T, s ** l)

    # 5. masks
    i = np.arange(T)[:, None]
    j = np.arange(T)[None, :]
    allowed = np.ones((B, H, T, T), dtype=bool)
    if cfg["causal"]:
        allowed &= (j <= i)[None, None]
    if lengths is not None:
        allowed &= (np.arange(T)[None, :] < lengths[:, None])[:, None, None, :]

    # 6. attention (every row keeps key 0: len >= 1 and 0 <= i)
    Sm = np.where(allowed, S, -np.inf)
    mx = Sm.max(axis=-1, keepdims=True)
    e = np.where(allowed, np.exp(Sm - mx), 0.0)
    z = e.sum(axis=-1, keepdims=True)
    A = e / z
    lse = (mx + np.log(z))[..., 0]
    v = x @ p["wv"]
    vh = R._split_heads(v, H)
    attn_h = A @ vh
    attn = R._merge_heads(attn_h)

    # 7. hybrid head
    C = beta = None
    if cfg["hybrid"]:
        C = R.causal_depthwise_conv(v, p["conv_u"])
        beta = R.sigmoid(p["gamma"])
        bcol = np.repeat(beta, d)
        O = bcol * attn + (1.0 - bcol) * C
    else:
        O = attn

    # 8. output
    y = O @ p["wo"]
    return dict(cfg=cfg, B=B, T=T, D=D, H=H, d=d, L=L, s=s, lengths=lengths,
                p=p, x=x, xs=xs, q=q, k=k, s_l=s_l, lam=lam, S=S,
                allowed=allowed, A=A, lse=lse, v=v, vh=vh, attn_h=attn_h,
                attn=attn, C=C, beta=beta, O=O, y=y)


def block_sums(M, f, n):
    """G[.., I, J] = sum_{i // f = I} sum_{j // f = J} M[.., i, j]: the adjoint
    of nearest-neighbour upsampling by f.  M: B x H x T x T -> B x H x n x n,
    n = ceil(T / f) (rows/columns past T count as zeros)."""
    B, H, T, _ = M.shape
    assert n == -(-T // f)
    P = np.zeros((B, H, n * f, n * f))
    P[:, :, :T, :T] = M
    return P.reshape(B, H, n, f, n, f).sum(axis=(3, 5))


# --------------------------------------------------------------------------
# Backward (SPEC "Backward")
# --------------------------------------------------------------------------

def backward_from_cache(c, dy):
    """SPEC's backward equations given forward_cache's dict and dy (B x T x D).

    Returns (grads, aux): grads = {"x": dX, name: d<name>} for every parameter;
    aux = {"dO", "dAttn", "dS", "Drow", "G"} (G: per level block sums of dS).
    """
    cfg, p = c["cfg"], c["p"]
    B, T, D, H, d, L, s = (c[n] for n in ("B", "T", "D", "H", "d", "L", "s"))
    dy = np.asarray(dy, dtype=np.float64)
    if dy.shape != (B, T, D):
        raise ValueError("dy has shape %s, expected %s" % (dy.shape, (B, T, D)))
    g = {}

    # Output: dO = dY Wo^T, dWo = sum_b O^T dY
    dO = dy @ p["wo"].T
    g["wo"] = np.einsum("btc,bte->ce", c["O"], dy)

    # Hybrid head
    v = c["v"]
    dV = np.zeros((B, T, D))
    if cfg["hybrid"]:
        beta = c["beta"]
        bcol = np.repeat(beta, d)
        dAttn = bcol * dO
        dC = (1.0 - bcol) * dO
        diff = (dO * (c["attn"] - c["C"])).sum(axis=(0, 1))          # per column
        g["gamma"] = beta * (1.0 - beta) * diff.reshape(H, d).sum(axis=1)
        # The size of round-off in those sums: their terms cancel (dO has
        # either sign), and the terms' errors (bf16 attention outputs) have
        # either sign too, so they add in quadrature: sqrt(sum terms^2).
        terms = (dO * (c["attn"] - c["C"])).reshape(B, T, H, d)
        gamma_scale = beta * (1.0 - beta) * np.sqrt(
            (terms ** 2).sum(axis=(0, 1, 3)))
        u = p["conv_u"]
        kc = u.shape[1]
        du = np.zeros_like(u)
        for m in range(kc):
            if m >= T:
                break                       # V[b, i - m] is zero for every i < T
            # du[c, m] = sum_{b,i} dC[b,i,c] V[b,i-m,c]
            # dV[b, i-m, c] += u[c, m] dC[b, i, c]
            du[:, m] = (dC[:, m:, :] * v[:, :T - m, :]).sum(axis=(0, 1))
            dV[:, :T - m, :] += u[:, m] * dC[:, m:, :]
        g["conv_u"] = du
    else:
        dAttn = dO

    # Attention: dV += A^T dAttn, dA = dAttn V^T, Drow = dAttn . Attn,
    # dS = A (dA - Drow), 0 where masked
    A = c["A"]
    dAttn_h = R._split_heads(dAttn, H)
    dV += R._merge_heads(np.swapaxes(A, -1, -2) @ dAttn_h)
    dA = dAttn_h @ np.swapaxes(c["vh"], -1, -2)
    Drow = (dAttn_h * c["attn_h"]).sum(axis=-1)                     # B x H x T
    dS = np.where(c["allowed"], A * (dA - Drow[..., None]), 0.0)

    # Fusion and upsampling: G^(l) block sums, dS^(l) = lambda G^(l),
    # dlambda[l] = sum G^(l) S^(l), dtheta = lambda (dlambda - sum_k lambda dlambda)
    lam = c["lam"]
    lens = R.level_lengths(T, L, s)
    G = [block_sums(dS, s ** l, lens[l]) for l in range(L)]
    dlam = np.stack([(G[l] * c["s_l"][l]).sum(axis=(0, 2, 3)) for l in range(L)],
                    axis=1)                                          # H x L
    g["theta"] = lam * (dlam - (lam * dlam).sum(axis=1, keepdims=True))
    # The same sums over |G^(l) S^(l)|: the size of the terms that dlambda's
    # sums cancel, which is what float32 round-off in dtheta is relative to.
    dlam_abs = np.stack([np.abs(G[l] * c["s_l"][l]).sum(axis=(0, 2, 3))
                         for l in range(L)], axis=1)
    theta_scale = lam * (dlam_abs + (lam * dlam_abs).sum(axis=1, keepdims=True))

    # Level scores and projections
    dxs = [np.zeros_like(xl) for xl in c["xs"]]
    # The same chain over the absolute values of every term: the coarse
    # gradients that the downsampling's sums add up are themselves sums that
    # cancel (each query row's dS sums to zero), so the round-off of ddown_b
    # and ddown_w is relative to these, not to |gradient| (seed 3095440351,
    # dim 1: ddown_b 5e-4 of the sum of its |terms| in float32).
    dS_abs = np.where(c["allowed"], A * (np.abs(dA) + np.abs(Drow[..., None])), 0.0)
    dxs_abs = [np.zeros_like(xl) for xl in c["xs"]]
    dwq = np.zeros_like(p["wq"])
    dwk = np.zeros_like(p["wk"])
    for l in range(L):
        dSl = lam[:, l][None, :, None, None] * G[l]
        dQ = R._merge_heads(dSl @ c["k"][l]) / math.sqrt(d)
        dK = R._merge_heads(np.swapaxes(dSl, -1, -2) @ c["q"][l]) / math.sqrt(d)
        dxs[l] += dQ @ p["wq"][l].T + dK @ p["wk"][l].T
        if l > 0:
            dSl_abs = lam[:, l][None, :, None, None] * block_sums(
                dS_abs, s ** l, lens[l])
            dQ_abs = R._merge_heads(dSl_abs @ np.abs(c["k"][l])) / math.sqrt(d)
            dK_abs = R._merge_heads(
                np.swapaxes(dSl_abs, -1, -2) @ np.abs(c["q"][l])) / math.sqrt(d)
            dxs_abs[l] += (dQ_abs @ np.abs(p["wq"][l]).T +
                           dK_abs @ np.abs(p["wk"][l]).T)
        dwq[l] = np.einsum("btc,bte->ce", c["xs"][l], dQ)
        dwk[l] = np.einsum("btc,bte->ce", c["xs"][l], dK)
    g["wq"], g["wk"] = dwq, dwk
    dxs[0] += dV @ p["wv"].T
    g["wv"] = np.einsum("btc,bte->ce", c["x"], dV)

    # Downsampling, from the coarsest level down
    if L > 1:
        dw, kk = p["down_w"], p["down_w"].shape[2]
        ddw = np.zeros_like(dw)
        ddb = np.zeros_like(p["down_b"])
        down_b_scale = np.zeros_like(p["down_b"])
        down_w_scale = np.zeros_like(dw)
        for l in range(L - 1, 0, -1):
            gl = dxs[l]                                   # complete: level l+1 done
            gl_abs = dxs_abs[l]
            xp = c["xs"][l - 1]
            t = np.arange(gl.shape[1])
            for m in range(kk):
                src = s * t - m
                ok = src >= 0                             # indices >= 0 only
                # src is injective in t for a fixed m, so += by fancy index is exact
                dxs[l - 1][:, src[ok], :] += dw[l - 1, :, m] * gl[:, ok, :]
                if l > 1:
                    dxs_abs[l - 1][:, src[ok], :] += (
                        np.abs(dw[l - 1, :, m]) * gl_abs[:, ok, :])
                ddw[l - 1, :, m] = (gl[:, ok, :] * xp[:, src[ok], :]).sum(axis=(0, 1))
                down_w_scale[l - 1, :, m] = (
                    gl_abs[:, ok, :] * np.abs(xp[:, src[ok], :])).sum(axis=(0, 1))
            ddb[l - 1] = gl.sum(axis=(0, 1))
            # The sum's terms: round-off is relative to them, not to the sum.
            down_b_scale[l - 1] = gl_abs.sum(axis=(0, 1))
        g["down_w"], g["down_b"] = ddw, ddb

    g["x"] = dxs[0]
    aux = dict(dO=dO, dAttn=dAttn, dS=dS, Drow=Drow, G=G,
               theta_scale=theta_scale)
    if L > 1:
        aux["down_b_scale"] = down_b_scale
        aux["down_w_scale"] = down_w_scale
    if cfg["hybrid"]:
        aux["gamma_scale"] = gamma_scale
    return g, aux


def hkt_layer_grad(x, params, cfg, dy, lengths=None):
    """Gradients of sum(hkt_layer(x, params, cfg, lengths) * dy) with respect
    to x and every parameter: {"x": B x T x D, "wq": L x D x D, ...} (float64,
    the shapes of the inputs)."""
    return backward_from_cache(forward_cache(x, params, cfg, lengths), dy)[0]


def hkt_layer_forward_backward(x, params, cfg, dy, lengths=None):
    """(y, grads, lse, Drow) in one pass; see hkt_layer_grad, row_logsumexp,
    row_drow."""
    c = forward_cache(x, params, cfg, lengths)
    g, aux = backward_from_cache(c, dy)
    return c["y"], g, c["lse"], aux["Drow"]


def row_logsumexp(x, params, cfg, lengths=None):
    """lse[b, h, i] = log sum_j exp(S[b, h, i, j]) over the unmasked keys of
    the fused, masked scores (what a fused forward saves for the backward):
    A[b, h, i, j] = exp(S[b, h, i, j] - lse[b, h, i]).  B x H x T."""
    return forward_cache(x, params, cfg, lengths)["lse"]


def row_drow(x, params, cfg, dy, lengths=None):
    """Drow[b, h, i] = sum_j A[i, j] dA[i, j] = dAttn[b, i, h] . Attn[b, i, h]
    with dAttn = beta * (dY Wo^T) (= dY Wo^T without hybrid).  B x H x T."""
    c = forward_cache(x, params, cfg, lengths)
    return backward_from_cache(c, dy)[1]["Drow"]
