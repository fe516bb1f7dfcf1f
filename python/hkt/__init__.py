"""hkt: the HKT compiler's runtime from Python.

    import hkt
    m = hkt.load("layer-module")            # a directory hkt-compile wrote
    m = hkt.compile_layer(config, max_seq_len=4096, backward=True)  # cached
    y = m.layer(x, params=weights)          # numpy in, numpy out, no copies
    grads = m.layer_grad(x, dy, params=weights)   # a dict of results

Each entry of the module's manifest is a method. Arguments are matched to
the manifest by name: positional ones fill its inputs in order, `params` (a
dict) and keywords fill the rest; an argument with a default (a layer's
`lengths`) may be left out. Arrays go in without a copy (numpy arrays, any
DLPack producer on the CPU: a PyTorch or JAX CPU tensor, or anything numpy
can view without copying),
must already have the manifest's dtype and be dense row-major; a result
comes back as a fresh numpy array (`torch.from_numpy` wraps it without a
copy). In-out arguments (a train step's parameters) are updated in place.
The runtime checks everything hkt-run checks and raises hkt.Error with its
message.
"""
import ctypes
import json

import numpy as np

from . import _capi
from ._capi import Error

# DLPack device types whose memory the CPU reads (kDLCPU, kDLCUDAHost,
# kDLROCMHost) and the names of the others a user meets.
_DLPACK_HOST_DEVICES = (1, 3, 11)
_DLPACK_DEVICE_NAMES = {2: "CUDA", 4: "OpenCL", 7: "Vulkan", 8: "Metal",
                        10: "ROCm", 13: "CUDA managed", 14: "oneAPI"}

__all__ = ["load", "compile_layer", "compile_model", "read_safetensors",
           "Module", "Entry", "Error"]

_NUMPY_DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32,
                 "i64": np.int64}


class Entry:
    """One entry of a module: call it with its arguments."""

    def __init__(self, module, spec):
        self.module = module
        self.spec = spec
        self.name = spec["name"]
        self.args = spec["args"]
        self.results = spec["results"]

    def __repr__(self):
        return "<hkt entry %s(%s) -> %s>" % (
            self.name, ", ".join(a["name"] for a in self.args),
            ", ".join(r["name"] for r in self.results))

    def _bind(self, positional, params, named):
        """Every argument's array, in manifest order."""
        given = dict(params or {})
        inputs = [a["name"] for a in self.args if a.get("role", "input") == "input"]
        if len(positional) > len(inputs):
            raise TypeError("%s takes %d positional inputs (%s), got %d"
                            % (self.name, len(inputs), ", ".join(inputs),
                               len(positional)))
        for name, value in zip(inputs, positional):
            given[name] = value
        for name, value in named.items():
            if value is not None:
                given[name] = value
        known = {a["name"] for a in self.args}
        unknown = sorted(set(given) - known)
        if unknown:
            raise TypeError("%s has no argument %s (arguments: %s)"
                            % (self.name, ", ".join(repr(u) for u in unknown),
                               ", ".join(a["name"] for a in self.args)))
        arrays = {}
        for a in self.args:
            if a["name"] in given:
                arrays[a["name"]] = self._array(a, given[a["name"]])
        sizes = self._symbol_sizes(arrays)
        out = []
        for a in self.args:
            if a["name"] in arrays:
                out.append(arrays[a["name"]])
            elif "default" in a:
                out.append(self._default(a, sizes))
            else:
                raise TypeError("%s: argument '%s' is missing" % (self.name, a["name"]))
        return out

    def _array(self, spec, value):
        """`value` as a numpy array without a copy, or a refusal naming the
        argument."""
        want = _NUMPY_DTYPES[spec["dtype"]]
        name = spec["name"]
        if not isinstance(value, np.ndarray) and hasattr(value, "__dlpack_device__"):
            # A DLPack producer (a PyTorch or JAX CPU tensor, ...): viewed
            # through the protocol. numpy marks such a view read-only (DLPack
            # has no such flag); the producer's memory is what an in-out
            # argument updates.
            device = value.__dlpack_device__()
            if int(device[0]) not in _DLPACK_HOST_DEVICES:
                raise Error("argument '%s' is on a %s device (DLPack device "
                            "type %d); this module runs on the CPU: pass host "
                            "memory" % (name, _DLPACK_DEVICE_NAMES.get(
                                int(device[0]), "non-host"), int(device[0])))
            arr = np.from_dlpack(value)
        else:
            try:
                arr = np.asarray(value)
            except Exception as e:  # e.g. a CUDA tensor: no host memory to view
                raise Error("argument '%s': cannot be viewed as a host array "
                            "(%s); this module runs on the CPU: pass host memory"
                            % (name, e))
            if spec.get("role") == "inout" and not arr.flags.writeable:
                raise Error("argument '%s' is read-only; the entry updates it "
                            "in place" % name)
        if arr.dtype != want:
            raise Error("argument '%s' is %s, the module takes %s (convert it "
                        "first: no copy is made here)"
                        % (name, arr.dtype, np.dtype(want)))
        return arr

    def _symbol_sizes(self, arrays):
        sizes = {}
        for a in self.args:
            arr = arrays.get(a["name"])
            if arr is None:
                continue
            for d, dim in enumerate(a.get("dims") or []):
                if dim and d < arr.ndim:
                    sizes.setdefault(dim["symbol"], arr.shape[d])
        return sizes

    def _default(self, spec, sizes):
        shape = []
        for d, n in enumerate(spec["shape"]):
            if n >= 0:
                shape.append(n)
                continue
            dim = (spec.get("dims") or [None] * len(spec["shape"]))[d]
            if not dim or dim["symbol"] not in sizes:
                raise TypeError("%s: argument '%s' has a default but its size "
                                "in dimension %d comes from no given argument"
                                % (self.name, spec["name"], d))
            shape.append(sizes[dim["symbol"]])
        return np.full(shape, spec["default"], _NUMPY_DTYPES[spec["dtype"]])

    def __call__(self, *positional, params=None, **named):
        arrays = self._bind(positional, params, named)
        views, keep = _views(arrays)
        lib = _capi.lib()
        error = ctypes.c_void_p()
        total_rank = sum(len(r["shape"]) for r in self.results)
        shapes = (ctypes.c_int64 * max(total_rank, 1))()
        _capi.check(lib.hkt_entry_result_shapes(
            self.module._handle, self.name.encode(), views, len(arrays),
            shapes, total_rank, ctypes.byref(error)), error)
        results, at = [], 0
        for r in self.results:
            rank = len(r["shape"])
            results.append(np.empty(tuple(shapes[at:at + rank]),
                                    _NUMPY_DTYPES[r["dtype"]]))
            at += rank
        result_views, keep_results = _views(results)
        _capi.check(lib.hkt_entry_call(
            self.module._handle, self.name.encode(), views, len(arrays),
            result_views, len(results), ctypes.byref(error)), error)
        del keep, keep_results
        if len(results) == 1:
            return results[0]
        return {r["name"]: arr for r, arr in zip(self.results, results)}


def _views(arrays):
    """HktTensor views of `arrays` (their strides passed as they are, so the
    runtime refuses a layout it cannot use); the ctypes buffers to keep
    alive for the call."""
    views = (_capi.HktTensor * max(len(arrays), 1))()
    keep = []
    for i, arr in enumerate(arrays):
        shape = (ctypes.c_int64 * max(arr.ndim, 1))(*arr.shape)
        strides = (ctypes.c_int64 * max(arr.ndim, 1))(
            *[s // arr.itemsize for s in arr.strides])
        keep += [shape, strides]
        views[i].data = arr.ctypes.data if arr.size else None
        views[i].dtype = _capi.DTYPES[{np.dtype(v): k for k, v in _NUMPY_DTYPES.items()}[arr.dtype]]
        views[i].rank = arr.ndim
        views[i].shape = shape
        views[i].strides = strides
    return views, keep


class Module:
    """A compiled module directory, opened in this process."""

    def __init__(self, directory):
        lib = _capi.lib()
        error = ctypes.c_void_p()
        handle = lib.hkt_module_open(str(directory).encode(), ctypes.byref(error))
        _capi.check(0 if handle else 1, error)
        self._handle = handle
        self.directory = str(directory)
        self.manifest = json.loads(lib.hkt_module_manifest(handle).decode())
        self.entries = {e["name"]: Entry(self, e) for e in self.manifest["entries"]}

    def __getattr__(self, name):
        entries = self.__dict__.get("entries", {})
        if name in entries:
            return entries[name]
        raise AttributeError("module %s has no entry '%s' (entries: %s)"
                             % (self.__dict__.get("directory"), name,
                                ", ".join(entries)))

    def call(self, entry, *args, **kwargs):
        """The entry named `entry` (a name that is not an identifier)."""
        if entry not in self.entries:
            raise AttributeError("module %s has no entry '%s' (entries: %s)"
                                 % (self.directory, entry, ", ".join(self.entries)))
        return self.entries[entry](*args, **kwargs)

    def close(self):
        if self.__dict__.get("_handle"):
            _capi.lib().hkt_module_close(self._handle)
            self._handle = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return "<hkt module %s: %s>" % (self.directory, ", ".join(self.entries))


def load(directory):
    """Opens a module directory written by hkt-compile."""
    return Module(directory)


def read_safetensors(path):
    """The tensors of a safetensors file (an hkt-run checkpoint: parameters
    under SPEC's names, AdamW moments under adam.m. / adam.v.) as numpy
    arrays, by name."""
    dtypes = {"F32": np.float32, "F64": np.float64, "I32": np.int32,
              "I64": np.int64}
    with open(path, "rb") as f:
        data = f.read()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + begin:8 + n + end],
                                  dtype=dtypes[info["dtype"]]).reshape(
                                      info["shape"]).copy()
    return out


from .compile import compile_layer, compile_model  # noqa: E402
