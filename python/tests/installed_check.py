"""Run by test/Python/pip-install.test with only the pip-installed package on
the path (not python/): `import hkt` comes from the installation, finds the
runtime through $HKT_RUNTIME_LIBRARY and the compiler through $HKT_COMPILE,
compiles a layer into its cache and calls it; the result against the float64
reference on fresh random inputs. Prints where hkt came from and the error.
"""
import os
import sys

import numpy as np

site, reference = sys.argv[1], sys.argv[2]
sys.path.insert(0, reference)
import hkt  # noqa: E402
import hkt_reference as R  # noqa: E402

config = {"batch": 2, "seq_len": 24, "dim": 16, "heads": 2, "levels": 3,
          "causal": True}
module = hkt.compile_layer(config)
rng = np.random.default_rng()
cfg = R.full_cfg({k: v for k, v in config.items() if k not in ("batch", "seq_len")})
params = R.random_params(rng, cfg, config["dim"])
x = rng.standard_normal((2, 24, 16)).astype(np.float32)
y = module.layer(x, params=params)
ref = R.hkt_layer(x.astype(np.float64),
                  {k: v.astype(np.float64) for k, v in params.items()}, cfg)
err = float(np.abs(y - ref).max() / np.abs(ref).max())
inside = os.path.realpath(hkt.__file__).startswith(os.path.realpath(site) + os.sep)
print("hkt from %s: %s" % ("the installation" if inside else hkt.__file__,
                           "rel_err %.2g %s" % (err, "OK" if err < 1e-4 else "FAIL")))
