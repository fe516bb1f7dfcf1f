"""ctypes bindings of the runtime's C API (runtime/capi/hkt_runtime.h).

The library is found at $HKT_RUNTIME_LIBRARY, else in the build tree next to
this package (build/lib/libhkt_runtime.so of the repository it lives in). It
is loaded RTLD_GLOBAL: a GPU module's host code calls the runtime's mgpu*
functions, which the dynamic linker must see when the module is opened.
"""
import ctypes
import os

API_VERSION = 1

# enum HktDType, in manifest spelling.
DTYPES = {"f32": 0, "f64": 1, "i32": 2, "i64": 3}


class HktTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p),
                ("dtype", ctypes.c_int32),
                ("rank", ctypes.c_int32),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64))]


def library_path():
    env = os.environ.get("HKT_RUNTIME_LIBRARY")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "..", "..", "build", "lib", "libhkt_runtime.so")


_lib = None

def lib():
    """The loaded library, its functions typed; raises ImportError with the
    path tried and how to build it when it is missing."""
    global _lib
    if _lib is not None:
        return _lib
    path = library_path()
    if not os.path.exists(path):
        raise ImportError(
            "hkt: the runtime library %s does not exist: build it with "
            "scripts/setup.sh (or set HKT_RUNTIME_LIBRARY)" % os.path.normpath(path))
    l = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    l.hkt_api_version.restype = ctypes.c_int32
    if l.hkt_api_version() != API_VERSION:
        raise ImportError("hkt: %s has C API version %d, this package needs %d"
                          % (path, l.hkt_api_version(), API_VERSION))
    err = ctypes.POINTER(ctypes.c_char_p)
    l.hkt_module_open.restype = ctypes.c_void_p
    l.hkt_module_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    l.hkt_module_close.argtypes = [ctypes.c_void_p]
    l.hkt_module_manifest.restype = ctypes.c_char_p
    l.hkt_module_manifest.argtypes = [ctypes.c_void_p]
    l.hkt_entry_result_shapes.restype = ctypes.c_int
    l.hkt_entry_result_shapes.argtypes = [
        ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(HktTensor),
        ctypes.c_int64, ctypes.POINTER(ctypes.c_int64), ctypes.c_int64,
        ctypes.POINTER(ctypes.c_void_p)]
    l.hkt_entry_call.restype = ctypes.c_int
    l.hkt_entry_call.argtypes = [
        ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(HktTensor),
        ctypes.c_int64, ctypes.POINTER(HktTensor), ctypes.c_int64,
        ctypes.POINTER(ctypes.c_void_p)]
    l.hkt_free_error.argtypes = [ctypes.c_void_p]
    del err
    _lib = l
    return l


class Error(RuntimeError):
    """A refusal or failure of the runtime, its message as the runtime
    wrote it (one sentence naming the argument and the problem)."""


def check(status, error):
    """Raises Error with the runtime's message if `status` is nonzero."""
    if status == 0:
        return
    message = "unknown error"
    if error.value:
        message = ctypes.cast(error.value, ctypes.c_char_p).value.decode(
            "utf-8", "replace")
        lib().hkt_free_error(error.value)
    raise Error(message)
