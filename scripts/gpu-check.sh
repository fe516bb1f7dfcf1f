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
#                                  modules into gpu-check/ (ignored by git),
#                                  and a tiny model's modules for training
#                                  (cpu; nvvm; nvvm --ranks 1) with its
#                                  initial weights
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
#                                  compiles), then training on the GPU:
#                                  4 steps of the model's train step on
#                                  the device follow the CPU module's
#                                  losses (bf16 bound 2e-2), and the
#                                  data-parallel module on one rank (NCCL,
#                                  a communicator of one, no MPI needed)
#                                  follows the plain GPU module's (1e-3);
#                                  meant to fit in 8 minutes; the tables
#                                  also go to $OUT/gpu-table.md when OUT is
#                                  set
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
  # Training: the model of test/Tools/nvvm-train.test, its weights made
  # here (the same file serves every module of the model).
  mkdir -p "$dir/train"
  echo '{"vocab": 16, "max_len": 32, "dim": 32, "heads": 2, "layers": 1, "levels": 2, "stride": 2, "kernel": 3, "conv_kernel": 3, "hybrid": true, "causal": true, "ffn": 64, "classes": 10}' > "$dir/train/model.json"
  "$build/bin/hkt-compile" --model "$dir/train/model.json" --max-batch 4 --cpu x86-64 -o "$dir/train/cpu"
  for ranks in 0 1; do
    "$build/bin/hkt-compile" --model "$dir/train/model.json" --max-batch 4 --target nvvm --precision bf16 --chip sm_90 \
      $([ $ranks = 1 ] && echo --ranks 1) -o "$dir/train/gpu$ranks"
  done
  "$build/bin/hkt-run" init "$dir/train/cpu" --seed 1 --save "$dir/train/w.safetensors" >/dev/null
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
  # Training on the device; NCCL from the loader's path, else PyTorch's
  # wheel (nvidia-nccl), else HKT_NCCL as given.
  if [ -z "${HKT_NCCL:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libnccl.so.2 '; then
    HKT_NCCL="$("$python" -c 'import nvidia.nccl as n, os; print(os.path.join(list(n.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null || true)"
    [ -n "$HKT_NCCL" ] && export HKT_NCCL
  fi
  train="$dir/train"
  rm -f "$train"/*.jsonl "$train"/*.ckpt
  for run in cpu gpu0 gpu1; do
    device=cuda; [ $run = cpu ] && device=cpu
    "$dir/bin/hkt-run" train "$train/$run" --device $device --task listops:train=64,valid=16,test=16 \
      --params "$train/w.safetensors" --steps 4 --batch 4 --log-every 1 --log "$train/$run.jsonl" \
      --save "$train/$run.ckpt" --eval-examples 16 || status=1
  done
  "$python" "$root/test/Tools/Inputs/check_training.py" follows "$train/cpu.jsonl" "$train/gpu0.jsonl" 2e-2 || status=1
  "$python" "$root/test/Tools/Inputs/check_training.py" follows "$train/gpu0.jsonl" "$train/gpu1.jsonl" 1e-3 || status=1
  echo "gpu-check: $((SECONDS - start)) s, status $status"
  exit $status
  ;;
*)
  echo "usage: scripts/gpu-check.sh prepare | run" >&2
  exit 2
  ;;
esac
