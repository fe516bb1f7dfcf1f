"""The hkt package on numpy arrays: a layer compiled once for every length
(--max-seq-len) called through the C API, forward and every gradient against
the float64 reference (test/reference/) on fresh random inputs; results and
in-out arguments written into the caller's memory; each refusal's message.

Needs HKT_COMPILE (hkt-compile) and the package importable (PYTHONPATH=python,
HKT_RUNTIME_LIBRARY or the build tree's library); test/Python/numpy.test runs
it under pytest.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "test", "reference"))
import hkt  # noqa: E402
import hkt_reference as R  # noqa: E402
import hkt_reference_grad as G  # noqa: E402

BOUND = 96
CONFIG = {"batch": 2, "seq_len": None, "dim": 16, "heads": 2, "levels": 3,
          "causal": True}


def compile_layer(tmp, name, config, *flags):
    cfg = tmp / (name + ".json")
    cfg.write_text(json.dumps(config))
    out = tmp / name
    subprocess.run([os.environ.get("HKT_COMPILE", "hkt-compile"), "--layer",
                    str(cfg), "-o", str(out)] + list(flags), check=True)
    return hkt.load(out)


@pytest.fixture(scope="module")
def layer(tmp_path_factory):
    return compile_layer(tmp_path_factory.mktemp("layer"), "layer", CONFIG,
                         "--max-seq-len", str(BOUND), "--backward")



def reference_cfg():
    return R.full_cfg({k: v for k, v in CONFIG.items()
                       if k not in ("batch", "seq_len")})


def rel(a, b):
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


@pytest.mark.parametrize("T", [1, 2, 37, 64, BOUND])
def test_forward_matches_reference(layer, rng, T):
    cfg = reference_cfg()
    params = R.random_params(rng, cfg, CONFIG["dim"])
    x = rng.standard_normal((2, T, CONFIG["dim"])).astype(np.float32)
    lengths = rng.integers(1, T + 1, size=2).astype(np.int32)
    y = layer.layer(x, params=params, lengths=lengths)
    assert y.shape == x.shape and y.dtype == np.float32
    ref = R.hkt_layer(x.astype(np.float64),
                      {k: v.astype(np.float64) for k, v in params.items()},
                      cfg, lengths)
    assert rel(y, ref) < 1e-4
    # lengths left out: the manifest's default (every key).
    full = R.hkt_layer(x.astype(np.float64),
                       {k: v.astype(np.float64) for k, v in params.items()}, cfg)
    assert rel(layer.layer(x, params=params), full) < 1e-4


@pytest.mark.parametrize("T", [1, 37, BOUND])
def test_gradients_match_reference(layer, rng, T):
    cfg = reference_cfg()
    params = R.random_params(rng, cfg, CONFIG["dim"])
    x = rng.standard_normal((2, T, CONFIG["dim"])).astype(np.float32)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    lengths = rng.integers(1, T + 1, size=2).astype(np.int32)
    grads = layer.layer_grad(x, dy=dy, params=params, lengths=lengths)
    ref = G.hkt_layer_grad(x.astype(np.float64),
                           {k: v.astype(np.float64) for k, v in params.items()},
                           cfg, dy.astype(np.float64), lengths)
    assert set(grads) == {"d" + k for k in ref}
    scale = max(float(np.abs(v).max()) for v in ref.values())
    for name, want in ref.items():
        got = grads["d" + name]
        assert got.shape == want.shape
        # Cancelling sums (theta, the biases) are held to the scale of the
        # largest gradient, which bounds their terms' round-off.
        assert rel(got, want) < 1e-3 or \
            np.abs(got - want).max() < 1e-4 * scale, name


class DLPackOnly:
    """A producer that numpy can view through the DLPack protocol only (as a
    JAX or PyTorch CPU tensor is), optionally claiming another device."""

    def __init__(self, array, device=None):
        self.array, self.device = array, device

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.device or self.array.__dlpack_device__()


def test_dlpack_producers(layer, rng):
    params = R.random_params(rng, reference_cfg(), CONFIG["dim"])
    x = rng.standard_normal((2, 10, CONFIG["dim"])).astype(np.float32)
    wrapped = {k: DLPackOnly(v) for k, v in params.items()}
    assert np.array_equal(layer.layer(DLPackOnly(x), params=wrapped),
                          layer.layer(x, params=params))
    with pytest.raises(hkt.Error, match=r"argument 'x' is on a CUDA device \(DLPack device type 2\); this module runs on the CPU"):
        layer.layer(DLPackOnly(x, device=(2, 0)), params=params)


def test_arrays_are_not_copied(tmp_path, rng):
    """A train step's in-out arguments are updated in the caller's arrays
    (the same memory before and after; half of them passed as DLPack
    producers), and a result is written into the array the package
    allocated for it; a read-only array is refused for an in-out argument."""
    model = {"vocab": 8, "max_len": 16, "dim": 8, "heads": 2, "layers": 1,
             "levels": 2, "stride": 2, "kernel": 3, "conv_kernel": 3,
             "hybrid": True, "causal": True, "ffn": 16, "classes": 3}
    (tmp_path / "model.json").write_text(json.dumps(model))
    subprocess.run([os.environ.get("HKT_COMPILE", "hkt-compile"), "--model",
                    str(tmp_path / "model.json"), "--max-batch", "4", "-o",
                    str(tmp_path / "model")], check=True)
    m = hkt.load(tmp_path / "model")
    step = m.train_step
    arrays = {}
    for a in step.args:
        if a["role"] == "inout":
            # Fresh AdamW moments are zero (the second one must not be
            # negative); the parameters random.
            arrays[a["name"]] = (
                np.zeros(a["shape"], np.float32) if a["name"].startswith("adam.")
                else (0.1 * rng.standard_normal(a["shape"])).astype(np.float32))
    tokens = rng.integers(1, 8, size=(3, 11)).astype(np.int32)
    labels = rng.integers(0, 3, size=3).astype(np.int32)
    before = {k: v.copy() for k, v in arrays.items()}
    addresses = {k: v.ctypes.data for k, v in arrays.items()}
    given = {k: DLPackOnly(v) if i % 2 else v
             for i, (k, v) in enumerate(sorted(arrays.items()))}
    frozen = next(iter(arrays))
    readonly = arrays[frozen].copy()
    readonly.flags.writeable = False
    with pytest.raises(hkt.Error, match=r"argument '%s' is read-only; the entry updates it in place" % frozen):
        step(tokens, labels, params=dict(given, **{frozen: readonly}),
             step=np.array(1, np.int64))
    loss = step(tokens, labels, params=given, step=np.array(1, np.int64))
    assert loss.shape == () and np.isfinite(loss)
    assert {k: v.ctypes.data for k, v in arrays.items()} == addresses
    changed = [k for k in arrays if not k.startswith("adam.")
               and not np.array_equal(arrays[k], before[k])]
    assert changed, "no parameter was updated in place"
    assert any(isinstance(given[k], DLPackOnly) for k in changed), \
        "no parameter given through DLPack was updated in place"
    # The same batch through `loss` with the updated weights: a real value.
    params = {k: v for k, v in arrays.items() if not k.startswith("adam.")}
    assert np.isfinite(m.loss(tokens, labels, params=params))


def test_refusals_name_the_argument(layer, rng):
    params = R.random_params(rng, reference_cfg(), CONFIG["dim"])
    x = rng.standard_normal((2, 10, CONFIG["dim"])).astype(np.float32)
    with pytest.raises(hkt.Error, match=r"argument 'x' is float64, the module takes float32"):
        layer.layer(x.astype(np.float64), params=params)
    with pytest.raises(hkt.Error, match=r"argument 'x' is not a dense row-major buffer"):
        layer.layer(np.ascontiguousarray(x.transpose(2, 1, 0)).transpose(2, 1, 0),
                    params=params)
    with pytest.raises(hkt.Error, match=r"input 'x' has size 97 in dimension 1 \('T'\), above its bound 96"):
        layer.layer(np.zeros((2, BOUND + 1, CONFIG["dim"]), np.float32), params=params)
    with pytest.raises(hkt.Error, match=r"'wq'"):
        layer.layer(x, params=dict(params, wq=params["wq"][:1].copy()))
    with pytest.raises(TypeError, match=r"argument 'wk' is missing"):
        layer.layer(x, params={k: v for k, v in params.items() if k != "wk"})
    with pytest.raises(TypeError, match=r"has no argument 'bias'"):
        layer.layer(x, params=params, bias=x)
    with pytest.raises(AttributeError, match=r"has no entry 'forward' \(entries: layer, layer_grad\)"):
        layer.forward
    with pytest.raises(hkt.Error, match=r"manifest"):
        hkt.load("/nonexistent-module-dir")


def test_compile_layer_is_cached(tmp_path, monkeypatch, rng):
    """hkt.compile_layer compiles into $HKT_CACHE_DIR once: a second call
    with the same config opens the module without running hkt-compile, and
    another config is another module."""
    monkeypatch.setenv("HKT_CACHE_DIR", str(tmp_path / "cache"))
    config = dict(CONFIG, batch=1, seq_len=24)
    m = hkt.compile_layer(config)
    x = rng.standard_normal((1, 24, CONFIG["dim"])).astype(np.float32)
    params = R.random_params(rng, reference_cfg(), CONFIG["dim"])
    ref = R.hkt_layer(x.astype(np.float64),
                      {k: v.astype(np.float64) for k, v in params.items()},
                      reference_cfg())
    assert rel(m.layer(x, params=params), ref) < 1e-4

    def no_compile(*args, **kwargs):
        raise AssertionError("hkt-compile ran for a cached module")
    monkeypatch.setattr(subprocess, "run", no_compile)
    again = hkt.compile_layer(dict(config))
    assert again.directory == m.directory
    with pytest.raises(AssertionError, match="ran for a cached module"):
        hkt.compile_layer(dict(config, causal=False))
    monkeypatch.undo()
    entries = sorted(os.listdir(tmp_path / "cache"))
    assert len(entries) == 1 and entries[0].startswith("layer-")
    with pytest.raises(hkt.Error, match=r"hkt-compile failed: .*heads"):
        hkt.compile_layer(dict(config, heads=3))
    assert sorted(os.listdir(tmp_path / "cache")) == entries
