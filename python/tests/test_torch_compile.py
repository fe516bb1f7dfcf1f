"""PyTorch >= 2.4: HKTAttention's entries as custom operators (hkt::layer,
hkt::layer_grad). torch.library.opcheck on both (schema, fake tensors,
autograd registration, AOT dispatch); torch.compile(fullgraph=True) of a
model built on HKTAttention traces without a graph break and gives eager's
outputs and gradients. Runs on PyTorch 2.x from PyPI (scripts/setup.sh puts
it in build/torch-venv; test/Python/torch-compile.test)."""
import os
import sys

import numpy as np
import pytest
import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "test", "reference"))

import hkt.torch as ht  # noqa: E402

CONFIG = {"dim": 16, "heads": 2, "levels": 3, "causal": True}



def test_this_pytorch_has_custom_ops():
    assert ht.CUSTOM_OPS, "PyTorch %s has no torch.library.custom_op" % torch.__version__
    assert hasattr(torch.ops.hkt, "layer") and hasattr(torch.ops.hkt, "layer_grad")


def random_layer(rng):
    attn = ht.HKTAttention(CONFIG, max_seq_len=64, max_batch=4)
    with torch.no_grad():
        for p in attn.parameters():
            p.copy_(torch.from_numpy(0.3 * rng.standard_normal(p.shape).astype(np.float32)))
    return attn


def test_opcheck(rng):
    attn = random_layer(rng)
    params = [p.detach().clone().requires_grad_(True) for p in attn.parameters()]
    x = torch.from_numpy(rng.standard_normal((2, 19, 16)).astype(np.float32))
    lengths = torch.tensor([19, 7], dtype=torch.int32)
    for args in ((attn.directory, x.clone().requires_grad_(True), params, lengths),
                 (attn.directory, x.clone().requires_grad_(True), params, None)):
        torch.library.opcheck(torch.ops.hkt.layer.default, args)
    dy = torch.from_numpy(rng.standard_normal((2, 19, 16)).astype(np.float32))
    torch.library.opcheck(torch.ops.hkt.layer_grad.default,
                          (attn.directory, x, dy, [p.detach() for p in params], lengths))


class Classifier(torch.nn.Module):
    def __init__(self, rng):
        super().__init__()
        self.embed = torch.nn.Embedding(8, 16)
        self.layers = torch.nn.ModuleList([random_layer(rng) for _ in range(2)])
        self.head = torch.nn.Linear(16, 3)

    def forward(self, tokens):
        x = self.embed(tokens)
        for layer in self.layers:
            x = x + layer(x)
        return self.head(x.mean(dim=1))


def test_compile_fullgraph_matches_eager(rng):
    torch.manual_seed(int(rng.integers(1 << 31)))
    model = Classifier(rng)
    compiled = torch.compile(model, fullgraph=True)
    for T in (20, 33):  # a second length: the same module, no recompiling hkt
        tokens = torch.from_numpy(rng.integers(0, 8, size=(3, T)).astype(np.int64))
        model.zero_grad()
        eager = model(tokens)
        eager.sum().backward()
        want = {n: p.grad.clone() for n, p in model.named_parameters()}
        model.zero_grad()
        got = compiled(tokens)
        got.sum().backward()
        assert torch.allclose(got, eager, rtol=1e-5, atol=1e-6)
        for n, p in model.named_parameters():
            assert torch.allclose(p.grad, want[n], rtol=1e-4, atol=1e-6), n
