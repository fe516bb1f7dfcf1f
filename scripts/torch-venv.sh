#!/usr/bin/env bash
# PyTorch 2.x from PyPI in a venv under the build directory, for the tests of
# hkt.torch's custom operators and torch.compile (test/Python/
# torch-compile.test); Debian's python3-torch 1.13 serves the rest. Called by
# scripts/setup.sh; idempotent (a venv that imports torch and pytest is kept).
#
# PyPI's Linux torch wheel is the CUDA build: its own nvidia-* dependencies
# are ~3 GB. Installed --no-deps with its pure-Python dependencies instead,
# it loads against the CUDA toolkit's libraries in /usr/local/cuda plus the
# four small nvidia wheels below that the toolkit lacks (~1 GB in all).
set -euo pipefail
venv="$1"
py="$venv/bin/python"
if [ -x "$py" ] && "$py" -c 'import torch, pytest, numpy' 2>/dev/null; then
  exit 0
fi
echo "setup: PyTorch 2.x into $venv"
rm -rf "$venv"
/usr/bin/python3 -m venv "$venv"
pip=("$py" -m pip install -q --no-input --no-cache-dir --disable-pip-version-check)
"${pip[@]}" --no-deps torch==2.15.0 nvidia-cufile==1.20.0.107 \
  nvidia-cusparselt-cu13==0.8.1 nvidia-nvshmem-cu13==3.7.2 \
  nvidia-nccl-cu13==2.30.7
# pip then warns that torch's CUDA requirements (cuda-toolkit, cudnn, triton)
# are missing: expected, the toolkit's libraries stand in for them.
"${pip[@]}" filelock typing-extensions sympy networkx jinja2 fsspec mpmath \
  markupsafe numpy pytest "setuptools>=77"
"$py" -c 'import torch; assert hasattr(torch.library, "custom_op")'
