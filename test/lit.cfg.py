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
                   "Inputs", "Unit", "reference", "fuzz", "sanitizers"]

# HKT_TEST_SEED: the seed of every random test (test/reference/hkt_seed.py);
# unset, each test picks a fresh one and prints it.
# ASAN/UBSAN/LSAN_OPTIONS: for a build with HKT_SANITIZE (scripts/test.sh sets them).
llvm_config.with_system_environment(["HOME", "TMPDIR", "OMP_NUM_THREADS",
                                     "HKT_TEST_SEED", "ASAN_OPTIONS",
                                     "UBSAN_OPTIONS", "LSAN_OPTIONS"])
llvm_config.use_default_substitutions()
config.environment["FILECHECK_OPTS"] = "-enable-var-scope"

# Inserted first: lit's own %p would otherwise eat the start of %python.
reference_dir = os.path.join(config.hkt_src_root, "test", "reference")
config.substitutions.insert(0, ("%python", config.hkt_python))
config.substitutions.insert(0, ("%reference", reference_dir))
config.substitutions.insert(
    0, ("%examples", os.path.join(config.hkt_src_root, "examples")))
# The Python package and the C API library it loads (test/Python).
config.substitutions.insert(
    0, ("%hkt_python_package", os.path.join(config.hkt_src_root, "python")))
config.substitutions.insert(
    0, ("%hkt_runtime_library",
        os.path.join(config.hkt_obj_root, "lib", "libhkt_runtime.so")))
# PyTorch 2.x (scripts/torch-venv.sh, from scripts/setup.sh) for the custom
# operators and torch.compile; Debian's 1.13 (%python) for the rest.
config.substitutions.insert(
    0, ("%hkt_torch2_python",
        os.path.join(config.hkt_obj_root, "torch-venv", "bin", "python")))

tool_dirs = [config.hkt_tools_dir, config.llvm_tools_dir]
# hkt-fuzz-*: the fuzz targets of test/fuzz, run over files (FuzzerMain.cpp).
fuzz_targets = ["hkt-fuzz-" + t for t in
                ("npy", "safetensors", "manifest", "layer_config", "model_config",
                 "hkt_opt")]
llvm_config.add_tool_substitutions(["hkt-opt", "hkt-compile", "hkt-run"]
                                   + fuzz_targets, tool_dirs)
config.substitutions.insert(
    0, ("%fuzz", os.path.join(config.hkt_src_root, "test", "fuzz")))
# Data-parallel training under Open MPI's launcher (scripts/setup.sh installs
# openmpi-bin): as root it needs --allow-run-as-root, and more ranks than
# this machine's two cores --oversubscribe (which also makes idle ranks
# yield instead of spinning).
mpirun = "mpirun --allow-run-as-root --oversubscribe"
if config.environment.get("ASAN_OPTIONS"):
    # A sanitizer build: Open MPI's libraries have no frame pointers, so
    # LeakSanitizer needs the slow unwinder to see that a leak is theirs
    # (test/sanitizers/lsan.supp), and their components loaded at exit.
    mpirun = ("env ASAN_OPTIONS=%s:fast_unwind_on_malloc=0 "
              "OMPI_MCA_mca_base_component_disable_dlclose=1 %s"
              % (config.environment["ASAN_OPTIONS"], mpirun))
config.substitutions.insert(0, ("%mpirun", mpirun))
llvm_config.with_environment("PATH", config.hkt_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)


# What this machine can run, from the kernel's CPU flags (/proc/cpuinfo, the
# names the runtime's feature check uses): modules compiled with
# `hkt-compile --cpu x86-64-v3` / `x86-64-v4` run only where the host has the
# whole level (the x86-64 psABI levels). Tests for a level say
# `REQUIRES: host-x86-64-v4`; none may assume the host has, or lacks, a feature.
def host_cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "flags":
                    return set(value.split())
    except OSError:
        pass
    return set()


x86_64_levels = [
    ("host-x86-64-v2", {"cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2",
                        "ssse3"}),
    ("host-x86-64-v3", {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm",
                        "movbe", "xsave"}),
    ("host-x86-64-v4", {"avx512f", "avx512bw", "avx512cd", "avx512dq",
                        "avx512vl"}),
]
host_flags = host_cpu_flags()
needed = set()
for feature, flags in x86_64_levels:
    needed |= flags
    if needed <= host_flags:
        config.available_features.add(feature)
if "avx512f" in host_flags:
    config.available_features.add("host-avx512")
# AVX512-BF16 (Zen 4 and later, Cooper Lake, Sapphire Rapids and later): the
# other instructions of --precision bf16 on the cpu target (vdpbf16ps).
if {"avx512f", "avx512_bf16"} <= host_flags:
    config.available_features.add("host-avx512bf16")
else:
    lit_config.note("no AVX512-BF16 here: the tests that run --precision bf16 "
                    "cpu modules on it are unsupported")
# Intel AMX with bf16 (Sapphire Rapids and later): what hkt-compile
# --precision bf16 needs on the cpu target. Tests that run such modules say
# `REQUIRES: host-amx`; elsewhere lit reports them unsupported, with this note.
def kernel_grants_amx():
    """Whether Linux lets a process use the AMX tile state (kernel 5.16 on):
    the runtime's own request, arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA)."""
    import ctypes
    import platform
    if platform.machine() != "x86_64":
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.syscall(158, 0x1023, 18) == 0  # SYS_arch_prctl
    except (OSError, AttributeError):
        return False


if {"amx_tile", "amx_bf16", "avx512_bf16"} <= host_flags and kernel_grants_amx():
    config.available_features.add("host-amx")
else:
    lit_config.note("no AMX (amx_tile, amx_bf16, avx512_bf16, and the kernel's "
                    "grant of the tile state) here: the tests that run "
                    "--precision bf16 cpu modules are unsupported")


# The NVVM path (docs/gpu.md). `cuda-toolkit`: ptxas, fatbinary and libdevice
# under $CUDA_HOME or /usr/local/cuda, so that hkt-compile --target nvvm can
# build modules; tests of the GPU lowering that assemble PTX say
# `REQUIRES: cuda-toolkit` and are reported unsupported (with this reason in
# lit's list) where it is absent. `cuda-device`: a CUDA driver that loads and
# sees a device, only then do the numerical GPU tests run.
cuda_home = os.environ.get("CUDA_HOME") or "/usr/local/cuda"
if all(os.path.exists(os.path.join(cuda_home, f)) for f in
       ("bin/ptxas", "bin/fatbinary", "nvvm/libdevice/libdevice.10.bc")):
    config.available_features.add("cuda-toolkit")
    config.substitutions.append(("%cuda_home", cuda_home))
else:
    lit_config.note("no CUDA toolkit at %s: the tests that assemble PTX are "
                    "unsupported here" % cuda_home)
llvm_config.with_system_environment(["CUDA_HOME", "CUDA_VISIBLE_DEVICES"])


# `cuda-sass`: cuobjdump and nvdisasm (CUDA 13's toolkit here has neither;
# the PyPI wheels nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm do), found
# in $HKT_CUDA_SASS_TOOLS, on PATH or in the wheels' nvidia/cu13/bin of this
# Python: the SASS of the bf16 kernels must show the tensor cores (HMMA).
def cuda_sass_tools():
    import shutil
    import site
    dirs = [os.environ.get("HKT_CUDA_SASS_TOOLS", "")]
    dirs += [os.path.dirname(shutil.which("cuobjdump") or "")]
    try:  # (a virtualenv's site module may lack these)
        packages = site.getsitepackages() + [site.getusersitepackages()]
    except AttributeError:
        packages = []
    for p in packages:
        dirs.append(os.path.join(p, "nvidia", "cu13", "bin"))
    for d in dirs:
        if d and all(os.access(os.path.join(d, t), os.X_OK)
                     for t in ("cuobjdump", "nvdisasm")):
            return d
    return None


sass_tools = cuda_sass_tools()
if sass_tools and "cuda-toolkit" in config.available_features:
    config.available_features.add("cuda-sass")
    config.substitutions.append(("%cuobjdump",
                                 os.path.join(sass_tools, "cuobjdump")))
    config.environment["PATH"] = sass_tools + os.pathsep + \
        config.environment.get("PATH", "")
else:
    lit_config.note("no cuobjdump and nvdisasm: the SASS checks are "
                    "unsupported here (pip install nvidia-cuda-cuobjdump "
                    "nvidia-cuda-nvdisasm, or set HKT_CUDA_SASS_TOOLS)")
llvm_config.with_system_environment(["HKT_CUDA_SASS_TOOLS"])


def cuda_device_present():
    import ctypes
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    count = ctypes.c_int(0)
    return (cuda.cuInit(0) == 0 and
            cuda.cuDeviceGetCount(ctypes.byref(count)) == 0 and
            count.value > 0)


if cuda_device_present():
    config.available_features.add("cuda-device")
else:
    lit_config.note("no CUDA device: the numerical GPU tests are unsupported "
                    "here (scripts/gpu-check.sh runs them on a GPU machine)")
