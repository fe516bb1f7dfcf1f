"""Writes the inputs of hkt-run.test into DIR: a two-layer "model checkpoint"
(safetensors, float32), the single layer's parameters, and good and bad .npy
inputs for the layer {"batch": 2, "seq_len": 6, "dim": 4, "heads": 2, "levels": 2}.
Random values from a printed seed (HKT_TEST_SEED=N reproduces a run)."""
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "reference"))
from hkt_seed import pick_seed  # noqa: E402

out = sys.argv[1]
rng = np.random.default_rng(pick_seed("make_layer_inputs.py"))
B, T, D, H, L, k, kc = 2, 6, 4, 2, 2, 3, 3
shapes = {"wq": (L, D, D), "wk": (L, D, D), "wv": (D, D), "wo": (D, D),
          "down_w": (L - 1, D, k), "down_b": (L - 1, D), "theta": (H, L),
          "conv_u": (D, kc), "gamma": (H,)}


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, array in tensors.items():
        data = np.ascontiguousarray(array, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


layer = {n: (rng.standard_normal(s) * 0.5).astype(np.float32) for n, s in shapes.items()}
model = {}
for i in range(2):
    for n, s in shapes.items():
        model[f"layers.{i}.attn.{n}"] = layer[n] if i == 1 else rng.standard_normal(s)
model["embed"] = rng.standard_normal((20, D))
write_safetensors(f"{out}/model.safetensors", model)
write_safetensors(f"{out}/layer.safetensors", layer)
write_safetensors(f"{out}/extra.safetensors", dict(layer, bias=np.zeros(D)))

x = rng.standard_normal((B, T, D)).astype(np.float32)
np.save(f"{out}/x.npy", x)
np.save(f"{out}/x_short.npy", x[:, :5])
np.save(f"{out}/x_f64.npy", x.astype(np.float64))
np.save(f"{out}/lengths.npy", np.array([6, 3], dtype=np.int32))
np.save(f"{out}/lengths_zero.npy", np.array([6, 0], dtype=np.int32))
np.save(f"{out}/lengths_long.npy", np.array([7, 1], dtype=np.int32))
