# -*- Python -*-
# lit configuration for the runtime's GoogleTest unit tests: every TEST in an
# executable ending in "-tests" under <build>/test/Unit is one lit test.
import os

import lit.formats

config.name = "HKT-Unit"
config.suffixes = []  # GoogleTest finds the tests, not file suffixes
config.test_format = lit.formats.GoogleTest(".", "-tests")

config.test_source_root = os.path.join(config.hkt_obj_root, "test", "Unit")
config.test_exec_root = config.test_source_root

# Sanitizer settings of a build with HKT_SANITIZE (scripts/test.sh sets them).
for name in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
    if name in os.environ:
        config.environment[name] = os.environ[name]
