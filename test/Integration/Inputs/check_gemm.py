"""Compiles C = A B (linalg.matmul, M x K times K x N) for --target
gpu-emulation (or nvvm) --precision bf16, where it becomes the bf16
tensor-core GEMM kernel (hkt-nvvm-lower-gemm), runs it on fresh random
inputs and compares
with float64: against the product of A and B rounded to bf16 it must agree
to f32 accumulation (1e-5 relative: a fragment-layout bug moves whole
elements), against the exact product within the bf16 rounding bound, element
by element: |C - A B| <= 2^-7 (|A| |B|) (rounding each operand to bf16 moves a
product by at most 2^-8 of |a b|; twice that for the f32 sums and a margin;
a bound on the largest element instead fails where the sums cancel: 1.2e-2
with one row, K = 16). The seed is
printed (HKT_TEST_SEED=N reproduces a run)."""
import argparse
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "reference"))
from hkt_seed import pick_seed  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("--hkt-compile")
ap.add_argument("--hkt-run")
ap.add_argument("--workdir", required=True)
ap.add_argument("--shape", required=True, metavar="M,K,N")
ap.add_argument("--target", default="gpu-emulation",
                choices=("gpu-emulation", "nvvm"))
ap.add_argument("--compile-only", action="store_true",
                help="compile the module into WORKDIR/mm and stop")
ap.add_argument("--precompiled", metavar="MODDIR",
                help="run this module (compiled for the same shape) instead "
                     "of compiling (scripts/gpu-check.sh)")
args = ap.parse_args()
m, k, n = (int(x) for x in args.shape.split(","))
work = args.workdir
os.makedirs(work, exist_ok=True)
module = args.precompiled or os.path.join(work, "mm")
if not args.precompiled:
    source = f"""
func.func @mm(%a: tensor<{m}x{k}xf32> {{hkt.name = "a"}}, %b: tensor<{k}x{n}xf32> {{hkt.name = "b"}})
    -> (tensor<{m}x{n}xf32> {{hkt.name = "c"}}) {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<{m}x{n}xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %c = linalg.matmul ins(%a, %b : tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) outs(%z : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  return %c : tensor<{m}x{n}xf32>
}}
"""
    with open(f"{work}/mm.mlir", "w") as f:
        f.write(source)
    subprocess.run([args.hkt_compile, f"{work}/mm.mlir", "--target", args.target,
                    "--precision", "bf16", "-o", module], check=True)
    if args.compile_only:
        sys.exit(0)

seed = pick_seed("check_gemm.py")
rng = np.random.default_rng(seed)
a = rng.standard_normal((m, k)).astype(np.float32)
b = rng.standard_normal((k, n)).astype(np.float32)
np.save(f"{work}/a.npy", a)
np.save(f"{work}/b.npy", b)
subprocess.run([args.hkt_run, module, "--quiet", "--input", f"a={work}/a.npy",
                "--input", f"b={work}/b.npy", "--output", f"c={work}/c.npy"],
               check=True)
c = np.load(f"{work}/c.npy").astype(np.float64)


def bf16(x):
    """Round to nearest even at bf16, as cvt.rn.bf16.f32 does."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


exact = a.astype(np.float64) @ b.astype(np.float64)
rounded = bf16(a) @ bf16(b)
scale = np.abs(exact).max()
err_rounded = np.abs(c - rounded).max() / scale
err_exact = np.abs(c - exact).max() / scale
# Each error against its own bf16 bound; the worst ratio must stay below 1.
bound = 2.0**-7 * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
err_bound = (np.abs(c - exact) / np.maximum(bound, np.finfo(np.float64).tiny)).max()
assert err_rounded < 1e-5, f"vs bf16-rounded operands: {err_rounded:.3e}"
assert err_bound < 1.0, f"vs exact: {err_bound:.3f} of the bf16 bound"
print(f"gemm {m}x{n}x{k} seed={seed} rounded_err={err_rounded:.1e} "
      f"exact_err={err_exact:.1e} of_bound={err_bound:.2f} OK")
