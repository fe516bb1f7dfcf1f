#!/usr/bin/env bash
# The experiment of docs/results.md: HKT (L = 3, hybrid) against the MHA
# baseline (L = 1, no hybrid) and the L = 1 ablation with the hybrid head,
# on ListOps (T = 512) and sequential Fashion-MNIST (T = 784), 3 seeds each,
# same width, depth, steps, batch and seeds. Resumable: a finished run (its
# test result exists) is skipped, an interrupted one resumes from its
# checkpoint, so it can run in parts:
#
#   scripts/experiment.sh [DIR] [TASKS] [SEEDS]     # default experiment/ "listops fmnist" "0 1 2"
#   /usr/bin/python3 scripts/plot.py DIR            # plots and the table
#
# Sizes (steps, batch, width) are set below for about two hours of a 2-core
# machine; HKT_EXPERIMENT_STEPS overrides the steps per run.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${HKT_BUILD_DIR:-$root/build}/bin"
dir="${1:-$root/experiment}"
tasks="${2:-listops fmnist}"
seeds="${3:-0 1 2}"
mkdir -p "$dir"

dim=64; heads=4; layers=2; ffn=128; batch=16
steps="${HKT_EXPERIMENT_STEPS:-2000}"
declare -A len=([listops]=512 [fmnist]=784) vocab=([listops]=16 [fmnist]=257)
declare -A levels=([hkt]=3 [mha]=1 [l1hybrid]=1) hybrid=([hkt]=true [mha]=false [l1hybrid]=true)

# Seeds outside, models inside: a part cut short still compares the models.
for task in $tasks; do
  for model in hkt mha l1hybrid; do
    mod="$dir/mod-$task-$model"
    if [ ! -f "$mod/manifest.json" ]; then
      cfg="$dir/$task-$model.json"
      echo "{\"vocab\": ${vocab[$task]}, \"max_len\": ${len[$task]}, \"dim\": $dim, \"heads\": $heads, \"layers\": $layers, \"levels\": ${levels[$model]}, \"stride\": 2, \"kernel\": 3, \"conv_kernel\": 3, \"hybrid\": ${hybrid[$model]}, \"causal\": false, \"ffn\": $ffn, \"classes\": 10}" > "$cfg"
      echo "== compiling $cfg"
      "$bin/hkt-compile" --model "$cfg" --max-batch 64 -o "$mod"
    fi
  done
  for seed in $seeds; do
    for model in hkt mha l1hybrid; do
      mod="$dir/mod-$task-$model"
      run="$dir/$task-$model-s$seed"
      [ -f "$run.test.json" ] && continue
      common=(--save "$run.safetensors" --log "$run.jsonl" --log-every 20
              --eval-every 200 --eval-examples 500 --save-every 200 --quiet)
      if [ -f "$run.safetensors" ]; then
        done_steps=$(/usr/bin/python3 -c "import json,struct,sys; f=open(sys.argv[1],'rb'); n=struct.unpack('<Q', f.read(8))[0]; print(json.loads(f.read(n))['__metadata__']['step'])" "$run.safetensors")
        left=$((steps - done_steps))
        if [ "$left" -gt 0 ]; then
          echo "== $task $model seed $seed: resuming at step $done_steps"
          "$bin/hkt-run" train "$mod" --resume "$run.safetensors" --steps "$left" "${common[@]}" > "$run.final.json"
        fi
      else
        echo "== $task $model seed $seed: $steps steps"
        "$bin/hkt-run" train "$mod" --task "$task" --steps "$steps" --batch "$batch" \
          --seed "$seed" --lr 1e-3 --warmup 100 --schedule cosine --weight-decay 0.01 \
          "${common[@]}" > "$run.final.json"
      fi
      "$bin/hkt-run" eval "$mod" --params "$run.safetensors" --task "$task" --split test \
        --limit 2000 > "$run.test.json.tmp" && mv "$run.test.json.tmp" "$run.test.json"
      echo "$(date +%T) $task $model seed $seed: $(cat "$run.final.json") test $(cat "$run.test.json")"
    done
  done
done
