#!/usr/bin/env bash
# The main job, end to end: build the compiler (scripts/setup.sh), compile the
# example HKT layer (examples/layer.json) ahead of time into a module, and run
# it on random inputs, printing what each step did.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${HKT_BUILD_DIR:-$root/build}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
echo "== building the compiler (scripts/setup.sh; log in $out/setup.log on failure)"
"$root/scripts/setup.sh" > "$out/setup.log" 2>&1 || {
  cat "$out/setup.log"; exit 1; }

config="$root/examples/layer.json"
echo "== layer config ($config)"
cat "$config"
echo
echo "== hkt-compile --layer $config -o $out/layer"
"$build/bin/hkt-compile" --layer "$config" -o "$out/layer"
echo "module: $(ls "$out/layer" | tr '\n' ' ')"
/usr/bin/python3 - "$out/layer/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
print(f"target: {m['target']['cpu']} ({len(m['target']['features'])} CPU features)")
for e in m["entries"]:
    args = ", ".join(f"{a['name']}:{a['dtype']}{a['shape']}" for a in e["args"])
    res = ", ".join(f"{r['name']}:{r['dtype']}{r['shape']}" for r in e["results"])
    print(f"entry {e['name']}({args}) -> {res}")
PY
echo
echo "== hkt-run $out/layer --random 42 --output y=$out/y.npy"
"$build/bin/hkt-run" "$out/layer" --random 42 --output y="$out/y.npy" 2>&1
/usr/bin/python3 -c "
import numpy as np, sys
y = np.load('$out/y.npy')
print(f'y: shape {y.shape}, dtype {y.dtype}, mean {y.mean():+.6f}, std {y.std():.6f}, finite {bool(np.isfinite(y).all())}')
"
