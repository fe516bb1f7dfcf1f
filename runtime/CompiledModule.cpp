//===- CompiledModule.cpp - Loading and calling compiled modules ----------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "runtime/CompiledModule.h"
#include "runtime/CudaDriver.h"
#include "runtime/MemoryCheck.h"
#include "runtime/CpuFeatures.h"
#include "runtime/Internal.h"

#include <cstring>
#include <dlfcn.h>

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
Status checkArgs(const EntrySpec &spec,
                 const std::vector<const Tensor *> &tensors, DimSizes &sizes) {
  if (tensors.size() != spec.args.size())
    return Status::error(
        concat("entry '", spec.name, "' takes ", spec.args.size(), " input",
               spec.args.size() == 1 ? "" : "s", ", got ", tensors.size()));
  for (size_t i = 0; i < spec.args.size(); ++i) {
    const TensorSpec &s = spec.args[i];
    const Tensor *t = tensors[i];
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
  return Status::success();
}

/// Checks the results against the shapes the arguments' sizes give them.
Status checkResults(const EntrySpec &spec,
                    const std::vector<const Tensor *> &tensors,
                    const DimSizes &sizes) {
  if (tensors.size() != spec.results.size())
    return Status::error(
        concat("entry '", spec.name, "' takes ", spec.results.size(), " result",
               spec.results.size() == 1 ? "" : "s", ", got ", tensors.size()));
  for (size_t i = 0; i < spec.results.size(); ++i) {
    const TensorSpec &s = spec.results[i];
    const Tensor *t = tensors[i];
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
Status checkAliasing(const EntrySpec &spec,
                     const std::vector<const Tensor *> &args,
                     const std::vector<const Tensor *> &results) {
  struct Span {
    const char *begin, *end;
    bool written;
    std::string who;
  };
  std::vector<Span> spans;
  auto add = [&](const Tensor *t, bool written, std::string who) {
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
std::vector<int64_t> makeDescriptor(Tensor &t) {
  std::vector<int64_t> d;
  d.reserve(3 + 2 * t.shape().size());
  int64_t ptr = static_cast<int64_t>(reinterpret_cast<intptr_t>(t.data()));
  d.push_back(ptr);
  d.push_back(ptr);
  d.push_back(0);
  d.insert(d.end(), t.shape().begin(), t.shape().end());
  std::vector<int64_t> strides = t.strides();
  d.insert(d.end(), strides.begin(), strides.end());
  return d;
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
    return checkCpuFeatures(mf, dir, *flags);
  return Status::success();
}

} // namespace

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
    std::vector<std::vector<int64_t>> descriptors;
    descriptors.reserve(args.size() + results.size());
    for (Tensor *t : args)
      descriptors.push_back(makeDescriptor(*t));
    for (Tensor *t : results)
      descriptors.push_back(makeDescriptor(*t));
    std::vector<void *> pointers;
    for (std::vector<int64_t> &d : descriptors)
      pointers.push_back(d.data());
    fn(pointers.data());
    if (cuda) {
      // A failed launch or copy leaves the results undefined and may leave
      // device buffers allocated: free them and say what failed.
      if (std::string error = takeCudaError(); !error.empty()) {
        size_t freed = freeLeakedCudaMemory();
        return Status::error(concat(
            "entry '", name(), "' failed on the device: ", error,
            freed ? concat("; freed ", freed, " device buffers it left") : ""));
      }
    }
    return Status::success();
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
      m->entryList.emplace_back(&spec, fn,
                                m->mf.target.kind == TargetKind::Cuda);
    }
    return Result(std::move(m));
  });
}
