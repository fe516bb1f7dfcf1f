#!/usr/bin/env bash
# The test command: installs and builds (scripts/setup.sh), then runs every
# test: the lit suite (dialect round trips and verifier diagnostics, one file
# per pass, tools, numerical integration tests against the float64 reference,
# the reference's own checks) and the runtime's GoogleTest unit tests.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${HKT_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh"

results="$build/test-results.json"
set +e
/usr/lib/llvm-22/bin/lit -sv --time-tests -o "$results" "$build/test" "$build/test/Unit"
status=$?
set -e

# One closing line that any CI reader understands.
/usr/bin/python3 - "$results" <<'PY'
import json, sys
tests = json.load(open(sys.argv[1]))["tests"]
ok = sum(t["code"] in ("PASS", "XFAIL") for t in tests)
bad = sum(t["code"] in ("FAIL", "XPASS", "UNRESOLVED", "TIMEOUT") for t in tests)
skipped = sum(t["code"] in ("UNSUPPORTED", "SKIPPED") for t in tests)
print(f"hkt: {ok} passed, {bad} failed, {skipped} skipped")
PY
exit $status
