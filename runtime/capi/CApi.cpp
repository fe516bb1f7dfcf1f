//===- CApi.cpp - the runtime's C API -------------------------------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// hkt_runtime.h over CompiledModule and Entry: each HktTensor becomes a
// Tensor that borrows the caller's buffer (Tensor::borrow), so the checks
// and the call are the ones hkt-run makes, on the caller's memory.
//
//===----------------------------------------------------------------------===//

#include "runtime/capi/hkt_runtime.h"

#include "runtime/CompiledModule.h"
#include "runtime/FileIO.h"
#include "runtime/ModuleFormat.h"

#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

using namespace hkt::runtime;

struct HktModule {
  std::unique_ptr<CompiledModule> module;
  std::string manifestText;
};

namespace {

/// Sets *error (if asked for) to a malloc'ed copy of `message`; returns 1.
int fail(char **error, const std::string &message) {
  if (error) {
    *error = static_cast<char *>(std::malloc(message.size() + 1));
    if (*error)
      std::memcpy(*error, message.c_str(), message.size() + 1);
  }
  return 1;
}

/// The tensors of `views`, named after `specs` in messages; the first
/// problem, or "" when every view is a dense buffer of a known dtype.
std::string borrowAll(const HktTensor *views, int64_t count,
                      const std::vector<TensorSpec> &specs, const char *what,
                      std::vector<Tensor> &out) {
  out.clear();
  out.reserve(count);
  for (int64_t i = 0; i < count; ++i) {
    const HktTensor &v = views[i];
    std::string name = i < static_cast<int64_t>(specs.size())
                           ? "'" + specs[i].name + "'"
                           : "#" + std::to_string(i);
    if (v.dtype < HKT_F32 || v.dtype > HKT_I64)
      return std::string(what) + " " + name + ": unknown dtype code " +
             std::to_string(v.dtype);
    if (v.rank < 0 || (v.rank > 0 && !v.shape))
      return std::string(what) + " " + name + ": no shape";
    std::vector<int64_t> shape(v.shape, v.shape + v.rank);
    if (v.strides) {
      // Dense row-major strides (a size-1 dimension's stride is free).
      int64_t expected = 1;
      for (int64_t d = v.rank - 1; d >= 0; --d) {
        if (shape[d] != 1 && v.strides[d] != expected)
          return std::string(what) + " " + name +
                 " is not a dense row-major buffer (strides are not those "
                 "of its shape): make it contiguous first";
        expected *= shape[d];
      }
    }
    Expected<Tensor> t =
        Tensor::borrow(static_cast<DType>(v.dtype), shape, v.data);
    if (!t)
      return std::string(what) + " " + name + ": " + t.message();
    out.push_back(std::move(*t));
  }
  return "";
}

/// Runs `body`, turning a C++ exception into an error: nothing may unwind
/// through the C boundary.
template <typename F> int guarded(char **error, F body) {
  try {
    return body();
  } catch (const std::exception &e) {
    return fail(error, std::string("internal error: ") + e.what());
  } catch (...) {
    return fail(error, "internal error");
  }
}

const Entry *findEntry(HktModule *m, const char *entry, char **error) {
  if (!m || !entry) {
    fail(error, "no module or no entry name");
    return nullptr;
  }
  const Entry *e = m->module->findEntry(entry);
  if (!e) {
    std::string names;
    for (const Entry &other : m->module->entries())
      names += (names.empty() ? "" : ", ") + other.name();
    fail(error, std::string("module has no entry '") + entry +
                    "' (entries: " + names + ")");
  }
  return e;
}

} // namespace

extern "C" {

int32_t hkt_api_version(void) { return HKT_RUNTIME_API_VERSION; }

HktModule *hkt_module_open(const char *dir, char **error) {
  // hkt-run's malloc settings (keepLargeBuffersOnHeap), once, unless the
  // caller's process keeps its own: HKT_MALLOC=system.
  static const bool heapBuffers = [] {
    const char *policy = std::getenv("HKT_MALLOC");
    if (!policy || std::strcmp(policy, "system") != 0)
      hkt::runtime::keepLargeBuffersOnHeap();
    return true;
  }();
  (void)heapBuffers;
  HktModule *result = nullptr;
  guarded(error, [&] {
    if (!dir)
      return fail(error, "no module directory");
    Expected<std::unique_ptr<CompiledModule>> module =
        CompiledModule::open(dir);
    if (!module)
      return fail(error, module.message());
    Expected<std::string> text =
        readTextFile(std::string(dir) + "/" + hkt::format::kManifestFile);
    if (!text)
      return fail(error, text.message());
    result = new HktModule{std::move(*module), std::move(*text)};
    return 0;
  });
  return result;
}

void hkt_module_close(HktModule *module) { delete module; }

const char *hkt_module_manifest(const HktModule *module) {
  return module ? module->manifestText.c_str() : nullptr;
}

int hkt_entry_result_shapes(HktModule *module, const char *entry,
                            const HktTensor *args, int64_t num_args,
                            int64_t *shapes, int64_t capacity, char **error) {
  return guarded(error, [&] {
    const Entry *e = findEntry(module, entry, error);
    if (!e)
      return 1;
    std::vector<Tensor> borrowed;
    std::string problem =
        borrowAll(args, num_args, e->spec().args, "argument", borrowed);
    if (!problem.empty())
      return fail(error, "entry '" + e->name() + "': " + problem);
    std::vector<const Tensor *> ptrs;
    for (const Tensor &t : borrowed)
      ptrs.push_back(&t);
    auto result = e->resultShapes(ptrs);
    if (!result)
      return fail(error, result.message());
    int64_t at = 0;
    for (const std::vector<int64_t> &shape : *result)
      for (int64_t d : shape) {
        if (at >= capacity)
          return fail(error, "entry '" + e->name() +
                                 "': the result shapes need more than " +
                                 std::to_string(capacity) + " values");
        shapes[at++] = d;
      }
    return 0;
  });
}

int hkt_entry_call(HktModule *module, const char *entry, const HktTensor *args,
                   int64_t num_args, const HktTensor *results,
                   int64_t num_results, char **error) {
  return guarded(error, [&] {
    const Entry *e = findEntry(module, entry, error);
    if (!e)
      return 1;
    std::vector<Tensor> in, out;
    std::string problem =
        borrowAll(args, num_args, e->spec().args, "argument", in);
    if (problem.empty())
      problem =
          borrowAll(results, num_results, e->spec().results, "result", out);
    if (!problem.empty())
      return fail(error, "entry '" + e->name() + "': " + problem);
    std::vector<Tensor *> inPtrs, outPtrs;
    for (Tensor &t : in)
      inPtrs.push_back(&t);
    for (Tensor &t : out)
      outPtrs.push_back(&t);
    Status s = e->call(inPtrs, outPtrs);
    if (!s.ok())
      return fail(error, s.message());
    return 0;
  });
}

void hkt_free_error(char *error) { std::free(error); }

} // extern "C"
