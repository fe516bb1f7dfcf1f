"""Independent float64 reference for SPEC.md's classifier model ("The classifier
model"): config parsing, parameter shapes and initialisation, forward, loss and
the analytic backward of the mean loss.

Written from /work/shared/SPEC.md only, never from the compiler's code.
Standard library + numpy only; run with Debian's /usr/bin/python3.  The HKT
layers are hkt_reference.hkt_layer (forward) and
hkt_reference_grad.hkt_layer_grad (backward).

    tokens (B x T int, 0 = padding) -> x = embed[tokens] + pos[:T]
    repeat N times (pre-norm):
        x += HKT(LN1(x))                       (key lengths = len)
        x += GELU_tanh(LN2(x) W1 + b1) W2 + b2
    LN_f, mean over valid positions j < len[b], logits = x Wc + bc,
    loss = mean over the batch of the cross-entropy of logits vs labels.

len[b] = number of tokens before the first padding token (a row with len 0 is
an input error).  Tokens after the first padding token may be anything in
[0, vocab): they are embedded and computed like every position but, by the key
lengths, the causal downsampling / convolution and the pooling, never reach the
loss.  Only the first max_len positions exist (pos is max_len x D): T > max_len
is an input error.  LayerNorm: (x - mean) / sqrt(var + 1e-5) * w + b with the
biased (population) variance over the last axis.  GELU: the tanh
approximation 0.5 z (1 + tanh(sqrt(2/pi) (z + 0.044715 z^3))).

Everything is computed in float64 whatever the parameters' dtype.
"""

import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hkt_reference as R  # noqa: E402
import hkt_reference_grad as RG  # noqa: E402

LN_EPS = 1e-5

# SPEC "Model config": all keys required.
INT_KEYS = ("vocab", "max_len", "dim", "heads", "layers", "levels", "stride",
            "kernel", "conv_kernel", "ffn", "classes")
BOOL_KEYS = ("hybrid", "causal")
MODEL_KEYS = ("vocab", "max_len", "dim", "heads", "layers", "levels", "stride",
              "kernel", "conv_kernel", "hybrid", "causal", "ffn", "classes")
LAYER_PARAMS = ("wq", "wk", "wv", "wo", "down_w", "down_b", "theta", "conv_u",
                "gamma")


# --------------------------------------------------------------------------
# Config
# --------------------------------------------------------------------------

def parse_model_config(src):
    """The model config (SPEC "Model config") from a dict, a JSON object text
    or the name of a JSON file.  Every key is required; unknown keys, non-integer
    / non-boolean values, integers < 1 (vocab < 2: token 0 is padding, so a
    vocabulary of one token has no valid row) and dim not divisible by heads
    raise ValueError naming the key.  Returns a new dict."""
    if isinstance(src, dict):
        cfg = dict(src)
    elif isinstance(src, str):
        text = src
        if not src.lstrip().startswith("{"):
            if not os.path.exists(src):
                raise ValueError("model config: %r is neither a JSON object nor a "
                                 "file" % src)
            with open(src) as f:
                text = f.read()
        try:
            cfg = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError("model config: bad JSON: %s" % e)
        if not isinstance(cfg, dict):
            raise ValueError("model config: expected a JSON object")
    else:
        raise ValueError("model config: expected a dict, JSON text or a file name")
    for key in MODEL_KEYS:
        if key not in cfg:
            raise ValueError("model config: missing required key %r" % key)
    unknown = sorted(set(cfg) - set(MODEL_KEYS))
    if unknown:
        raise ValueError("model config: unknown key(s) %s"
                         % ", ".join(repr(k) for k in unknown))
    for key in INT_KEYS:
        val = cfg[key]
        if not isinstance(val, (int, np.integer)) or isinstance(val, bool):
            raise ValueError("model config: %r must be an integer, got %r"
                             % (key, val))
        cfg[key] = int(val)
        lo = 2 if key == "vocab" else 1
        if cfg[key] < lo:
            raise ValueError("model config: %r must be >= %d, got %d"
                             % (key, lo, cfg[key]))
    for key in BOOL_KEYS:
        if not isinstance(cfg[key], (bool, np.bool_)):
            raise ValueError("model config: %r must be true or false, got %r"
                             % (key, cfg[key]))
        cfg[key] = bool(cfg[key])
    if cfg["dim"] % cfg["heads"]:
        raise ValueError("model config: 'dim' %d is not a multiple of 'heads' %d"
                         % (cfg["dim"], cfg["heads"]))
    return cfg


def layer_cfg(cfg):
    """The hkt_reference layer config of the model's HKT layers."""
    return R.full_cfg({k: cfg[k] for k in ("heads", "levels", "stride", "kernel",
                                            "conv_kernel", "hybrid", "causal")})


# --------------------------------------------------------------------------
# Parameters
# --------------------------------------------------------------------------

def param_shapes(cfg):
    """{name: shape} in SPEC's table order (model parameter names)."""
    cfg = parse_model_config(cfg)
    V, T, D, F, C = (cfg[k] for k in ("vocab", "max_len", "dim", "ffn", "classes"))
    attn = R.param_shapes(layer_cfg(cfg), D)
    shapes = {"embed": (V, D), "pos": (T, D)}
    for i in range(cfg["layers"]):
        pre = "layers.%d." % i
        shapes[pre + "ln1.weight"] = (D,)
        shapes[pre + "ln1.bias"] = (D,)
        for name in LAYER_PARAMS:
            if name in attn:
                shapes[pre + "attn." + name] = attn[name]
        shapes[pre + "ln2.weight"] = (D,)
        shapes[pre + "ln2.bias"] = (D,)
        shapes[pre + "ffn.w1"] = (D, F)
        shapes[pre + "ffn.b1"] = (F,)
        shapes[pre + "ffn.w2"] = (F, D)
        shapes[pre + "ffn.b2"] = (D,)
    shapes["ln_f.weight"] = (D,)
    shapes["ln_f.bias"] = (D,)
    shapes["head.w"] = (D, C)
    shapes["head.b"] = (C,)
    return shapes


def _init_kind(name):
    """SPEC "Initialisation for training": 'normal' (std 0.02), 'zeros',
    'ones', 'down_w' (tap 0 = 1, others 0), 'gamma' (2)."""
    leaf = name.rsplit(".", 1)[-1]
    if name.endswith("ln1.weight") or name.endswith("ln2.weight") or \
            name == "ln_f.weight":
        return "ones"
    if leaf == "bias" or leaf in ("b1", "b2", "down_b", "theta") or name == "head.b":
        return "zeros"
    if leaf == "down_w":
        return "down_w"
    if leaf == "gamma":
        return "gamma"
    return "normal"     # embed, pos, conv_u, wq wk wv wo, w1 w2, head.w


def random_params(rng, cfg, dtype=np.float32):
    """Parameters initialised by SPEC's rules, drawn from numpy Generator rng
    (normal std 0.02 for embed, pos, conv_u and every weight matrix; biases 0;
    LayerNorm weights 1; down_w[..., 0] = 1, other taps 0; theta 0; gamma 2),
    rounded to dtype (float32 by default, as the weight files are)."""
    out = {}
    for name, shape in param_shapes(cfg).items():
        kind = _init_kind(name)
        if kind == "normal":
            a = rng.standard_normal(shape) * 0.02
        elif kind == "zeros":
            a = np.zeros(shape)
        elif kind == "ones":
            a = np.ones(shape)
        elif kind == "down_w":
            a = np.zeros(shape)
            a[..., 0] = 1.0
        else:
            a = np.full(shape, 2.0)
        out[name] = a.astype(dtype)
    return out


def check_model_params(params, cfg):
    """ValueError for a missing, unexpected or wrongly shaped parameter."""
    want = param_shapes(cfg)
    for name, shape in want.items():
        if name not in params:
            raise ValueError("missing parameter %r" % name)
        got = tuple(np.shape(params[name]))
        if got != shape:
            raise ValueError("parameter %r has shape %s, expected %s"
                             % (name, got, shape))
    extra = sorted(set(params) - set(want))
    if extra:
        raise ValueError("unexpected parameter(s) %s" % ", ".join(extra))


# --------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------

def token_lengths(tokens, cfg):
    """Checks tokens (B x T integers in [0, vocab), 1 <= T <= max_len) and
    returns len[b] = the number of tokens before the first padding token (0);
    a row with len 0 raises ValueError."""
    cfg = parse_model_config(cfg)
    tok = np.asarray(tokens)
    if tok.ndim != 2:
        raise ValueError("tokens must be B x T, got shape %s" % (tok.shape,))
    if not np.issubdtype(tok.dtype, np.integer):
        raise ValueError("tokens must be integers, got dtype %s" % tok.dtype)
    B, T = tok.shape
    if B < 1 or T < 1:
        raise ValueError("tokens must be non-empty, got shape %s" % (tok.shape,))
    if T > cfg["max_len"]:
        raise ValueError("sequence length %d exceeds max_len %d" % (T, cfg["max_len"]))
    if (tok < 0).any() or (tok >= cfg["vocab"]).any():
        raise ValueError("tokens must lie in [0, %d) (vocab), got [%d, %d]"
                         % (cfg["vocab"], tok.min(), tok.max()))
    pad = tok == 0
    lengths = np.where(pad.any(axis=1), pad.argmax(axis=1), T).astype(np.int64)
    if (lengths == 0).any():
        raise ValueError("row(s) %s start with padding (len 0)"
                         % np.nonzero(lengths == 0)[0].tolist())
    return lengths


def _check_labels(labels, cfg, B):
    lab = np.asarray(labels)
    if lab.shape != (B,):
        raise ValueError("labels must have shape (%d,), got %s" % (B, lab.shape))
    if not np.issubdtype(lab.dtype, np.integer):
        raise ValueError("labels must be integers, got dtype %s" % lab.dtype)
    if (lab < 0).any() or (lab >= cfg["classes"]).any():
        raise ValueError("labels must lie in [0, %d) (classes), got %s"
                         % (cfg["classes"], lab.tolist()))
    return lab.astype(np.int64)


# --------------------------------------------------------------------------
# Building blocks
# --------------------------------------------------------------------------

def layer_norm(x, w, b):
    """(x - mean) / sqrt(var + eps) * w + b over the last axis (biased var).
    Returns (y, (xhat, rstd)) for the backward."""
    mu = x.mean(axis=-1, keepdims=True)
    xc = x - mu
    var = (xc * xc).mean(axis=-1, keepdims=True)
    rstd = 1.0 / np.sqrt(var + LN_EPS)
    xhat = xc * rstd
    return xhat * w + b, (xhat, rstd)


def layer_norm_backward(dy, w, cache):
    """(dx, dw, db) of layer_norm; dw and db summed over the leading axes."""
    xhat, rstd = cache
    dw = (dy * xhat).reshape(-1, xhat.shape[-1]).sum(axis=0)
    db = dy.reshape(-1, dy.shape[-1]).sum(axis=0)
    g = dy * w
    dx = rstd * (g - g.mean(axis=-1, keepdims=True)
                 - xhat * (g * xhat).mean(axis=-1, keepdims=True))
    return dx, dw, db


_GELU_C = math.sqrt(2.0 / math.pi)


def gelu_tanh(z):
    return 0.5 * z * (1.0 + np.tanh(_GELU_C * (z + 0.044715 * z ** 3)))


def gelu_tanh_grad(z):
    t = np.tanh(_GELU_C * (z + 0.044715 * z ** 3))
    return 0.5 * (1.0 + t) + 0.5 * z * (1.0 - t * t) * _GELU_C * (
        1.0 + 3 * 0.044715 * z * z)


def _f64(params):
    return {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}


def _attn_params(p, i):
    pre = "layers.%d.attn." % i
    return {n[len(pre):]: a for n, a in p.items() if n.startswith(pre)}


# --------------------------------------------------------------------------
# Forward, loss, backward
# --------------------------------------------------------------------------

def _forward(params, cfg, tokens, keep):
    cfg = parse_model_config(cfg)
    check_model_params(params, cfg)
    lengths = token_lengths(tokens, cfg)
    tok = np.asarray(tokens).astype(np.int64)
    B, T = tok.shape
    p = _f64(params)
    lcfg = layer_cfg(cfg)
    x = p["embed"][tok] + p["pos"][:T][None]
    caches = []
    for i in range(cfg["layers"]):
        pre = "layers.%d." % i
        a1, ln1 = layer_norm(x, p[pre + "ln1.weight"], p[pre + "ln1.bias"])
        ap = _attn_params(p, i)
        if keep:
            hc = RG.forward_cache(a1, ap, lcfg, lengths)
            h = x + hc["y"]
        else:
            hc = None
            h = x + R.hkt_layer(a1, ap, lcfg, lengths)
        a2, ln2 = layer_norm(h, p[pre + "ln2.weight"], p[pre + "ln2.bias"])
        z1 = a2 @ p[pre + "ffn.w1"] + p[pre + "ffn.b1"]
        g1 = gelu_tanh(z1)
        x_next = h + g1 @ p[pre + "ffn.w2"] + p[pre + "ffn.b2"]
        if keep:
            caches.append(dict(ln1=ln1, hc=hc, ln2=ln2, a2=a2, z1=z1, g1=g1))
        x = x_next
    xf, lnf = layer_norm(x, p["ln_f.weight"], p["ln_f.bias"])
    valid = (np.arange(T)[None, :] < lengths[:, None]).astype(np.float64)  # B x T
    pooled = (xf * valid[..., None]).sum(axis=1) / lengths[:, None]
    logits = pooled @ p["head.w"] + p["head.b"]
    state = dict(cfg=cfg, p=p, tok=tok, lengths=lengths, caches=caches, lnf=lnf,
                 valid=valid, pooled=pooled, B=B, T=T)
    return logits, state


def model_forward(params, cfg, tokens):
    """Logits, B x classes (float64)."""
    return _forward(params, cfg, tokens, keep=False)[0]


def cross_entropy(logits, labels):
    """Mean over the batch of logsumexp(logits[b]) - logits[b, labels[b]]."""
    m = logits.max(axis=1, keepdims=True)
    lse = (m + np.log(np.exp(logits - m).sum(axis=1, keepdims=True)))[:, 0]
    return float((lse - logits[np.arange(len(labels)), labels]).mean())


def model_loss(params, cfg, tokens, labels):
    """The mean cross-entropy loss (a float)."""
    cfg = parse_model_config(cfg)
    logits = model_forward(params, cfg, tokens)
    return cross_entropy(logits, _check_labels(labels, cfg, logits.shape[0]))


def model_loss_and_grad(params, cfg, tokens, labels, return_input_grad=False,
                        scales=None):
    """(loss, grads): grads[name] = d loss / d params[name] for every parameter
    (float64, same shapes).  With return_input_grad, also returns the gradient
    with respect to the embedded input x = embed[tokens] + pos[:T] (B x T x D)
    as a third value.  A dict `scales` receives, for each layer's attention
    gradients that are cancelling sums (theta, down_b, down_w, gamma), the scale of
    their terms (hkt_reference_grad's aux: theta_scale, down_b_scale,
    down_w_scale, gamma_scale), under the parameter's name."""
    cfg = parse_model_config(cfg)
    logits, st = _forward(params, cfg, tokens, keep=True)
    p, lengths, B, T = st["p"], st["lengths"], st["B"], st["T"]
    labels = _check_labels(labels, cfg, B)
    loss = cross_entropy(logits, labels)
    g = {}

    # cross-entropy averaged over the batch
    m = logits.max(axis=1, keepdims=True)
    prob = np.exp(logits - m)
    prob /= prob.sum(axis=1, keepdims=True)
    dlogits = prob
    dlogits[np.arange(B), labels] -= 1.0
    dlogits /= B
    g["head.w"] = st["pooled"].T @ dlogits
    g["head.b"] = dlogits.sum(axis=0)
    dpooled = dlogits @ p["head.w"].T
    # mean over valid positions
    dxf = st["valid"][..., None] * (dpooled / lengths[:, None])[:, None, :]
    dx, g["ln_f.weight"], g["ln_f.bias"] = layer_norm_backward(
        dxf, p["ln_f.weight"], st["lnf"])

    for i in range(cfg["layers"] - 1, -1, -1):
        pre = "layers.%d." % i
        c = st["caches"][i]
        # x_next = h + GELU(LN2(h) W1 + b1) W2 + b2
        g[pre + "ffn.w2"] = np.einsum("btf,btd->fd", c["g1"], dx)
        g[pre + "ffn.b2"] = dx.sum(axis=(0, 1))
        dz1 = (dx @ p[pre + "ffn.w2"].T) * gelu_tanh_grad(c["z1"])
        g[pre + "ffn.w1"] = np.einsum("btd,btf->df", c["a2"], dz1)
        g[pre + "ffn.b1"] = dz1.sum(axis=(0, 1))
        da2 = dz1 @ p[pre + "ffn.w1"].T
        dln, g[pre + "ln2.weight"], g[pre + "ln2.bias"] = layer_norm_backward(
            da2, p[pre + "ln2.weight"], c["ln2"])
        dh = dx + dln
        # h = x + HKT(LN1(x))
        lg, aux = RG.backward_from_cache(c["hc"], dh)
        for name, val in lg.items():
            if name != "x":
                g[pre + "attn." + name] = val
        if scales is not None:
            for name in ("theta", "down_b", "down_w", "gamma"):
                if name + "_scale" in aux and pre + "attn." + name in g:
                    scales[pre + "attn." + name] = aux[name + "_scale"]
        dln, g[pre + "ln1.weight"], g[pre + "ln1.bias"] = layer_norm_backward(
            lg["x"], p[pre + "ln1.weight"], c["ln1"])
        dx = dh + dln

    # x = embed[tokens] + pos[:T]
    demb = np.zeros_like(p["embed"])
    np.add.at(demb, st["tok"].reshape(-1), dx.reshape(-1, dx.shape[-1]))
    g["embed"] = demb
    dpos = np.zeros_like(p["pos"])
    dpos[:T] = dx.sum(axis=0)
    g["pos"] = dpos
    assert set(g) == set(p)
    grads = {name: g[name] for name in param_shapes(cfg)}
    if return_input_grad:
        return loss, grads, dx
    return loss, grads
