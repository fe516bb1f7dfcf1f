#!/usr/bin/env bash
# Installs what HKT needs from Debian 12's apt (only what is missing; one
# `apt-get update`), then configures and builds into build/ with CMake + Ninja.
# Idempotent: a second run only rebuilds what changed. HKT_BUILD_DIR picks the
# build folder, HKT_SANITIZE (e.g. address;undefined) the sanitizers of a new one;
# HKT_SETUP_NO_BUILD=1 installs the packages only (scripts/fuzz.sh).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${HKT_BUILD_DIR:-$root/build}"

packages=(
  build-essential cmake ninja-build ccache
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22 libclang-rt-22-dev
  nlohmann-json3-dev libgtest-dev libomp-dev zlib1g-dev libzstd-dev
  # Data-parallel training (docs/training.md): mpi.h, mpirun, libmpi.
  libopenmpi-dev openmpi-bin
  python3 python3-numpy
  # The Python package's tests (python/tests, test/Python): pytest, and
  # Debian's PyTorch 1.13 for hkt.torch; venv for PyTorch 2.x
  # (scripts/torch-venv.sh); pip and setuptools for `pip install ./python`
  # (test/Python/pip-install.test).
  python3-pytest python3-torch python3-venv python3-pip python3-setuptools
  # The training tasks and the experiment's plots (docs/tasks.md, docs/results.md).
  dataset-fashion-mnist python3-matplotlib
)
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}"
fi

if [ "${HKT_SETUP_NO_BUILD:-0}" = 1 ]; then exit 0; fi

llvm=/usr/lib/llvm-22
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR="$llvm/lib/cmake/mlir" \
    -DMLIR_LINK_MLIR_DYLIB=ON \
    -DLLVM_EXTERNAL_LIT="$llvm/bin/lit" \
    -DHKT_SANITIZE="${HKT_SANITIZE:-}"
fi
# Two cores here; say so explicitly so CI machines with more do not oversubscribe memory.
cmake --build "$build" -j "${HKT_JOBS:-$(nproc)}"
# PyTorch 2.x for the custom-operator tests (not for a sanitizer build).
if [ -z "${HKT_SANITIZE:-}" ]; then
  "$root/scripts/torch-venv.sh" "$build/torch-venv"
fi
