//===- CompiledModule.cpp - Loading and calling compiled modules ----------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "runtime/CompiledModule.h"
#include "runtime/CpuFeatures.h"
#include "runtime/CudaDriver.h"
#include "runtime/DeviceMemory.h"
#include "runtime/Internal.h"
#include "runtime/MemoryCheck.h"
#include "runtime/ModuleFormat.h"
#include "runtime/Nccl.h"

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <malloc.h>
#include <type_traits>

using namespace hkt::runtime;
using namespace hkt::runtime::detail;

static_assert(sizeof(void *) == sizeof(int64_t),
              "memref descriptors are built as int64_t arrays");

namespace {

/// "row 3" for a 1-D tensor, "index [0,2,5]" otherwise, "" for a scalar.
std::string describeIndex(const std::vector<int64_t> &shape, int64_t flat) {
  if (shape.empty())
    return "";
  if (shape.size() == 1)
    return concat(" at row ", flat);
  std::vector<int64_t> index(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    index[i] = shape[i] ? flat % shape[i] : 0;
    flat = shape[i] ? flat / shape[i] : 0;
  }
  return " at index " + formatShape(index);
}

/// Binds the dynamic dimensions of the arguments (in order: the first
/// argument with a symbol gives its size) and checks every argument's dtype,
/// shape and range.
/// Device tensors (DeviceMemory.h) are checked for dtype and shape only:
/// their elements are not readable here, and the caller checked the
/// ranges of the host tensors they were uploaded from.
template <typename T>
Status checkArgs(const EntrySpec &spec, const std::vector<const T *> &tensors,
                 DimSizes &sizes) {
  if (tensors.size() != spec.args.size())
    return Status::error(
        concat("entry '", spec.name, "' takes ", spec.args.size(), " input",
               spec.args.size() == 1 ? "" : "s", ", got ", tensors.size()));
  for (size_t i = 0; i < spec.args.size(); ++i) {
    const TensorSpec &s = spec.args[i];
    const T *t = tensors[i];
    std::string who = concat("entry '", spec.name,
                             "': ", s.isInOut() ? "in-out argument" : "input",
                             " '", s.name, "'");
    if (!t)
      return Status::error(who + " is missing (null)");
    if (t->dtype() != s.dtype)
      return Status::error(concat(who, " has dtype ", dtypeName(t->dtype()),
                                  ", expected ", dtypeName(s.dtype)));
    if (Status st = s.matchShape(t->shape(), sizes, who); !st.ok())
      return st;
    if constexpr (std::is_same_v<T, Tensor>) {
      if (!s.range)
        continue;
      auto [lo, hi] = *s.range;
      for (int64_t e = 0, n = t->numElements(); e < n; ++e) {
        int64_t v = t->elementAsInt(e);
        if (v < lo || v > hi)
          return Status::error(
              concat(who, " has value ", v, describeIndex(t->shape(), e),
                     ", outside its range [", lo, ", ", hi, "]"));
      }
    }
  }
  return Status::success();
}

/// Checks the results against the shapes the arguments' sizes give them.
template <typename T>
Status checkResults(const EntrySpec &spec,
                    const std::vector<const T *> &tensors,
                    const DimSizes &sizes) {
  if (tensors.size() != spec.results.size())
    return Status::error(
        concat("entry '", spec.name, "' takes ", spec.results.size(), " result",
               spec.results.size() == 1 ? "" : "s", ", got ", tensors.size()));
  for (size_t i = 0; i < spec.results.size(); ++i) {
    const TensorSpec &s = spec.results[i];
    const T *t = tensors[i];
    std::string who = concat("entry '", spec.name, "': result '", s.name, "'");
    if (!t)
      return Status::error(who + " is missing (null)");
    if (t->dtype() != s.dtype)
      return Status::error(concat(who, " has dtype ", dtypeName(t->dtype()),
                                  ", expected ", dtypeName(s.dtype)));
    std::vector<int64_t> expected = s.concreteShape(sizes);
    if (t->shape() != expected)
      return Status::error(concat(who, " has shape ", formatShape(t->shape()),
                                  ", expected ", formatShape(expected)));
  }
  return Status::success();
}

/// The compiled code writes results and in-out arguments while it reads the
/// other tensors: a written tensor must share no memory with any other
/// (docs/module-format.md, "Aliasing"). Inputs may share memory with each
/// other: they are only read.
template <typename T>
Status checkAliasing(const EntrySpec &spec, const std::vector<const T *> &args,
                     const std::vector<const T *> &results) {
  struct Span {
    const char *begin, *end;
    bool written;
    std::string who;
  };
  std::vector<Span> spans;
  auto add = [&](const T *t, bool written, std::string who) {
    const char *p = static_cast<const char *>(t->data());
    if (p && t->byteSize() > 0)
      spans.push_back({p, p + t->byteSize(), written, std::move(who)});
  };
  for (size_t i = 0; i < args.size(); ++i)
    add(args[i], spec.args[i].isInOut(),
        concat(spec.args[i].isInOut() ? "in-out argument '" : "input '",
               spec.args[i].name, "'"));
  for (size_t i = 0; i < results.size(); ++i)
    add(results[i], true, concat("result '", spec.results[i].name, "'"));
  for (size_t i = 0; i < spans.size(); ++i)
    for (size_t j = i + 1; j < spans.size(); ++j)
      if ((spans[i].written || spans[j].written) &&
          spans[i].begin < spans[j].end && spans[j].begin < spans[i].end)
        return Status::error(
            concat("entry '", spec.name, "': ", spans[i].who, " and ",
                   spans[j].who, " share memory, but the call writes ",
                   spans[i].written ? spans[i].who : spans[j].who));
  return Status::success();
}

/// An MLIR strided memref descriptor {allocated, aligned, offset, sizes[r],
/// strides[r]} laid out as int64_t words.
std::vector<int64_t> makeDescriptor(void *data,
                                    const std::vector<int64_t> &shape) {
  std::vector<int64_t> d;
  d.reserve(3 + 2 * shape.size());
  int64_t ptr = static_cast<int64_t>(reinterpret_cast<intptr_t>(data));
  d.push_back(ptr);
  d.push_back(ptr);
  d.push_back(0);
  d.insert(d.end(), shape.begin(), shape.end());
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    strides[i - 1] = strides[i] * shape[i];
  d.insert(d.end(), strides.begin(), strides.end());
  return d;
}

/// The descriptors of `args` then `results`, and a pointer to each.
template <typename T> struct Descriptors {
  std::vector<std::vector<int64_t>> words;
  std::vector<void *> pointers;
  Descriptors(const std::vector<T *> &args, const std::vector<T *> &results) {
    words.reserve(args.size() + results.size());
    for (const std::vector<T *> *list : {&args, &results})
      for (T *t : *list)
        words.push_back(makeDescriptor(t->data(), t->shape()));
    for (std::vector<int64_t> &d : words)
      pointers.push_back(d.data());
  }
};

/// After a cuda entry's call: a failed launch or copy leaves the results
/// undefined and may leave device buffers allocated; frees them and says
/// what failed.
Status cudaCallStatus(const std::string &name) {
  std::string error = takeCudaError();
  if (error.empty())
    return Status::success();
  size_t freed = freeLeakedCudaMemory();
  return Status::error(concat(
      "entry '", name, "' failed on the device: ", error,
      freed ? concat("; freed ", freed, " device buffers it left") : ""));
}

/// Refuses host code this machine cannot run: another architecture, or CPU
/// features it lacks.
Status checkHost(const Manifest &mf, const std::string &dir,
                 const CompiledModule::Options &options) {
#if defined(__x86_64__)
  // Only x86-64 hosts so far: refuse code for another architecture before
  // dlopen gives a less helpful "wrong ELF class" message.
  const std::string &triple = mf.target.triple;
  if (triple.rfind("x86_64", 0) != 0)
    return Status::error(concat("module '", dir, "' was compiled for '", triple,
                                "', which this x86_64 machine cannot run"));
#endif
  const std::set<std::string> *flags = options.cpuFlags;
  // Without /proc/cpuinfo the machine's features are unknown; refusing
  // every module would be worse than trusting the user.
  if (!flags && hostCpuFlags())
    flags = &*hostCpuFlags();
  if (flags)
    if (Status s = checkCpuFeatures(mf, dir, *flags); !s.ok())
      return s;
  // bf16 matmuls run on AMX tiles where the module may use them (as
  // hkt-compile chose), else on AVX512-BF16, which needs no permission.
  if (mf.target.usesAmx())
    if (Status s = requestAmxState(); !s.ok())
      return Status::error(concat("module '", dir, "': ", s.message()));
  return Status::success();
}

/// A data-parallel module calls MPI: the library goes in first, global, so
/// that the module's references to it resolve when it is loaded (and Open
/// MPI's own plugins find its symbols).
Status loadMpiLibrary(const DataParallelSpec &spec) {
  if (spec.mpi != "OpenMPI")
    return Status::error(
        concat("it calls MPI through ", inQuotes(spec.mpi),
               "'s ABI; this runtime loads Open MPI (recompile with "
               "hkt-compile --ranks, which targets Open MPI)"));
  Expected<void *> library = openMpiLibrary();
  if (!library)
    return Status::error(concat("it is data-parallel (compiled with --ranks ",
                                spec.ranks, ") and needs ", library.message()));
  return Status::success();
}

/// An entry that calls MPI collectives runs only inside an MPI job of its
/// ranks: called in a process where MPI is not initialised, Open MPI would
/// abort the process; in a job of another size, the sums would be wrong or
/// never complete. (Open MPI's ABI: MPI_Comm is a pointer.) An entry that
/// sums with NCCL needs the communicator hkt-run train makes over such a
/// job (or alone, for one rank).
Status checkCollectiveWorld(const EntrySpec &spec) {
  bool nccl = spec.collectiveBackend == hkt::format::backend::kNccl;
  std::string what = concat(
      "entry '", spec.name, "' sums over ", spec.collectiveRanks,
      nccl ? " ranks with NCCL" : " MPI ranks",
      " (a data-parallel module, hkt-compile --ranks ", spec.collectiveRanks,
      "): call it in every process of mpirun -np ", spec.collectiveRanks,
      nccl ? ", on the ranks' NCCL communicator (hkt-run train makes it)"
           : ", after MPI_Init (hkt-run train does both)");
  if (nccl) {
    if (int size = ncclWorldSize(); size != spec.collectiveRanks)
      return Status::error(
          size ? concat(what, "; this process's NCCL communicator has ", size,
                        " rank", size == 1 ? "" : "s")
               : what + "; this process has no NCCL communicator");
    return Status::success();
  }
  using Initialized = int (*)(int *);
  using CommSize = int (*)(void *, int *);
  auto initialized =
      reinterpret_cast<Initialized>(::dlsym(RTLD_DEFAULT, "MPI_Initialized"));
  auto commSize =
      reinterpret_cast<CommSize>(::dlsym(RTLD_DEFAULT, "MPI_Comm_size"));
  void *world = ::dlsym(RTLD_DEFAULT, "ompi_mpi_comm_world");
  int done = 0, size = 0;
  if (!initialized || !commSize || !world || initialized(&done) != 0 || !done)
    return Status::error(what + "; MPI is not initialised in this process");
  if (commSize(world, &size) != 0 || size != spec.collectiveRanks)
    return Status::error(concat(what, "; this MPI job has ", size, " process",
                                size == 1 ? "" : "es"));
  return Status::success();
}

} // namespace

void hkt::runtime::keepLargeBuffersOnHeap() {
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

Status Entry::check(const std::vector<const Tensor *> &args,
                    const std::vector<const Tensor *> &results) const {
  DimSizes sizes;
  if (Status s = checkArgs(*entrySpec, args, sizes); !s.ok())
    return s;
  if (Status s = checkResults(*entrySpec, results, sizes); !s.ok())
    return s;
  return checkAliasing(*entrySpec, args, results);
}

Expected<std::vector<std::vector<int64_t>>>
Entry::resultShapes(const std::vector<const Tensor *> &args) const {
  DimSizes sizes;
  if (Status s = checkArgs(*entrySpec, args, sizes); !s.ok())
    return s;
  std::vector<std::vector<int64_t>> shapes;
  for (const TensorSpec &r : entrySpec->results)
    shapes.push_back(r.concreteShape(sizes));
  return shapes;
}

Status Entry::call(const std::vector<Tensor *> &args,
                   const std::vector<Tensor *> &results) const {
  return guarded<Status>(concat("entry '", name(), "'"), [&]() -> Status {
    std::vector<const Tensor *> constArgs(args.begin(), args.end());
    std::vector<const Tensor *> constResults(results.begin(), results.end());
    if (Status s = check(constArgs, constResults); !s.ok())
      return s;
    if (spec().collectiveRanks)
      if (Status s = checkCollectiveWorld(spec()); !s.ok())
        return s;
    // The working memory the compiled code will allocate must fit in what
    // is left (the arguments and results are allocated already).
    if (uint64_t working = workingMemory(spec(), openmpThreadCount())) {
      Expected<MemoryInfo> info = readMemoryInfo();
      if (!info)
        return info.status();
      MemoryNeed need;
      need.working = working;
      need.buffersAllocated = true;
      if (Status s = checkMemory(name(), need, *info); !s.ok())
        return s;
    }
    Descriptors<Tensor> d(args, results);
    fn(d.pointers.data());
    return cuda ? cudaCallStatus(name()) : Status::success();
  });
}

Status Entry::callOnDevice(const std::vector<DeviceTensor *> &args,
                           const std::vector<DeviceTensor *> &results) const {
  return guarded<Status>(concat("entry '", name(), "'"), [&]() -> Status {
    if (!deviceFn)
      return Status::error(concat("entry '", name(),
                                  "' has no device twin (a module compiled "
                                  "for nvvm or gpu-emulation has one)"));
    std::vector<const DeviceTensor *> constArgs(args.begin(), args.end());
    std::vector<const DeviceTensor *> constResults(results.begin(),
                                                   results.end());
    DimSizes sizes;
    if (Status s = checkArgs(spec(), constArgs, sizes); !s.ok())
      return s;
    if (Status s = checkResults(spec(), constResults, sizes); !s.ok())
      return s;
    if (Status s = checkAliasing(spec(), constArgs, constResults); !s.ok())
      return s;
    Descriptors<DeviceTensor> d(args, results);
    deviceFn(d.pointers.data());
    return cuda ? cudaCallStatus(name()) : Status::success();
  });
}

const Entry *CompiledModule::findEntry(const std::string &name) const {
  for (const Entry &e : entryList)
    if (e.name() == name)
      return &e;
  return nullptr;
}

Expected<std::unique_ptr<CompiledModule>>
CompiledModule::open(const std::string &dir, const Options &options) {
  using Result = Expected<std::unique_ptr<CompiledModule>>;
  return guarded<Result>(concat("module '", dir, "'"), [&]() -> Result {
    std::unique_ptr<CompiledModule> m(new CompiledModule());
    m->dir = dir;
    Expected<Manifest> manifest =
        readManifest(dir + "/" + hkt::format::kManifestFile);
    if (!manifest)
      return Status::error(
          concat("cannot load module '", dir, "': ", manifest.message()));
    m->mf = std::move(manifest).value();

    switch (m->mf.target.kind) {
    case TargetKind::Cpu:
      break;
    case TargetKind::Cuda: {
      // The driver and the device are checked before the shared object is
      // loaded: its constructor loads the kernels (mgpuModuleLoad).
      linkCudaRuntimeWrappers();
      Expected<CudaDevice> device = cudaDevice();
      if (!device)
        return Status::error(concat("cannot run module '", dir,
                                    "' (it targets cuda, ", m->mf.target.arch,
                                    "): ", device.message()));
      if (Status s = checkCudaArch(m->mf.target.arch, *device); !s.ok())
        return Status::error(
            concat("cannot run module '", dir, "': ", s.message()));
      break;
    }
    }
    if (Status s = checkHost(m->mf, dir, options); !s.ok())
      return s;

    // (A module that sums with NCCL calls no MPI itself: hkt-run train
    // opens MPI where it starts several ranks.)
    if (m->mf.dataParallel &&
        m->mf.dataParallel->backend == hkt::format::backend::kMpi)
      if (Status s = loadMpiLibrary(*m->mf.dataParallel); !s.ok())
        return Status::error(
            concat("cannot load module '", dir, "': ", s.message()));

    std::string library = dir + "/" + m->mf.library;
    // The handle is never dlclose'd: compiled code may pull in an OpenMP
    // runtime whose worker threads would crash if their code were unmapped,
    // and a process loads few modules.
    void *handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *err = ::dlerror();
      return Status::error(
          concat("cannot load module '", dir,
                 "': dlopen failed: ", err ? err : "unknown error"));
    }
    if (m->mf.target.kind == TargetKind::Cuda)
      if (std::string error = takeCudaError(); !error.empty())
        return Status::error(concat("cannot load module '", dir,
                                    "': its kernels did not load: ", error));
    for (const EntrySpec &spec : m->mf.entries) {
      ::dlerror();
      void *sym = ::dlsym(handle, spec.symbol.c_str());
      if (!sym)
        return Status::error(concat("cannot load module '", dir, "': entry '",
                                    spec.name, "': symbol '", spec.symbol,
                                    "' is not in ", library));
      Entry::Function fn;
      static_assert(sizeof(fn) == sizeof(sym));
      std::memcpy(&fn, &sym, sizeof(fn));
      Entry::Function deviceFn = nullptr;
      if (!spec.deviceSymbol.empty()) {
        void *twin = ::dlsym(handle, spec.deviceSymbol.c_str());
        if (!twin)
          return Status::error(concat("cannot load module '", dir, "': entry '",
                                      spec.name, "': device symbol '",
                                      spec.deviceSymbol, "' is not in ",
                                      library));
        std::memcpy(&deviceFn, &twin, sizeof(deviceFn));
      }
      m->entryList.emplace_back(
          &spec, fn, m->mf.target.kind == TargetKind::Cuda, deviceFn);
    }
    return Result(std::move(m));
  });
}

Expected<void *> hkt::runtime::openMpiLibrary() {
  static std::string error;
  static void *handle = [] {
    const char *path = std::getenv("HKT_MPI_LIBRARY");
    std::string library = path && *path ? path : "libmpi.so.40";
    void *h = ::dlopen(library.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
      const char *err = ::dlerror();
      error = concat("Open MPI's library ", library, ", which did not load (",
                     err ? err : "unknown error",
                     "); install Open MPI (Debian: apt-get install "
                     "openmpi-bin) or set HKT_MPI_LIBRARY to its libmpi.so");
    }
    return h;
  }();
  if (!handle)
    return Status::error(error);
  return handle;
}
