#!/usr/bin/env bash
# The test command: installs and builds (scripts/setup.sh), then runs every
# test: the lit suite (dialect round trips and verifier diagnostics, one file
# per pass, tools, numerical integration tests against the float64 reference,
# the reference's own checks) and the runtime's GoogleTest unit tests.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${HKT_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh"
echo "hkt: setup (install + build) took $SECONDS s"

results="$build/test-results.json"
start=$SECONDS
set +e
/usr/lib/llvm-22/bin/lit -sv --time-tests -o "$results" "$build/test" "$build/test/Unit"
status=$?
set -e

# One closing line that any CI reader understands.
summary() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import json, sys
tests = json.load(open(sys.argv[2]))["tests"]
ok = sum(t["code"] in ("PASS", "XFAIL") for t in tests)
bad = sum(t["code"] in ("FAIL", "XPASS", "UNRESOLVED", "TIMEOUT") for t in tests)
skipped = sum(t["code"] in ("UNSUPPORTED", "SKIPPED") for t in tests)
print(f"{sys.argv[1]}: {ok} passed, {bad} failed, {skipped} skipped")
PY
}
summary hkt "$results"
echo "hkt: $((SECONDS - start)) s (tests)"

# The sanitizer pass: the same tests' fast part (unit tests, tools, dialect,
# passes, one small integration test) on a build with ASan + UBSan in
# build-asan/. HKT_SANITIZER_PASS=0 skips it locally; CI runs it.
if [ "${HKT_SANITIZER_PASS:-1}" != 0 ]; then
  asan="${HKT_ASAN_BUILD_DIR:-$root/build-asan}"
  start=$SECONDS
  HKT_BUILD_DIR="$asan" HKT_SANITIZE="address;undefined" "$root/scripts/setup.sh"
  supp="$root/test/sanitizers"
  # intercept_tls_get_addr=0: g++ 12's LeakSanitizer misreads the dynamic TLS
  # of libomp's worker threads (a bogus "DTLS 5 at 0x100000130" range) and
  # its tracer dies of SIGSEGV at exit of every hkt-run that ran a parallel
  # module; without the interception it does not scan dynamic TLS blocks,
  # which hold only libomp's own (suppressed) allocations.
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:intercept_tls_get_addr=0}"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp}"
  export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$supp/lsan.supp}"
  asan_results="$asan/test-results.json"
  set +e
  /usr/lib/llvm-22/bin/lit -sv -o "$asan_results" \
    "$asan/test/Unit" "$asan/test/Dialect" "$asan/test/Passes" \
    "$asan/test/Tools" "$asan/test/Integration/portable.test"
  asan_status=$?
  set -e
  summary "hkt-asan" "$asan_results"
  echo "hkt-asan: $((SECONDS - start)) s (build + tests)"
  if [ "$status" -eq 0 ]; then status=$asan_status; fi
fi
exit $status
