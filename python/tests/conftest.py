"""What every test of the package shares: a compile cache of its own per
run, and a fresh seed per test file (HKT_TEST_SEED reproduces one)."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "test", "reference"))
from hkt_seed import pick_seed  # noqa: E402


@pytest.fixture(autouse=True)
def cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("HKT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture(scope="module")
def rng(request):
    return np.random.default_rng(pick_seed(os.path.basename(request.module.__file__)))
