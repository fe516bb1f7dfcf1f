//===- CompiledModule.h - Loading and calling compiled modules --*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// A CompiledModule is a directory written by hkt-compile (manifest.json and a
// shared object; see docs/module-format.md) loaded into the process. Its
// entries are called with host tensors, which are checked against the
// manifest (count, dtype, shape and dynamic-dimension bounds, integer ranges,
// aliasing) before the compiled code ever sees them.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_RUNTIME_COMPILEDMODULE_H
#define HKT_RUNTIME_COMPILEDMODULE_H

#include "runtime/Manifest.h"
#include "runtime/Status.h"
#include "runtime/Tensor.h"

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace hkt::runtime {

class DeviceTensor;

/// One callable entry of a loaded module.
class Entry {
public:
  /// The compiled function: one pointer per argument then per result, each
  /// to a memref descriptor.
  using Function = void (*)(void **);

  /// `cuda`: the entry's host code launches kernels through the mgpu*
  /// functions (CudaDriver.h), whose driver errors the call reports.
  Entry(const EntrySpec *spec, Function fn, bool cuda = false,
        Function deviceFn = nullptr)
      : entrySpec(spec), fn(fn), deviceFn(deviceFn), cuda(cuda) {}

  const EntrySpec &spec() const { return *entrySpec; }
  const std::string &name() const { return entrySpec->name; }

  /// Checks tensors against the manifest: their number, and the dtype and
  /// shape of each (dynamic dimensions within their bounds, the same size
  /// for the same symbol); every element of integer arguments with a
  /// `range`; that no written tensor (a result or an in-out argument)
  /// shares memory with another tensor.
  Status check(const std::vector<const Tensor *> &args,
               const std::vector<const Tensor *> &results) const;

  /// The shapes of the results for a call with `args` (checked as in
  /// `check`): dynamic dimensions take the sizes the arguments give them.
  Expected<std::vector<std::vector<int64_t>>>
  resultShapes(const std::vector<const Tensor *> &args) const;

  /// Checks (as `check`) then calls the entry, which writes into `results`
  /// and overwrites each in-out argument with its new value. `args` holds
  /// every argument in manifest order, in-out ones included. The tensors
  /// must stay alive for the call.
  Status call(const std::vector<Tensor *> &args,
              const std::vector<Tensor *> &results) const;

  /// Whether the entry has a device twin (a GPU module's entries do).
  bool hasDeviceTwin() const { return deviceFn != nullptr; }
  /// Calls the device twin on tensors in the module's device memory
  /// (DeviceMemory.h), which stay there: nothing is copied in or out.
  /// Checks the count, dtypes, shapes and aliasing as `call` does; integer
  /// ranges are the caller's to check on the host tensors it uploaded.
  Status callOnDevice(const std::vector<DeviceTensor *> &args,
                      const std::vector<DeviceTensor *> &results) const;

private:
  const EntrySpec *entrySpec;
  Function fn, deviceFn;
  bool cuda;
};

/// A module directory loaded into the process.
/// A compiled module mallocs and frees its working buffers (tens of MiB) on
/// every call. glibc serves them with fresh mmaps, so each call pays a page
/// fault and a zeroed page per 4 KiB; from the heap, not trimmed back,
/// later calls reuse the pages (peak RSS is unchanged; freed memory stays
/// with the process). M_MMAP_THRESHOLD cannot exceed 32 MiB (mallopt
/// refuses more), so mmap is turned off instead (glibc still falls back to
/// it where the heap cannot grow). Process-wide: hkt-run calls it at start,
/// the C API when it opens a module (at T = 16384 the gradient call spent
/// 13% of its time zeroing fresh pages; through Python at T = 1024, D = 512
/// it took 238 ms instead of 161).
void keepLargeBuffersOnHeap();

/// Open MPI's library (libmpi.so.40, or $HKT_MPI_LIBRARY), loaded once and
/// global, as a data-parallel module needs it (docs/module-format.md, "Data
/// parallel"): its handle, or a message that says what to install. Never
/// linked: a process without MPI runs every other module.
Expected<void *> openMpiLibrary();

class CompiledModule {
public:
  struct Options {
    /// The CPU flags (cpuinfo names) to check the module's features against;
    /// null means this machine's (hostCpuFlags()). For tests.
    const std::set<std::string> *cpuFlags = nullptr;
  };

  /// Reads `dir`/manifest.json, checks the target against this machine
  /// (its kind: cpu modules only; the host code's architecture and CPU
  /// features), loads the shared object and resolves every entry's symbol.
  static Expected<std::unique_ptr<CompiledModule>> open(const std::string &dir,
                                                        const Options &options);
  static Expected<std::unique_ptr<CompiledModule>>
  open(const std::string &dir) {
    return open(dir, Options());
  }

  /// The shared object stays loaded for the life of the process (see the
  /// implementation for why).
  ~CompiledModule() = default;
  CompiledModule(const CompiledModule &) = delete;
  CompiledModule &operator=(const CompiledModule &) = delete;

  const std::string &directory() const { return dir; }
  const Manifest &manifest() const { return mf; }
  const std::vector<Entry> &entries() const { return entryList; }
  /// The entry called `name`, or null.
  const Entry *findEntry(const std::string &name) const;

private:
  CompiledModule() = default;

  std::string dir;
  Manifest mf;
  std::vector<Entry> entryList;
};

} // namespace hkt::runtime

#endif // HKT_RUNTIME_COMPILEDMODULE_H
