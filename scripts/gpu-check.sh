#!/usr/bin/env bash
# The GPU check, for a lent GPU machine (docs/gpu.md). That machine has a
# GPU, its driver and PyTorch, but no MLIR: the modules are compiled ahead
# of time here, which is what this compiler is for, and only hkt-run and the
# modules travel.
#
#   scripts/gpu-check.sh prepare   here: build, then compile the fragment
#                                  self-test, the numerical grids of
#                                  test/Integration/gpu-layer.test and
#                                  gpu-gradients.test, and the benchmark's
#                                  modules into gpu-check/ (ignored by git)
#   scripts/gpu-check.sh run       on the GPU machine, from the repository
#                                  root with gpu-check/ carried: first the
#                                  one-block self-test of the mma.sync and
#                                  ldmatrix fragment maps (the bf16 GEMM
#                                  against the bf16-rounded product; a
#                                  failure stops there), then the forward and
#                                  gradient grids against the float64
#                                  reference (f32 at 1e-4, tf32 at 3e-3, bf16
#                                  at 2e-2), then the benchmark tables
#                                  (scripts/gpu_bench.py: bf16 forward and
#                                  forward + backward at d = 64 and 128, f32
#                                  and tf32 forward, the bf16 layer compiled
#                                  for every length against static
#                                  compiles), meant to fit in 8
#                                  minutes; the tables also go to
#                                  $OUT/gpu-table.md when OUT is set
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${HKT_GPU_CHECK_DIR:-$root/gpu-check}"
python="${PYTHON:-python3}"

case "${1:-}" in
prepare)
  "$root/scripts/setup.sh"
  build="${HKT_BUILD_DIR:-$root/build}"
  rm -rf "$dir"
  mkdir -p "$dir/bin"
  cp "$build/bin/hkt-run" "$dir/bin/"
  "$python" "$root/scripts/gpu_grid.py" prepare --out "$dir/grid" --hkt-compile "$build/bin/hkt-compile"
  "$python" "$root/scripts/gpu_bench.py" prepare --out "$dir/bench" --hkt-compile "$build/bin/hkt-compile"
  du -sh "$dir"
  ;;
run)
  start=$SECONDS
  command -v nvidia-smi >/dev/null && nvidia-smi -L || true
  status=0
  "$python" "$root/scripts/gpu_grid.py" run --dir "$dir/grid" --hkt-run "$dir/bin/hkt-run" || status=1
  table="$("$python" "$root/scripts/gpu_bench.py" run --dir "$dir/bench" --hkt-run "$dir/bin/hkt-run")" || status=1
  echo "$table"
  if [ -n "${OUT:-}" ]; then echo "$table" > "$OUT/gpu-table.md"; fi
  echo "gpu-check: $((SECONDS - start)) s, status $status"
  exit $status
  ;;
*)
  echo "usage: scripts/gpu-check.sh prepare | run" >&2
  exit 2
  ;;
esac
