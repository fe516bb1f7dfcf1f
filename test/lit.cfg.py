# -*- Python -*-
# lit configuration for the HKT regression tests: IR round trips and verifier
# diagnostics, one file per pass, tool errors, and integration tests that
# compile, run and compare numbers with an independent float64 reference.
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "HKT"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.hkt_obj_root, "test")
# Unit/ is its own suite (GoogleTest); reference/ holds the Python reference.
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py",
                   "Inputs", "Unit", "reference"]

# HKT_TEST_SEED: the seed of every random test (test/reference/hkt_seed.py);
# unset, each test picks a fresh one and prints it.
llvm_config.with_system_environment(["HOME", "TMPDIR", "OMP_NUM_THREADS",
                                     "HKT_TEST_SEED"])
llvm_config.use_default_substitutions()
config.environment["FILECHECK_OPTS"] = "-enable-var-scope"

# Inserted first: lit's own %p would otherwise eat the start of %python.
reference_dir = os.path.join(config.hkt_src_root, "test", "reference")
config.substitutions.insert(0, ("%python", config.hkt_python))
config.substitutions.insert(0, ("%reference", reference_dir))
config.substitutions.insert(
    0, ("%examples", os.path.join(config.hkt_src_root, "examples")))

tool_dirs = [config.hkt_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["hkt-opt", "hkt-compile", "hkt-run"],
                                   tool_dirs)
llvm_config.with_environment("PATH", config.hkt_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
