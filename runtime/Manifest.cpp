//===- Manifest.cpp - The compiled module's manifest.json -----------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "runtime/Manifest.h"
#include "runtime/CpuFeatures.h"
#include "runtime/FileIO.h"
#include "runtime/Internal.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <cstdlib>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>

using namespace hkt::runtime;
using namespace hkt::runtime::detail;
using json = nlohmann::json;

namespace {

namespace key = hkt::format::key;

/// Walks the JSON, keeping the path of the current field ("entries[0].args[1]
/// ('lengths')") for messages.
class ManifestParser {
public:
  explicit ManifestParser(std::string source) : source(std::move(source)) {}

  Manifest parse(const json &root) {
    if (!root.is_object())
      error("", "the manifest is not a JSON object");
    Manifest m;
    std::string format = getString(root, key::kFormat, "");
    if (format != hkt::format::kFormatName)
      error(key::kFormat, concat("unknown format '", format, "' (expected '",
                                 hkt::format::kFormatName, "')"));
    const json &version = get(root, key::kVersion, "");
    if (!version.is_number_integer())
      error(key::kVersion, "is not an integer");
    m.version = version.get<int64_t>();
    if (m.version > kManifestVersion)
      error(key::kVersion,
            concat("the module has format version ", m.version,
                   ", newer than this runtime reads (", kManifestVersion,
                   "); update the runtime or recompile the module"));
    if (m.version < 1)
      error(key::kVersion, concat("invalid version ", m.version));
    // Older formats are not read at all: version 1 said nothing of roles or
    // target kinds, and guessing them would be wrong for in-out arguments.
    if (m.version < kManifestVersion)
      error(key::kVersion,
            concat("the module has format version ", m.version,
                   "; this runtime reads version ", kManifestVersion,
                   ": recompile it with hkt-compile"));

    m.library = getString(root, key::kLibrary, "");
    if (m.library.empty() || m.library.find('/') != std::string::npos ||
        m.library == "." || m.library == "..")
      error(key::kLibrary,
            concat("'", m.library,
                   "' is not a file name inside the module directory"));

    m.target = parseTarget(get(root, key::kTarget, ""));

    if (auto it = root.find(key::kModel); it != root.end()) {
      if (!it->is_object())
        error(key::kModel, "is not a JSON object (a model config)");
      m.modelConfig = it->dump();
    }
    if (auto it = root.find(key::kDataParallel); it != root.end()) {
      const std::string path = key::kDataParallel;
      if (!it->is_object())
        error(path, "is not an object");
      const json &ranks = get(*it, key::kRanks, path);
      if (!ranks.is_number_integer() || ranks.get<int64_t>() < 1)
        error(join(path, key::kRanks), "is not a positive integer");
      m.dataParallel = DataParallelSpec{ranks.get<int64_t>(),
                                        getString(*it, key::kMpi, path)};
      // Without one (the first data-parallel modules): MPI.
      if (it->find(key::kBackend) != it->end()) {
        std::string backend = getString(*it, key::kBackend, path);
        if (backend != hkt::format::backend::kMpi &&
            backend != hkt::format::backend::kNccl)
          error(join(path, key::kBackend),
                concat("is '", backend,
                       "'; this runtime knows 'mpi' and "
                       "'nccl' (update the runtime)"));
        if (backend == hkt::format::backend::kNccl &&
            m.target.kind != TargetKind::Cuda)
          error(join(path, key::kBackend),
                "is 'nccl' in a module whose target is not cuda (NCCL sums "
                "device memory)");
        m.dataParallel->backend = backend;
      }
    }
    const json &entries = get(root, key::kEntries, "");
    if (!entries.is_array() || entries.empty())
      error(key::kEntries, "is not a non-empty array");
    std::set<std::string> names;
    for (size_t i = 0; i < entries.size(); ++i) {
      std::string path = concat(key::kEntries, "[", i, "]");
      EntrySpec e = parseEntry(entries[i], path);
      if (!names.insert(e.name).second)
        error(path, concat("entry name '", e.name, "' is used twice"));
      m.entries.push_back(std::move(e));
    }
    for (EntrySpec &e : m.entries)
      if (e.collectiveRanks) {
        if (!m.dataParallel)
          error(concat(key::kEntries, " ('", e.name, "')"),
                concat("calls collectives, but the module has no '",
                       key::kDataParallel, "'"));
        e.collectiveRanks = m.dataParallel->ranks;
        e.collectiveBackend = m.dataParallel->backend;
      }
    return m;
  }

private:
  std::string source;

  [[noreturn]] void error(const std::string &path, const std::string &problem) {
    if (path.empty())
      fail("manifest ", inQuotes(source), ": ", problem);
    fail("manifest ", inQuotes(source), ": ", path, ": ", problem);
  }
  static std::string join(const std::string &path, const char *key) {
    return path.empty() ? key : path + "." + key;
  }
  const json &get(const json &object, const char *key,
                  const std::string &path) {
    auto it = object.find(key);
    if (it == object.end())
      error(path, concat("missing field '", key, "'"));
    return *it;
  }
  std::string getString(const json &object, const char *key,
                        const std::string &path) {
    const json &v = get(object, key, path);
    if (!v.is_string())
      error(join(path, key), "is not a string");
    return v.get<std::string>();
  }

  TargetSpec parseTarget(const json &target) {
    const std::string path = key::kTarget;
    if (!target.is_object())
      error(path, "is not an object");
    TargetSpec t;
    std::string kind = getString(target, key::kKind, path);
    if (kind == hkt::format::target_kind::kCpu)
      t.kind = TargetKind::Cpu;
    else if (kind == hkt::format::target_kind::kCuda)
      t.kind = TargetKind::Cuda;
    else
      error(join(path, key::kKind),
            concat("unknown target kind '", kind, "' (this runtime knows ",
                   hkt::format::target_kind::kCpu, ", ",
                   hkt::format::target_kind::kCuda, ")"));
    // Every kind has host code: the shared object.
    t.triple = getString(target, key::kTriple, path);
    t.cpu = getString(target, key::kCpu, path);
    const json &features = get(target, key::kFeatures, path);
    std::string featuresPath = join(path, key::kFeatures);
    if (!features.is_array())
      error(featuresPath, "is not an array");
    for (const json &f : features) {
      if (!f.is_string())
        error(featuresPath, "holds something other than strings");
      std::string name = f.get<std::string>();
      // Tolerate LLVM's "+avx2" / "-avx512f" spelling: a disabled feature is
      // not a requirement.
      if (!name.empty() && name[0] == '-')
        continue;
      if (!name.empty() && name[0] == '+')
        name.erase(0, 1);
      if (name.empty())
        error(featuresPath, "holds an empty name");
      t.features.push_back(name);
    }
    if (target.contains(key::kPrecision)) {
      t.precision = getString(target, key::kPrecision, path);
      if (t.kind != TargetKind::Cpu ||
          (t.precision != "f32" && t.precision != "bf16"))
        error(join(path, key::kPrecision),
              concat("'", t.precision, "' is not a precision of a ",
                     t.kind == TargetKind::Cpu ? "cpu" : "cuda",
                     " module (cpu: f32 or bf16; cuda modules have none)"));
    }
    if (t.kind == TargetKind::Cuda) {
      t.arch = getString(target, key::kArch, path);
      // A comma-separated list (the chips of one fatbin) of sm_<digits>,
      // each optionally with a suffix letter (sm_90a): parseCudaArch.
      std::stringstream list(t.arch);
      std::string arch;
      bool any = false;
      while (std::getline(list, arch, ',')) {
        any = true;
        bool ok = parseCudaArch(arch).has_value();
        if (!ok)
          error(join(path, key::kArch),
                concat("'", arch, "' is not a CUDA architecture (sm_NN)"));
      }
      if (!any || t.arch.back() == ',')
        error(join(path, key::kArch),
              concat("'", t.arch, "' is not a list of CUDA architectures"));
    }
    return t;
  }

  EntrySpec parseEntry(const json &entry, const std::string &path) {
    if (!entry.is_object())
      error(path, "is not an object");
    EntrySpec e;
    e.name = getString(entry, key::kName, path);
    std::string named = concat(path, " ('", e.name, "')");
    if (e.name.empty())
      error(path, "has an empty name");
    e.symbol = getString(entry, key::kSymbol, named);
    if (e.symbol.empty())
      error(named, "has an empty symbol");
    if (entry.find(key::kDeviceSymbol) != entry.end()) {
      e.deviceSymbol = getString(entry, key::kDeviceSymbol, named);
      if (e.deviceSymbol.empty())
        error(named, "has an empty device_symbol");
    }
    if (auto it = entry.find(key::kCollectives); it != entry.end()) {
      if (!it->is_boolean())
        error(named + "." + key::kCollectives, "is not a boolean");
      e.collectiveRanks = it->get<bool>() ? -1 : 0; // the ranks, below
    }
    e.args = parseSpecs(entry, key::kArgs, named, /*isArg=*/true);
    e.results = parseSpecs(entry, key::kResults, named, /*isArg=*/false);
    checkSymbols(e, named);
    auto bytes = [&](const char *k) -> std::optional<uint64_t> {
      auto it = entry.find(k);
      if (it == entry.end())
        return std::nullopt;
      if (!it->is_number_unsigned())
        error(join(named, k), "is not a non-negative integer");
      return it->get<uint64_t>();
    };
    e.workingMemoryBytes = bytes(key::kWorkingMemory);
    if (std::optional<uint64_t> perThread = bytes(key::kWorkingMemoryPerThread)) {
      if (!e.workingMemoryBytes)
        error(join(named, key::kWorkingMemoryPerThread),
              concat("needs '", key::kWorkingMemory, "' too"));
      e.workingMemoryPerThreadBytes = *perThread;
    }
    return e;
  }

  /// A symbol has one bound in an entry, and a result's symbols are sized by
  /// the arguments (the caller allocates results before the call).
  void checkSymbols(const EntrySpec &e, const std::string &path) {
    std::map<std::string, std::pair<int64_t, std::string>> bounds;
    for (bool args : {true, false}) {
      const std::vector<TensorSpec> &specs = args ? e.args : e.results;
      for (const TensorSpec &s : specs) {
        for (size_t d = 0; d < s.dims.size(); ++d) {
          if (!s.dims[d])
            continue;
          const DynamicDim &dim = *s.dims[d];
          std::string here = concat(args ? "argument '" : "result '", s.name,
                                    "' dimension ", d);
          auto [it, inserted] = bounds.try_emplace(dim.symbol, dim.max, here);
          if (!args && inserted)
            error(path, concat(here, " has symbol '", dim.symbol,
                               "', which no argument has: the size of a "
                               "result must follow from the arguments"));
          if (it->second.first != dim.max)
            error(path, concat(here, " bounds symbol '", dim.symbol, "' by ",
                               dim.max, " but ", it->second.second,
                               " bounds it by ", it->second.first));
        }
      }
    }
  }

  std::vector<TensorSpec> parseSpecs(const json &entry, const char *key,
                                     const std::string &path, bool isArg) {
    const json &list = get(entry, key, path);
    std::string listPath = join(path, key);
    if (!list.is_array())
      error(listPath, "is not an array");
    std::vector<TensorSpec> specs;
    std::set<std::string> names;
    for (size_t i = 0; i < list.size(); ++i) {
      std::string p = concat(listPath, "[", i, "]");
      TensorSpec s = parseSpec(list[i], p, isArg);
      if (!names.insert(s.name).second)
        error(p, concat("name '", s.name, "' is used twice"));
      specs.push_back(std::move(s));
    }
    return specs;
  }

  Role parseRole(const json &j, const std::string &p, bool isArg) {
    namespace role = hkt::format::role;
    std::string name = getString(j, key::kRole, p);
    if (isArg) {
      if (name == role::kInput)
        return Role::Input;
      if (name == role::kParameter)
        return Role::Parameter;
      if (name == role::kInOut)
        return Role::InOut;
      error(p, concat("unknown argument role '", name, "' (expected ",
                      role::kInput, ", ", role::kParameter, " or ",
                      role::kInOut, ")"));
    }
    if (name != role::kOutput)
      error(p, concat("unknown result role '", name, "' (results are ",
                      role::kOutput, ")"));
    return Role::Output;
  }

  void parseShape(const json &j, const std::string &p, TensorSpec &s) {
    const json &shape = get(j, key::kShape, p);
    if (!shape.is_array())
      error(p, "shape is not an array");
    bool dynamic = false;
    for (const json &d : shape) {
      if (!d.is_number_integer())
        error(p, "shape holds something other than integers");
      int64_t v = d.get<int64_t>();
      if (v == hkt::format::kDynamicDim)
        dynamic = true;
      else if (v < 0)
        error(p, concat("shape ", shape.dump(), " has a negative dimension"));
      s.shape.push_back(v);
    }

    auto it = j.find(key::kDims);
    if (!dynamic) {
      if (it != j.end() && !it->is_null())
        error(p, concat("has dims but shape ", shape.dump(),
                        " has no dynamic dimension (-1)"));
    } else {
      if (it == j.end())
        error(p, concat("shape ", shape.dump(),
                        " has a dynamic dimension (-1) but no dims"));
      if (!it->is_array() || it->size() != s.shape.size())
        error(p, concat("dims is not an array of ", s.shape.size(),
                        " entries (one per dimension)"));
      for (size_t d = 0; d < s.shape.size(); ++d) {
        const json &dim = (*it)[d];
        std::string dp = concat(p, ".dims[", d, "]");
        if (s.shape[d] != hkt::format::kDynamicDim) {
          if (!dim.is_null())
            error(dp, concat("must be null: dimension ", d, " is static"));
          s.dims.push_back(std::nullopt);
          continue;
        }
        if (!dim.is_object())
          error(dp, "is not an object {\"symbol\": ..., \"max\": ...}");
        DynamicDim dd;
        dd.symbol = getString(dim, key::kDimSymbol, dp);
        if (dd.symbol.empty())
          error(dp, "has an empty symbol");
        const json &max = get(dim, key::kDimMax, dp);
        if (!max.is_number_integer() || max.get<int64_t>() < 1)
          error(dp, "max is not an integer >= 1");
        dd.max = max.get<int64_t>();
        s.dims.push_back(std::move(dd));
      }
    }
    if (!checkedNumElements(s.concreteShape(), dtypeSize(s.dtype)))
      error(p, concat("shape ", shape.dump(), " is too large"));
  }

  TensorSpec parseSpec(const json &j, const std::string &path, bool isArg) {
    if (!j.is_object())
      error(path, "is not an object");
    TensorSpec s;
    s.name = getString(j, key::kName, path);
    if (s.name.empty())
      error(path, "has an empty name");
    std::string p = concat(path, " ('", s.name, "')");
    s.role = parseRole(j, p, isArg);
    std::string dtype = getString(j, key::kDType, p);
    std::optional<DType> type = parseDTypeName(dtype);
    if (!type)
      error(p, concat("unknown dtype '", dtype,
                      "' (this runtime knows f32, f64, i32, i64)"));
    s.dtype = *type;
    parseShape(j, p, s);

    if (!isArg) {
      for (const char *argOnly : {key::kDefault, key::kRange})
        if (j.contains(argOnly))
          error(p, concat("a result has no ", argOnly));
      return s;
    }
    if (auto it = j.find(key::kRange); it != j.end()) {
      if (!isIntegerDType(s.dtype))
        error(p, concat("has a range but dtype ", dtype,
                        " is not an integer type"));
      if (!it->is_array() || it->size() != 2 || !(*it)[0].is_number_integer() ||
          !(*it)[1].is_number_integer())
        error(p, "range is not a pair of integers [lo, hi]");
      int64_t lo = (*it)[0].get<int64_t>(), hi = (*it)[1].get<int64_t>();
      if (lo > hi)
        error(p, concat("range [", lo, ", ", hi, "] is empty"));
      if (s.dtype == DType::I32 && (lo < std::numeric_limits<int32_t>::min() ||
                                    hi > std::numeric_limits<int32_t>::max()))
        error(p, concat("range [", lo, ", ", hi, "] does not fit in i32"));
      s.range = {lo, hi};
    }
    if (auto it = j.find(key::kDefault); it != j.end()) {
      Scalar v;
      if (it->is_number_integer()) {
        v.isInteger = true;
        v.intValue = it->get<int64_t>();
        if (it->is_number_unsigned() &&
            it->get<uint64_t>() > uint64_t(INT64_MAX))
          error(p, "default is out of range");
        v.floatValue = static_cast<double>(v.intValue);
      } else if (it->is_number_float()) {
        v.floatValue = it->get<double>();
      } else {
        error(p, "default is not a number");
      }
      if (isIntegerDType(s.dtype)) {
        // An integral float (64.0) is fine for an integer argument.
        if (!v.isInteger) {
          if (std::trunc(v.floatValue) != v.floatValue ||
              std::abs(v.floatValue) > 0x1p62)
            error(p, concat("default ", it->dump(),
                            " is not an integer but dtype is ", dtype));
          v.isInteger = true;
          v.intValue = static_cast<int64_t>(v.floatValue);
        }
        if (s.dtype == DType::I32 &&
            (v.intValue < std::numeric_limits<int32_t>::min() ||
             v.intValue > std::numeric_limits<int32_t>::max()))
          error(p, concat("default ", v.intValue, " does not fit in i32"));
        if (s.range &&
            (v.intValue < s.range->first || v.intValue > s.range->second))
          error(p, concat("default ", v.intValue, " is outside its range [",
                          s.range->first, ", ", s.range->second, "]"));
      }
      s.defaultValue = v;
    }
    return s;
  }
};

} // namespace

std::string Scalar::str() const {
  if (isInteger)
    return std::to_string(intValue);
  return json(floatValue).dump();
}

const char *hkt::runtime::roleName(Role role) {
  switch (role) {
  case Role::Input:
    return hkt::format::role::kInput;
  case Role::Parameter:
    return hkt::format::role::kParameter;
  case Role::Output:
    return hkt::format::role::kOutput;
  case Role::InOut:
    return hkt::format::role::kInOut;
  }
  return "?";
}

const char *hkt::runtime::targetKindName(TargetKind kind) {
  switch (kind) {
  case TargetKind::Cpu:
    return hkt::format::target_kind::kCpu;
  case TargetKind::Cuda:
    return hkt::format::target_kind::kCuda;
  }
  return "?";
}

std::vector<int64_t> TensorSpec::concreteShape(const DimSizes &sizes) const {
  std::vector<int64_t> out = shape;
  for (size_t d = 0; d < dims.size() && d < out.size(); ++d) {
    if (!dims[d])
      continue;
    auto it = sizes.find(dims[d]->symbol);
    out[d] = it != sizes.end() ? it->second : dims[d]->max;
  }
  return out;
}

Status TensorSpec::matchShape(const std::vector<int64_t> &got, DimSizes &sizes,
                              const std::string &who) const {
  if (got.size() != shape.size())
    return Status::error(concat(who, " has shape ", formatShape(got),
                                ", expected ", describeShape()));
  // Static dimensions first, so a plain mismatch reads as one.
  for (size_t d = 0; d < got.size(); ++d)
    if ((dims.empty() || !dims[d]) && got[d] != shape[d])
      return Status::error(concat(who, " has shape ", formatShape(got),
                                  ", expected ", describeShape()));
  for (size_t d = 0; d < dims.size(); ++d) {
    if (!dims[d])
      continue;
    const DynamicDim &dim = *dims[d];
    std::string where = concat(who, " has size ", got[d], " in dimension ", d,
                               " ('", dim.symbol, "')");
    if (got[d] > dim.max)
      return Status::error(concat(where, ", above its bound ", dim.max));
    if (got[d] < 1)
      return Status::error(where + "; a dynamic dimension is at least 1");
    auto [it, inserted] = sizes.try_emplace(dim.symbol, got[d]);
    if (!inserted && it->second != got[d])
      return Status::error(concat(where, ", but '", dim.symbol, "' is ",
                                  it->second, " in an earlier argument"));
  }
  return Status::success();
}

std::string TensorSpec::describeShape() const {
  if (dims.empty())
    return formatShape(shape);
  std::string s = "[";
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d)
      s += ",";
    s += dims[d] ? dims[d]->symbol + "<=" + std::to_string(dims[d]->max)
                 : std::to_string(shape[d]);
  }
  return s + "]";
}

std::string TensorSpec::describe() const {
  return std::string(dtypeName(dtype)) + " " + describeShape();
}

const TensorSpec *EntrySpec::findArg(const std::string &name) const {
  for (const TensorSpec &s : args)
    if (s.name == name)
      return &s;
  return nullptr;
}

const TensorSpec *EntrySpec::findResult(const std::string &name) const {
  for (const TensorSpec &s : results)
    if (s.name == name)
      return &s;
  return nullptr;
}

bool EntrySpec::hasInOutArgs() const {
  for (const TensorSpec &s : args)
    if (s.isInOut())
      return true;
  return false;
}

const EntrySpec *Manifest::findEntry(const std::string &name) const {
  for (const EntrySpec &e : entries)
    if (e.name == name)
      return &e;
  return nullptr;
}

bool TargetSpec::usesAmx() const {
  return kind == TargetKind::Cpu && precision == "bf16" &&
         amxBf16Among(features);
}

std::string Manifest::entryNames() const {
  std::string s;
  for (const EntrySpec &e : entries)
    s += (s.empty() ? "'" : ", '") + e.name + "'";
  return s;
}

Expected<Manifest> hkt::runtime::parseManifest(const std::string &text,
                                               const std::string &source) {
  return guarded<Expected<Manifest>>(
      "manifest " + inQuotes(source), [&]() -> Expected<Manifest> {
        json root;
        try {
          root = json::parse(text);
        } catch (const json::exception &e) {
          fail("manifest ", inQuotes(source), ": not valid JSON: ", e.what());
        }
        return ManifestParser(source).parse(root);
      });
}

std::optional<CudaArch> hkt::runtime::parseCudaArch(const std::string &name) {
  if (name.compare(0, 3, "sm_") != 0)
    return std::nullopt;
  size_t end = name.find_first_not_of("0123456789", 3);
  if (end == std::string::npos)
    end = name.size();
  bool suffix = end + 1 == name.size() &&
                std::islower(static_cast<unsigned char>(name[end]));
  if (end - 3 < 2 || (end != name.size() && !suffix))
    return std::nullopt;
  CudaArch arch;
  arch.major = std::atoi(name.substr(3, end - 4).c_str());
  arch.minor = name[end - 1] - '0';
  return arch;
}

Expected<Manifest> hkt::runtime::readManifest(const std::string &path) {
  Expected<std::string> text = readTextFile(path);
  if (!text)
    return text.status();
  return parseManifest(*text, path);
}
