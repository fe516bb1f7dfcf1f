"""hkt.torch: the compiled layer inside a PyTorch model.

    from hkt.torch import HKTAttention
    attn = HKTAttention({"dim": 512, "heads": 8, "levels": 3, "causal": True})
    y = attn(x)                  # x: B x T x D float32 on the CPU
    y.sum().backward()           # the compiled fused backward (layer_grad)

HKTAttention compiles its layer once (hkt.compile_layer, cached) for every
batch up to `max_batch` and every length up to `max_seq_len`; its forward
calls the module's `layer` entry and its backward the `layer_grad` entry,
through a torch.autograd.Function (any PyTorch from 1.13). Tensors cross as
numpy views of their memory, without copies. Its parameters carry SPEC's
names and initialisation, so `state_dict()` holds wq, wk, wv, wo, down_w,
down_b, theta, conv_u and gamma; `load_state_dict` of an hkt-run checkpoint's
layer (keys `layers.i.attn.*` with the prefix stripped) gives the same layer.
"""
import numpy as np
import torch

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


def _numpy(t):
    """A view of a CPU tensor's memory (detached: autograd is ours)."""
    if t.device.type != "cpu":
        raise ValueError("hkt.torch: a %s tensor; this module runs on the CPU "
                         "(pass CPU tensors)" % t.device.type)
    return t.detach().numpy()


class _Layer(torch.autograd.Function):
    """y = layer(x, params); dx and every parameter's gradient from
    layer_grad (forward recomputed there, as FlashAttention does)."""

    @staticmethod
    def forward(ctx, module, names, lengths, x, *params):
        ctx.module, ctx.names, ctx.lengths = module, names, lengths
        ctx.save_for_backward(x, *params)
        y = module.layer(_numpy(x), lengths=lengths,
                         params={n: _numpy(p) for n, p in zip(names, params)})
        return torch.from_numpy(y)

    @staticmethod
    def backward(ctx, dy):
        x, *params = ctx.saved_tensors
        grads = ctx.module.layer_grad(
            _numpy(x), dy=_numpy(dy.contiguous()), lengths=ctx.lengths,
            params={n: _numpy(p) for n, p in zip(ctx.names, params)})
        return (None, None, None, torch.from_numpy(grads["dx"]),
                *[torch.from_numpy(grads["d" + n]) for n in ctx.names])


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
        self._module = None

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

    def compiled(self):
        """The compiled module (compiled on first use, then cached)."""
        if self._module is None:
            self._module = compile_layer(
                dict(self.config, batch=None, seq_len=None), backward=True,
                max_seq_len=self.max_seq_len, max_batch=self.max_batch)
        return self._module

    def forward(self, x, lengths=None):
        """x: B x T x dim float32 (B <= max_batch, T <= max_seq_len);
        lengths: B key lengths (int32), or None for every key."""
        if lengths is not None:
            lengths = _numpy(torch.as_tensor(lengths, dtype=torch.int32))
        return _Layer.apply(self.compiled(), self.names, lengths,
                            x.contiguous(),
                            *[getattr(self, n) for n in self.names])

    def extra_repr(self):
        return ", ".join("%s=%s" % kv for kv in sorted(self.config.items()))
