"""lit parallelism groups of test/Integration (lit.local.cfg)."""

GPU_EMULATION = "gpu-emulation"


def group_of(test):
    """The emulated GPU tests share one group of width 1; the rest none."""
    name = test.path_in_suite[-1]
    return GPU_EMULATION if name.startswith("gpu-emulation") else None
