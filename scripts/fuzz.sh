#!/usr/bin/env bash
# Runs the libFuzzer targets of test/fuzz (issue 12), each for a given time:
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]      (default 600 s, every target)
#
# Builds build-fuzz/ with clang-22, -fsanitize=fuzzer,address,undefined on our
# code (HKT_FUZZ=ON; libMLIR/libLLVM stay uninstrumented), then runs each
# target on a working corpus in build-fuzz/fuzz/TARGET/ that starts from the
# repository's seeds (test/fuzz/corpus/TARGET) and the regression inputs
# (test/fuzz/regressions/TARGET); the seeds are never written. A crash, leak,
# timeout or out-of-memory input is kept in build-fuzz/fuzz/TARGET/artifacts/:
# copy it into test/fuzz/regressions/TARGET and fix the bug. Prints one table
# row per target and exits non-zero if any target found something.
# HKT_FUZZ_JOBS (default 1) runs that many targets at once.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${HKT_FUZZ_BUILD_DIR:-$root/build-fuzz}"
seconds="${1:-600}"
shift || true
all=(npy safetensors manifest layer_config model_config hkt_opt)
targets=("$@")
if ((${#targets[@]} == 0)); then targets=("${all[@]}"); fi
for t in "${targets[@]}"; do
  if [[ ! " ${all[*]} " == *" $t "* ]]; then
    echo "fuzz: unknown target '$t' (targets: ${all[*]})" >&2
    exit 2
  fi
done

# Packages (and build/ is not needed): setup.sh installs them, then we
# configure our own build directory with clang.
HKT_SETUP_NO_BUILD=1 "$root/scripts/setup.sh"
llvm=/usr/lib/llvm-22
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER="$llvm/bin/clang" \
    -DCMAKE_CXX_COMPILER="$llvm/bin/clang++" \
    -DMLIR_DIR="$llvm/lib/cmake/mlir" \
    -DMLIR_LINK_MLIR_DYLIB=ON \
    -DLLVM_EXTERNAL_LIT="$llvm/bin/lit" \
    -DHKT_SANITIZE="address;undefined" \
    -DHKT_FUZZ=ON
fi
cmake --build "$build" -j "${HKT_JOBS:-$(nproc)}" \
  --target "${targets[@]/#/hkt-fuzz-}"

supp="$root/test/sanitizers"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$supp/lsan.supp}"

# Inputs up to 64 KiB (a header, a manifest, a small IR file), 2 GiB of RSS,
# 10 s per input: beyond that an input is a finding (a hang or a blow-up).
run_target() {
  local t=$1 work="$build/fuzz/$1"
  mkdir -p "$work/corpus" "$work/artifacts"
  cp -n "$root/test/fuzz/corpus/$t"/* "$work/corpus/" 2>/dev/null || true
  local log="$work/fuzz.log"
  set +e
  "$build/bin/hkt-fuzz-$t" "$work/corpus" "$root/test/fuzz/regressions/$t" \
    -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$work/artifacts/" >"$log" 2>&1
  echo $? >"$work/status"
  set -e
}

jobs_max="${HKT_FUZZ_JOBS:-1}"
for t in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs_max)); do wait -n || true; done
  echo "fuzz: $t for $seconds s (log: $build/fuzz/$t/fuzz.log)"
  run_target "$t" &
done
wait

failed=0
printf '\n| target | seconds | runs | exec/s | coverage (edges) | corpus | findings |\n'
printf '|---|---|---|---|---|---|---|\n'
for t in "${targets[@]}"; do
  work="$build/fuzz/$t"
  log="$work/fuzz.log"
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo "?")
  corpus=$(find "$work/corpus" -type f | wc -l)
  findings=$(find "$work/artifacts" -type f | wc -l)
  if [ "$(cat "$work/status")" != 0 ] || [ "$findings" != 0 ]; then failed=1; fi
  printf '| %s | %s | %s | %s | %s | %s | %s |\n' \
    "$t" "$seconds" "$runs" "$rate" "$cov" "$corpus" "$findings"
done
exit $failed
