"""The seed of a random test: HKT_TEST_SEED if set, else a fresh one from
os.urandom, printed to stderr at once so that lit shows it on failure (also
when the script's stdout goes to FileCheck) and the run can be reproduced:

    HKT_TEST_SEED=1234 lit -v build/test/Integration/lengths.test

lit passes HKT_TEST_SEED through (test/lit.cfg.py).
"""

import os
import sys


def pick_seed(what=None):
    """Returns the seed (an int in [0, 2**32)) and prints it to stderr."""
    text = os.environ.get("HKT_TEST_SEED", "").strip()
    if text:
        try:
            seed = int(text, 0)
        except ValueError:
            sys.exit("%s: HKT_TEST_SEED=%r is not an integer" % (
                what or os.path.basename(sys.argv[0]), text))
        if not 0 <= seed < 2**32:
            sys.exit("%s: HKT_TEST_SEED=%d is outside [0, 2**32)" % (
                what or os.path.basename(sys.argv[0]), seed))
        source = "from HKT_TEST_SEED"
    else:
        seed = int.from_bytes(os.urandom(4), "little")
        source = "fresh; HKT_TEST_SEED=%d reproduces this run" % seed
    print("%s: seed=%d (%s)" % (what or os.path.basename(sys.argv[0]), seed, source),
          file=sys.stderr, flush=True)
    return seed
