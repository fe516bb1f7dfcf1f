"""hkt.torch.HKTAttention: a PyTorch module whose forward and backward are the
compiled layer's `layer` and `layer_grad` entries. Its output and the
gradients autograd gives (of x and of every parameter) against the float64
reference on fresh random inputs, at several lengths through one compiled
module; SPEC's parameter names and initialisation; a small model with two
HKTAttention layers trained with torch.optim.AdamW (its loss falls).

Needs PyTorch (Debian's python3-torch, 1.13: the autograd.Function path).
"""
import os
import sys

import numpy as np
import pytest
import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "test", "reference"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import hkt_reference as R  # noqa: E402
import hkt_reference_grad as G  # noqa: E402
from torch_layer_grad import layer as reference_layer  # noqa: E402

from hkt.torch import CUSTOM_OPS, HKTAttention  # noqa: E402

CONFIG = {"dim": 16, "heads": 2, "levels": 3, "causal": True}



def rel(a, b):
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


def test_parameters_follow_spec():
    attn = HKTAttention(CONFIG, max_seq_len=64, max_batch=4)
    shapes = {k: tuple(v.shape) for k, v in attn.state_dict().items()}
    assert shapes == {"wq": (3, 16, 16), "wk": (3, 16, 16), "wv": (16, 16),
                      "wo": (16, 16), "down_w": (2, 16, 3), "down_b": (2, 16),
                      "theta": (2, 3), "conv_u": (16, 3), "gamma": (2,)}
    assert torch.all(attn.down_w[:, :, 0] == 1) and torch.all(attn.down_w[:, :, 1:] == 0)
    assert torch.all(attn.theta == 0) and torch.all(attn.gamma == 2)
    assert 0.01 < float(attn.wq.detach().std()) < 0.03


@pytest.mark.parametrize("T", [1, 23, 64])
def test_forward_and_backward_match_reference(rng, T):
    attn = HKTAttention(CONFIG, max_seq_len=64, max_batch=4)
    cfg = R.full_cfg(CONFIG)
    params = R.random_params(rng, cfg, CONFIG["dim"])
    attn.load_state_dict({k: torch.from_numpy(v) for k, v in params.items()})
    x = torch.from_numpy(rng.standard_normal((3, T, 16)).astype(np.float32))
    x.requires_grad_(True)
    lengths = rng.integers(1, T + 1, size=3).astype(np.int32)
    y = attn(x, lengths=lengths)
    p64 = {k: v.astype(np.float64) for k, v in params.items()}
    x64 = x.detach().numpy().astype(np.float64)
    assert rel(y.detach().numpy(), R.hkt_layer(x64, p64, cfg, lengths)) < 1e-4
    dy = rng.standard_normal(y.shape).astype(np.float32)
    y.backward(torch.from_numpy(dy))
    ref = G.hkt_layer_grad(x64, p64, cfg, dy.astype(np.float64), lengths)
    got = dict(x=x.grad.numpy(), **{n: p.grad.numpy() for n, p in attn.named_parameters()})
    assert set(got) == set(ref)
    # Cancelling sums (theta, the biases) are held to the scale of the
    # largest gradient, which bounds their terms' round-off.
    scale = max(float(np.abs(v).max()) for v in ref.values())
    for name, want in ref.items():
        assert got[name].shape == want.shape, name
        assert rel(got[name], want) < 1e-3 or \
            np.abs(got[name] - want).max() < 1e-4 * scale, name


def test_a_model_trains(rng):
    torch.manual_seed(int(rng.integers(1 << 31)))
    model = TwoLayers(lambda: HKTAttention(CONFIG, max_seq_len=64, max_batch=4))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    tokens = torch.from_numpy(rng.integers(0, 8, size=(4, 20)).astype(np.int64))
    labels = torch.from_numpy(rng.integers(0, 3, size=4).astype(np.int64))
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(tokens), labels)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    assert all(np.isfinite(losses))
    # A batch of four memorised: the loss falls well below its start.
    assert losses[-1] < 0.5 * losses[0], losses
    # Every HKT parameter took part (its gradient reached the optimizer).
    for name, p in model.named_parameters():
        assert p.grad is not None and float(p.grad.abs().sum()) > 0, name


def test_refusals_name_the_argument():
    attn = HKTAttention(CONFIG, max_seq_len=64, max_batch=4)
    x = torch.zeros(1, 4, 16, dtype=torch.float64)
    with pytest.raises(Exception, match=r"argument 'x' is float64, the module takes float32"):
        attn(x)
    with pytest.raises(Exception, match=r"argument 'x' is float16, the module takes float32"):
        attn(torch.zeros(1, 4, 16, dtype=torch.float16))
    # A tensor on another device for a CPU module: a CUDA one on a GPU
    # machine; "meta" goes the same way here through the autograd.Function.
    # Through the custom ops (PyTorch >= 2.4), a meta tensor is shape
    # propagation: the registered fake gives the result's shape.
    meta = torch.zeros(1, 4, 16, device="meta")
    if CUSTOM_OPS:
        y = attn(meta)
        assert y.device.type == "meta" and y.shape == (1, 4, 16)
    else:
        with pytest.raises(Exception, match=r"argument 'x' is a meta tensor; this module runs on the CPU"):
            attn(meta)
    with pytest.raises(Exception, match=r"input 'x' has size 65 in dimension 1 \('T'\), above its bound 64"):
        attn(torch.zeros(1, 65, 16))
    with pytest.raises(Exception, match=r"input 'x' has shape \[1,4,15\], expected \[B<=4,T<=64,16\]"):
        attn(torch.zeros(1, 4, 15))


class ReferenceAttention(torch.nn.Module):
    """The same layer written in PyTorch ops (scripts/torch_layer_grad.py,
    SPEC 1-8 with every score materialised), with HKTAttention's parameter
    names: autograd differentiates it, not the compiler."""

    def __init__(self):
        super().__init__()
        for name, p in HKTAttention(CONFIG, max_seq_len=64, max_batch=4).named_parameters():
            self.register_parameter(name, torch.nn.Parameter(p.detach().clone()))

    def forward(self, x):
        return reference_layer(x, dict(self.named_parameters()), R.full_cfg(CONFIG))


class TwoLayers(torch.nn.Module):
    def __init__(self, attention):
        super().__init__()
        self.embed = torch.nn.Embedding(8, 16)
        self.layers = torch.nn.ModuleList([attention() for _ in range(2)])
        self.head = torch.nn.Linear(16, 3)

    def forward(self, tokens):
        x = self.embed(tokens)
        for layer in self.layers:
            x = x + layer(x)
        return self.head(x.mean(dim=1))


def test_training_follows_the_reference_layer(rng):
    """The same model, weights and batches, once on HKTAttention and once on
    the PyTorch-ops layer, trained with AdamW: the first 5 losses agree to
    1e-4, and over 50 steps the compiled one's loss falls."""
    torch.manual_seed(int(rng.integers(1 << 31)))
    compiled = TwoLayers(lambda: HKTAttention(CONFIG, max_seq_len=64, max_batch=4))
    reference = TwoLayers(ReferenceAttention)
    reference.load_state_dict(compiled.state_dict())
    tokens = torch.from_numpy(rng.integers(0, 8, size=(4, 24)).astype(np.int64))
    labels = torch.from_numpy(rng.integers(0, 3, size=4).astype(np.int64))

    def train(model, steps):
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        losses = []
        for step in range(steps):
            opt.zero_grad()
            # One batch, memorised.
            loss = torch.nn.functional.cross_entropy(model(tokens), labels)
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
        return losses

    ours, theirs = train(compiled, 50), train(reference, 5)
    for a, b in zip(ours[:5], theirs):
        assert abs(a - b) <= 1e-4 * max(abs(b), 1.0), (ours[:5], theirs)
    assert np.mean(ours[-5:]) < 0.5 * np.mean(ours[:5]), ours


def test_checkpoint_gives_the_compiled_models_logits(tmp_path, rng):
    """An hkt-run checkpoint loads into hkt.torch.Classifier (SPEC's model in
    PyTorch on HKTAttention) and gives the logits of the compiled model's
    `logits` entry, through hkt-run and through the package."""
    import json
    import subprocess

    import hkt
    from hkt.torch import Classifier
    model = {"vocab": 10, "max_len": 32, "dim": 16, "heads": 2, "layers": 2,
             "levels": 3, "stride": 2, "kernel": 3, "conv_kernel": 3,
             "hybrid": True, "causal": True, "ffn": 32, "classes": 4}
    (tmp_path / "model.json").write_text(json.dumps(model))
    compile_tool = os.environ.get("HKT_COMPILE", "hkt-compile")
    run_tool = os.path.join(os.path.dirname(compile_tool), "hkt-run") \
        if os.path.dirname(compile_tool) else "hkt-run"
    subprocess.run([compile_tool, "--model", str(tmp_path / "model.json"),
                    "--max-batch", "4", "--inference", "-o", str(tmp_path / "m")],
                   check=True)
    subprocess.run([run_tool, "init", str(tmp_path / "m"), "--seed", "5",
                    "--save", str(tmp_path / "w.safetensors")], check=True)
    # Rows of their own lengths (0 pads the rest).
    tokens = rng.integers(1, 10, size=(3, 29)).astype(np.int32)
    for row, n in enumerate((29, 11, 3)):
        tokens[row, n:] = 0
    np.save(tmp_path / "t.npy", tokens)
    subprocess.run([run_tool, str(tmp_path / "m"), "--entry", "logits", "--quiet",
                    "--params", str(tmp_path / "w.safetensors"), "--input",
                    "tokens=%s" % (tmp_path / "t.npy"), "--output",
                    "logits=%s" % (tmp_path / "l.npy")], check=True)
    want = np.load(tmp_path / "l.npy")
    weights = hkt.read_safetensors(tmp_path / "w.safetensors")
    ours = Classifier(model, max_batch=4)
    missing, unexpected = ours.load_state_dict(
        {k: torch.from_numpy(v) for k, v in weights.items()}, strict=False)
    assert not missing and not [u for u in unexpected if not u.startswith("adam.")]
    with torch.no_grad():
        got = ours(torch.from_numpy(tokens)).numpy()
    assert got.shape == want.shape == (3, 4)
    assert rel(got, want) < 1e-4
    direct = hkt.load(tmp_path / "m").logits(tokens, params=weights)
    assert rel(direct, want) < 1e-6
