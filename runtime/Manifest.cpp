//===- Manifest.cpp - The compiled module's manifest.json -----------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "runtime/Manifest.h"
#include "runtime/FileIO.h"
#include "runtime/Internal.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <set>

using namespace hkt::runtime;
using namespace hkt::runtime::detail;
using json = nlohmann::json;

namespace {

/// Walks the JSON, keeping the path of the current field ("entries[0].args[1]
/// ('lengths')") for messages.
class ManifestParser {
public:
  explicit ManifestParser(std::string source) : source(std::move(source)) {}

  Manifest parse(const json &root) {
    if (!root.is_object())
      error("", "the manifest is not a JSON object");
    Manifest m;
    std::string format = getString(root, "format", "");
    if (format != "hkt-module")
      error("format",
            concat("unknown format '", format, "' (expected 'hkt-module')"));
    const json &version = get(root, "version", "");
    if (!version.is_number_integer())
      error("version", "is not an integer");
    m.version = version.get<int64_t>();
    if (m.version > kManifestVersion)
      error("version",
            concat("the module has format version ", m.version,
                   ", newer than this runtime reads (", kManifestVersion,
                   "); update the runtime or recompile the module"));
    if (m.version < 1)
      error("version", concat("invalid version ", m.version));

    m.library = getString(root, "library", "");
    if (m.library.empty() || m.library.find('/') != std::string::npos ||
        m.library == "." || m.library == "..")
      error("library",
            concat("'", m.library,
                   "' is not a file name inside the module directory"));

    const json &target = get(root, "target", "");
    if (!target.is_object())
      error("target", "is not an object");
    m.target.triple = getString(target, "triple", "target");
    m.target.cpu = getString(target, "cpu", "target");
    const json &features = get(target, "features", "target");
    if (!features.is_array())
      error("target.features", "is not an array");
    for (const json &f : features) {
      if (!f.is_string())
        error("target.features", "holds something other than strings");
      std::string name = f.get<std::string>();
      // Tolerate LLVM's "+avx2" / "-avx512f" spelling: a disabled feature is
      // not a requirement.
      if (!name.empty() && name[0] == '-')
        continue;
      if (!name.empty() && name[0] == '+')
        name.erase(0, 1);
      if (name.empty())
        error("target.features", "holds an empty name");
      m.target.features.push_back(name);
    }

    const json &entries = get(root, "entries", "");
    if (!entries.is_array() || entries.empty())
      error("entries", "is not a non-empty array");
    std::set<std::string> names;
    for (size_t i = 0; i < entries.size(); ++i) {
      std::string path = concat("entries[", i, "]");
      EntrySpec e = parseEntry(entries[i], path);
      if (!names.insert(e.name).second)
        error(path, concat("entry name '", e.name, "' is used twice"));
      m.entries.push_back(std::move(e));
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

  EntrySpec parseEntry(const json &entry, const std::string &path) {
    if (!entry.is_object())
      error(path, "is not an object");
    EntrySpec e;
    e.name = getString(entry, "name", path);
    std::string named = concat(path, " ('", e.name, "')");
    if (e.name.empty())
      error(path, "has an empty name");
    e.symbol = getString(entry, "symbol", named);
    if (e.symbol.empty())
      error(named, "has an empty symbol");
    e.args = parseSpecs(entry, "args", named, /*isArg=*/true);
    e.results = parseSpecs(entry, "results", named, /*isArg=*/false);
    return e;
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

  TensorSpec parseSpec(const json &j, const std::string &path, bool isArg) {
    if (!j.is_object())
      error(path, "is not an object");
    TensorSpec s;
    s.name = getString(j, "name", path);
    if (s.name.empty())
      error(path, "has an empty name");
    std::string p = concat(path, " ('", s.name, "')");
    std::string dtype = getString(j, "dtype", p);
    std::optional<DType> type = parseDTypeName(dtype);
    if (!type)
      error(p, concat("unknown dtype '", dtype,
                      "' (this runtime knows f32, f64, i32, i64)"));
    s.dtype = *type;

    const json &shape = get(j, "shape", p);
    if (!shape.is_array())
      error(p, "shape is not an array");
    for (const json &d : shape) {
      if (!d.is_number_integer())
        error(p, "shape holds something other than integers");
      int64_t v = d.get<int64_t>();
      if (v == -1)
        error(p, concat("shape ", shape.dump(),
                        " has a dynamic dimension (-1), which this runtime "
                        "does not support"));
      if (v < 0)
        error(p, concat("shape ", shape.dump(), " has a negative dimension"));
      s.shape.push_back(v);
    }
    if (!checkedNumElements(s.shape, dtypeSize(s.dtype)))
      error(p, concat("shape ", shape.dump(), " is too large"));

    if (!isArg)
      return s;
    if (auto it = j.find("range"); it != j.end()) {
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
    if (auto it = j.find("default"); it != j.end()) {
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

std::string TensorSpec::describe() const {
  return std::string(dtypeName(dtype)) + " " + formatShape(shape);
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

const EntrySpec *Manifest::findEntry(const std::string &name) const {
  for (const EntrySpec &e : entries)
    if (e.name == name)
      return &e;
  return nullptr;
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

Expected<Manifest> hkt::runtime::readManifest(const std::string &path) {
  Expected<std::string> text = readTextFile(path);
  if (!text)
    return text.status();
  return parseManifest(*text, path);
}
