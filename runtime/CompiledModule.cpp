//===- CompiledModule.cpp - Loading and calling compiled modules ----------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "runtime/CompiledModule.h"
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

Status checkTensors(const EntrySpec &spec,
                    const std::vector<const Tensor *> &tensors, bool areArgs) {
  const std::vector<TensorSpec> &specs = areArgs ? spec.args : spec.results;
  const char *kind = areArgs ? "input" : "result";
  if (tensors.size() != specs.size())
    return Status::error(concat("entry '", spec.name, "' takes ", specs.size(),
                                " ", kind, specs.size() == 1 ? "" : "s",
                                ", got ", tensors.size()));
  for (size_t i = 0; i < specs.size(); ++i) {
    const TensorSpec &s = specs[i];
    const Tensor *t = tensors[i];
    std::string who =
        concat("entry '", spec.name, "': ", kind, " '", s.name, "'");
    if (!t)
      return Status::error(who + " is missing (null)");
    if (t->dtype() != s.dtype)
      return Status::error(concat(who, " has dtype ", dtypeName(t->dtype()),
                                  ", expected ", dtypeName(s.dtype)));
    if (t->shape() != s.shape)
      return Status::error(concat(who, " has shape ", formatShape(t->shape()),
                                  ", expected ", formatShape(s.shape)));
    if (!areArgs || !s.range)
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

} // namespace

Status Entry::check(const std::vector<const Tensor *> &args,
                    const std::vector<const Tensor *> &results) const {
  if (Status s = checkTensors(*entrySpec, args, /*areArgs=*/true); !s.ok())
    return s;
  return checkTensors(*entrySpec, results, /*areArgs=*/false);
}

Status Entry::call(const std::vector<Tensor *> &args,
                   const std::vector<Tensor *> &results) const {
  return guarded<Status>(concat("entry '", name(), "'"), [&]() -> Status {
    std::vector<const Tensor *> constArgs(args.begin(), args.end());
    std::vector<const Tensor *> constResults(results.begin(), results.end());
    if (Status s = check(constArgs, constResults); !s.ok())
      return s;
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
    Expected<Manifest> manifest = readManifest(dir + "/manifest.json");
    if (!manifest)
      return Status::error(
          concat("cannot load module '", dir, "': ", manifest.message()));
    m->mf = std::move(manifest).value();

#if defined(__x86_64__)
    // Only x86-64 hosts so far: refuse code for another architecture before
    // dlopen gives a less helpful "wrong ELF class" message.
    const std::string &triple = m->mf.target.triple;
    if (triple.rfind("x86_64", 0) != 0)
      return Status::error(concat("module '", dir, "' was compiled for '",
                                  triple,
                                  "', which this x86_64 machine cannot run"));
#endif
    const std::set<std::string> *flags = options.cpuFlags;
    // Without /proc/cpuinfo the machine's features are unknown; refusing
    // every module would be worse than trusting the user.
    if (!flags && hostCpuFlags())
      flags = &*hostCpuFlags();
    if (flags)
      if (Status s = checkCpuFeatures(m->mf, dir, *flags); !s.ok())
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
      m->entryList.emplace_back(&spec, fn);
    }
    return Result(std::move(m));
  });
}
