"""hkt.torch: the compiled layer inside a PyTorch model.

    from hkt.torch import HKTAttention
    attn = HKTAttention({"dim": 512, "heads": 8, "levels": 3, "causal": True})
    y = attn(x)                  # x: B x T x D float32 on the CPU
    y.sum().backward()           # the compiled fused backward (layer_grad)

HKTAttention compiles its layer once (hkt.compile_layer, cached) for every
batch up to `max_batch` and every length up to `max_seq_len`; its forward
calls the module's `layer` entry and its backward the `layer_grad` entry:
custom operators hkt::layer and hkt::layer_grad with PyTorch >= 2.4 (so
torch.compile(fullgraph=True) traces through them), a torch.autograd.Function
before (Debian's 1.13). Tensors cross as
numpy views of their memory, without copies. Its parameters carry SPEC's
names and initialisation, so `state_dict()` holds wq, wk, wv, wo, down_w,
down_b, theta, conv_u and gamma; `load_state_dict` of an hkt-run checkpoint's
layer (keys `layers.i.attn.*` with the prefix stripped) gives the same layer.
"""
from typing import List, Optional

import torch

from . import load
from .compile import compile_layer

_DEFAULTS = {"levels": 3, "stride": 2, "kernel": 3, "conv_kernel": 3,
             "hybrid": True, "causal": False}


def parameter_shapes(config):
    """SPEC's parameter names and shapes of a layer config, in manifest
    order (down_* absent when L = 1, conv_u and gamma when not hybrid)."""
    c = dict(_DEFAULTS, **config)
    D, H, L = c["dim"], c["heads"], c["levels"]
    shapes = {"wq": (L, D, D), "wk": (L, D, D), "wv": (D, D), "wo": (D, D)}
    if L > 1:
        shapes["down_w"] = (L - 1, D, c["kernel"])
        shapes["down_b"] = (L - 1, D)
    shapes["theta"] = (H, L)
    if c["hybrid"]:
        shapes["conv_u"] = (D, c["conv_kernel"])
        shapes["gamma"] = (H,)
    return shapes


def _numpy(t, name):
    """A view of a CPU tensor's memory (detached: autograd is ours)."""
    if t.device.type != "cpu":
        raise ValueError("hkt.torch: argument '%s' is a %s tensor; this module "
                         "runs on the CPU (pass CPU tensors)" % (name, t.device.type))
    return t.detach().numpy()


_modules = {}


def _module(directory):
    """The loaded module of a directory (opened once per process)."""
    if directory not in _modules:
        _modules[directory] = load(directory)
    return _modules[directory]


def _parameters(module, params):
    names = [a["name"] for a in module.layer.args if a["role"] == "parameter"]
    return {n: _numpy(p, n) for n, p in zip(names, params)}


def _lengths(lengths):
    return None if lengths is None else _numpy(lengths, "lengths")


def _forward(directory, x, params, lengths):
    m = _module(directory)
    return torch.from_numpy(m.layer(_numpy(x, "x"), params=_parameters(m, params),
                                    lengths=_lengths(lengths)))


def _backward(directory, x, dy, params, lengths):
    """[dx, d<param>...] from the layer_grad entry."""
    m = _module(directory)
    grads = m.layer_grad(_numpy(x, "x"), dy=_numpy(dy, "dy"), lengths=_lengths(lengths),
                         params=_parameters(m, params))
    names = [a["name"] for a in m.layer.args if a["role"] == "parameter"]
    return [torch.from_numpy(grads["dx"])] + [
        torch.from_numpy(grads["d" + n]) for n in names]


class _Layer(torch.autograd.Function):
    """PyTorch before 2.4: y = layer(x, params); dx and every parameter's
    gradient from layer_grad (the forward recomputed there, as
    FlashAttention does)."""

    @staticmethod
    def forward(ctx, directory, lengths, x, *params):
        ctx.directory, ctx.lengths = directory, lengths
        ctx.save_for_backward(x, *params)
        return _forward(directory, x, params, lengths)

    @staticmethod
    def backward(ctx, dy):
        x, *params = ctx.saved_tensors
        grads = _backward(ctx.directory, x, dy.contiguous(), params, ctx.lengths)
        return (None, None, *grads)


# PyTorch >= 2.4: the entries as custom operators, hkt::layer and
# hkt::layer_grad, with fake (shape) functions and autograd, so that
# torch.compile(fullgraph=True) traces through them without a graph break.
CUSTOM_OPS = hasattr(torch.library, "custom_op")
if CUSTOM_OPS:
    @torch.library.custom_op("hkt::layer", mutates_args=())
    def layer_op(directory: str, x: torch.Tensor, params: List[torch.Tensor],
                 lengths: Optional[torch.Tensor]) -> torch.Tensor:
        return _forward(directory, x, params, lengths)

    @layer_op.register_fake
    def _(directory, x, params, lengths):
        return torch.empty_like(x)

    @torch.library.custom_op("hkt::layer_grad", mutates_args=())
    def layer_grad_op(directory: str, x: torch.Tensor, dy: torch.Tensor,
                      params: List[torch.Tensor],
                      lengths: Optional[torch.Tensor]) -> List[torch.Tensor]:
        return _backward(directory, x, dy, params, lengths)

    @layer_grad_op.register_fake
    def _(directory, x, dy, params, lengths):
        return [torch.empty_like(x)] + [torch.empty_like(p) for p in params]

    def _setup_context(ctx, inputs, output):
        directory, x, params, lengths = inputs
        ctx.directory = directory
        ctx.has_lengths = lengths is not None
        ctx.save_for_backward(x, *params,
                              *([lengths] if lengths is not None else []))

    def _layer_backward(ctx, dy):
        saved = list(ctx.saved_tensors)
        lengths = saved.pop() if ctx.has_lengths else None
        x, params = saved[0], saved[1:]
        grads = layer_grad_op(ctx.directory, x, dy.contiguous(), params, lengths)
        return None, grads[0], list(grads[1:]), None

    layer_op.register_autograd(_layer_backward, setup_context=_setup_context)


class HKTAttention(torch.nn.Module):
    """SPEC's HKT layer (attention at `levels` resolutions, fused with
    learned convex weights, and the hybrid convolution head) as compiled by
    hkt-compile. `config`: a layer config without batch and seq_len (dim,
    heads, levels, stride, kernel, conv_kernel, hybrid, causal)."""

    def __init__(self, config, max_seq_len=4096, max_batch=64):
        super().__init__()
        self.config = {k: v for k, v in dict(_DEFAULTS, **config).items()
                       if k not in ("batch", "seq_len")}
        self.max_seq_len, self.max_batch = max_seq_len, max_batch
        self.names = list(parameter_shapes(self.config))
        for name, shape in parameter_shapes(self.config).items():
            self.register_parameter(
                name, torch.nn.Parameter(torch.empty(shape, dtype=torch.float32)))
        self.reset_parameters()
        # Compiled (or found in the cache) now, not at the first call: under
        # torch.compile the forward must not run the compiler.
        self.directory = compile_layer(
            dict(self.config, batch=None, seq_len=None), backward=True,
            max_seq_len=max_seq_len, max_batch=max_batch).directory
        compiled = [a["name"] for a in _module(self.directory).layer.args
                    if a["role"] == "parameter"]
        if compiled != self.names:
            raise RuntimeError("hkt.torch: the compiled layer's parameters are "
                               "%s, expected %s" % (compiled, self.names))

    def reset_parameters(self):
        """SPEC's initialisation: matrices N(0, 0.02), biases 0, down_w's
        first tap 1 and the others 0, theta 0, gamma 2."""
        with torch.no_grad():
            for name in ("wq", "wk", "wv", "wo", "conv_u"):
                if hasattr(self, name):
                    getattr(self, name).normal_(0.0, 0.02)
            if hasattr(self, "down_w"):
                self.down_w.zero_()
                self.down_w[:, :, 0] = 1.0
                self.down_b.zero_()
            self.theta.zero_()
            if hasattr(self, "gamma"):
                self.gamma.fill_(2.0)

    def forward(self, x, lengths=None):
        """x: B x T x dim float32 (B <= max_batch, T <= max_seq_len);
        lengths: B key lengths (int32), or None for every key."""
        params = [getattr(self, n) for n in self.names]
        if lengths is not None:
            lengths = torch.as_tensor(lengths, dtype=torch.int32)
        if CUSTOM_OPS:
            return torch.ops.hkt.layer(self.directory, x.contiguous(), params,
                                       lengths)
        return _Layer.apply(self.directory, lengths, x.contiguous(), *params)

    def extra_repr(self):
        return ", ".join("%s=%s" % kv for kv in sorted(self.config.items()))


class _FeedForward(torch.nn.Module):
    def __init__(self, dim, ffn):
        super().__init__()
        self.w1 = torch.nn.Parameter(torch.empty(dim, ffn))
        self.b1 = torch.nn.Parameter(torch.zeros(ffn))
        self.w2 = torch.nn.Parameter(torch.empty(ffn, dim))
        self.b2 = torch.nn.Parameter(torch.zeros(dim))
        with torch.no_grad():
            self.w1.normal_(0.0, 0.02)
            self.w2.normal_(0.0, 0.02)

    def forward(self, x):
        h = torch.nn.functional.gelu(x @ self.w1 + self.b1, approximate="tanh")
        return h @ self.w2 + self.b2


class _Block(torch.nn.Module):
    def __init__(self, config, max_batch):
        super().__init__()
        D = config["dim"]
        self.ln1 = torch.nn.LayerNorm(D, eps=1e-5)
        self.attn = HKTAttention(
            {k: config[k] for k in ("dim", "heads", "levels", "stride",
                                    "kernel", "conv_kernel", "hybrid",
                                    "causal")},
            max_seq_len=config["max_len"], max_batch=max_batch)
        self.ln2 = torch.nn.LayerNorm(D, eps=1e-5)
        self.ffn = _FeedForward(D, config["ffn"])

    def forward(self, x, lengths):
        x = x + self.attn(self.ln1(x), lengths)
        return x + self.ffn(self.ln2(x))


class _Head(torch.nn.Module):
    def __init__(self, dim, classes):
        super().__init__()
        self.w = torch.nn.Parameter(torch.empty(dim, classes).normal_(0.0, 0.02))
        self.b = torch.nn.Parameter(torch.zeros(classes))

    def forward(self, x):
        return x @ self.w + self.b


class Classifier(torch.nn.Module):
    """SPEC's classifier (a model config: vocab, max_len, dim, heads, layers,
    levels, ..., ffn, classes) in PyTorch with HKTAttention layers, its
    parameters under SPEC's names: `load_state_dict(hkt.read_safetensors(
    CHECKPOINT))` takes an hkt-run checkpoint's weights (strict=False skips
    its AdamW moments), and `forward(tokens)` gives the logits the compiled
    model's `logits` entry gives. Rows end at their first 0 token."""

    def __init__(self, config, max_batch=64):
        super().__init__()
        D = config["dim"]
        self.embed = torch.nn.Parameter(
            torch.empty(config["vocab"], D).normal_(0.0, 0.02))
        self.pos = torch.nn.Parameter(
            torch.empty(config["max_len"], D).normal_(0.0, 0.02))
        self.layers = torch.nn.ModuleList(
            [_Block(config, max_batch) for _ in range(config["layers"])])
        self.ln_f = torch.nn.LayerNorm(D, eps=1e-5)
        self.head = _Head(D, config["classes"])

    def forward(self, tokens):
        B, T = tokens.shape
        nonzero = tokens != 0
        lengths = torch.where(nonzero.all(dim=1), torch.tensor(T),
                              nonzero.int().argmin(dim=1))
        if bool((lengths == 0).any()):
            raise ValueError("a row starts with the padding token 0 (its "
                             "length would be 0)")
        x = self.embed[tokens.long()] + self.pos[:T]
        for block in self.layers:
            x = block(x, lengths.to(torch.int32))
        x = self.ln_f(x)
        valid = (torch.arange(T)[None, :] < lengths[:, None]).to(x.dtype)
        pooled = (x * valid[..., None]).sum(1) / lengths[:, None].to(x.dtype)
        return self.head(pooled)
