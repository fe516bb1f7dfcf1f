//===- hkt-run.cpp - Run an entry of a compiled HKT module ----------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// hkt-run OUT [--entry F] --input NAME=FILE.npy ... [--params FILE.safetensors
//         [--params-prefix P]] --output NAME=FILE.npy ... [--random SEED]
//         [--grads FILE.safetensors] [--threads N] [--bench N] [--quiet]
//
// Loads the module directory OUT written by hkt-compile, binds the entry's
// arguments by name (from .npy files, a safetensors file, the manifest's
// defaults or a seeded random fill), calls it and writes the requested
// results, and the new values of in-out arguments, as .npy files. Exit
// status: 0 on success, 1 on an error, 2 on a usage error.
//
//===----------------------------------------------------------------------===//

#include "runtime/CompiledModule.h"
#include "runtime/CudaDriver.h"
#include "runtime/Manifest.h"
#include "runtime/MemoryCheck.h"
#include "runtime/Npy.h"
#include "runtime/SafeTensors.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/MpiWorld.h"
#include "tools/hkt-run/Training.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>

using namespace hkt::runtime;
using namespace hkt::train;

namespace {

const char *const kUsage =
    "usage: hkt-run OUT [--entry F] [--input NAME=FILE.npy]... "
    "[--params FILE.safetensors [--params-prefix P]] "
    "[--output NAME=FILE.npy]... [--grads FILE.safetensors] [--random SEED] "
    "[--size SYMBOL=N]... [--threads N] [--bench N] [--device cpu|cuda] "
    "[--quiet]";

const char *const kHelp = R"(
Runs an entry of the compiled module in directory OUT (written by hkt-compile).

  --entry F              the entry to call; optional where the module has
                         one, or where --grads or the names of --input and
                         --output fit only one entry (the log line says
                         which and why)
  --input NAME=FILE      bind argument NAME to a .npy file
  --params FILE          bind arguments to the tensors of a safetensors file,
                         by name (may be repeated); a checkpoint's
                         optimizer state (adam.m.*, adam.v.*) is skipped
                         unless the entry takes it
  --params-prefix P      use only the params tensors whose name starts with P,
                         with P stripped
  --output NAME=FILE     write result NAME to a .npy file; NAME may also be
                         an in-out argument, whose value after the call is
                         written
  --grads FILE           call the gradient entry (NAME_grad, added by
                         hkt-compile --backward; the only one, or --entry)
                         and write all its results to a safetensors file,
                         each gradient under the name of its argument
                         (x, wq, ...): d(sum(y * dy))/d(argument)
  --random SEED          fill unbound arguments that have no default with
                         deterministic pseudo-random values (a dynamic
                         dimension takes the size the bound arguments give
                         it, else its bound)
  --size SYMBOL=N        the size of dynamic dimension SYMBOL (a "dims"
                         symbol of the manifest, e.g. T or B) for the
                         arguments a default or --random fills
  --threads N            run with N threads (sets OMP_NUM_THREADS)
  --device cpu|cuda      the device the module must run on (it is given by
                         the module: hkt-compile --target); a module for
                         another one is refused with a message
  --bench N              after one warm-up call, time N calls and print
                         {"median_ms":..,"min_ms":..,"max_rss_mb":..,
                          "inputs_mb":..,"n":..,"threads":..}: max_rss_mb is
                         the process's peak resident set, inputs_mb the size
                         of all arguments and results, both in MiB (every
                         call, the warm-up included, updates in-out
                         arguments); a cuda module adds device_median_ms
                         and device_min_ms, timed with CUDA events from its
                         first kernel to the end of its last
  --quiet                print nothing but errors

Before reading or allocating anything, hkt-run refuses a call whose
arguments, results and working memory (from the manifest) exceed the memory
available to the process: the smaller of /proc/meminfo's MemAvailable and
what the cgroup limit leaves. HKT_MEMORY_LIMIT_BYTES=N sets the available
amount to N bytes instead.
)";

/// A command-line mistake: reported with the usage line, exit status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// Any other failure: exit status 1.
struct RunError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void fail(const std::string &message) { throw RunError(message); }

/// The suffix of the gradient entry of NAME (hkt-compile --backward).
constexpr const char *kGradSuffix = "_grad";

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

struct Options {
  std::string moduleDir;
  std::optional<std::string> entry;
  std::vector<std::pair<std::string, std::string>> inputs, outputs;
  std::vector<std::string> params;
  std::optional<std::string> paramsPrefix;
  std::optional<uint64_t> seed;
  std::optional<int64_t> threads;
  std::optional<int64_t> bench;
  std::optional<std::string> device;
  std::optional<std::string> grads;
  /// --size SYMBOL=N: the size of a dynamic dimension for filled arguments.
  std::map<std::string, int64_t> sizes;
  bool quiet = false;
  bool help = false;
};

uint64_t parseUnsigned(const std::string &flag, const std::string &text) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    throw UsageError(flag + " expects a non-negative integer, got '" + text +
                     "'");
  return v;
}

int64_t parsePositive(const std::string &flag, const std::string &text) {
  uint64_t v = parseUnsigned(flag, text);
  if (v < 1 || v > 1000000)
    throw UsageError(flag + " expects an integer from 1 to 1000000, got '" +
                     text + "'");
  return static_cast<int64_t>(v);
}

std::pair<std::string, std::string> parseBinding(const std::string &flag,
                                                 const std::string &text) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw UsageError(flag + " expects NAME=FILE, got '" + text + "'");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

Options parseCommandLine(int argc, char **argv) {
  Options o;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      o.help = true;
      return o;
    }
    if (arg == "--quiet" || arg == "-q") {
      o.quiet = true;
      continue;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      positional.push_back(arg);
      continue;
    }
    // --flag VALUE or --flag=VALUE.
    std::string flag = arg, value;
    bool haveValue = false;
    if (size_t eq = arg.find('='); eq != std::string::npos) {
      flag = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      haveValue = true;
    }
    static const std::set<std::string> valued = {
        "--entry",         "--input",  "--output",  "--params",
        "--params-prefix", "--random", "--threads", "--bench",
        "--grads",         "--device", "--size"};
    if (!valued.count(flag))
      throw UsageError("unknown option '" + arg + "'");
    if (!haveValue) {
      if (i + 1 >= argc)
        throw UsageError(flag + " needs a value");
      value = argv[++i];
    }
    auto once = [&](bool alreadySet) {
      if (alreadySet)
        throw UsageError(flag + " given twice");
    };
    if (flag == "--entry") {
      once(o.entry.has_value());
      o.entry = value;
    } else if (flag == "--input") {
      o.inputs.push_back(parseBinding(flag, value));
    } else if (flag == "--output") {
      o.outputs.push_back(parseBinding(flag, value));
    } else if (flag == "--params") {
      if (value.empty())
        throw UsageError("--params needs a file name");
      o.params.push_back(value);
    } else if (flag == "--params-prefix") {
      once(o.paramsPrefix.has_value());
      o.paramsPrefix = value;
    } else if (flag == "--random") {
      once(o.seed.has_value());
      o.seed = parseUnsigned(flag, value);
    } else if (flag == "--threads") {
      once(o.threads.has_value());
      o.threads = parsePositive(flag, value);
    } else if (flag == "--device") {
      once(o.device.has_value());
      if (value != "cpu" && value != "cuda")
        throw UsageError("--device must be cpu or cuda, got '" + value + "'");
      o.device = value;
    } else if (flag == "--bench") {
      once(o.bench.has_value());
      o.bench = parsePositive(flag, value);
    } else if (flag == "--size") {
      size_t eq = value.find('=');
      if (eq == std::string::npos || eq == 0)
        throw UsageError("--size expects SYMBOL=N (a dynamic dimension of "
                         "the manifest, e.g. T=1024), got '" +
                         value + "'");
      std::string symbol = value.substr(0, eq);
      if (o.sizes.count(symbol))
        throw UsageError("--size " + symbol + " given twice");
      o.sizes[symbol] = static_cast<int64_t>(
          parseUnsigned("--size " + symbol, value.substr(eq + 1)));
    } else if (flag == "--grads") {
      once(o.grads.has_value());
      if (value.empty())
        throw UsageError("--grads needs a file name");
      o.grads = value;
    }
  }
  if (positional.empty())
    throw UsageError("no module directory given");
  if (positional.size() > 1)
    throw UsageError("more than one module directory given: '" + positional[0] +
                     "' and '" + positional[1] + "'");
  o.moduleDir = positional[0];
  if (o.paramsPrefix && o.params.empty())
    throw UsageError("--params-prefix needs --params");
  return o;
}

/// "'a', 'b'" (or "none") for messages: the specs for which `keep` holds.
std::string nameList(const std::vector<TensorSpec> &specs,
                     bool (*keep)(const TensorSpec &) = nullptr) {
  std::string s;
  for (const TensorSpec &spec : specs)
    if (!keep || keep(spec))
      s += (s.empty() ? "'" : ", '") + spec.name + "'";
  return s.empty() ? "none" : s;
}

bool isInOut(const TensorSpec &spec) { return spec.isInOut(); }

/// A bound argument: its tensor and where it came from.
struct Binding {
  Tensor tensor;
  std::string source;
};

/// Configures OpenMP before any module (and the OpenMP runtime it pulls in)
/// is loaded; returns the thread count to report.
int64_t configureThreads(const Options &o) {
  if (o.threads) {
    ::setenv("OMP_NUM_THREADS", std::to_string(*o.threads).c_str(), 1);
    return *o.threads;
  }
  const char *env = std::getenv("OMP_NUM_THREADS");
  // libomp aborts on an empty OMP_NUM_THREADS; treat it as unset.
  if (env && !*env) {
    ::unsetenv("OMP_NUM_THREADS");
    env = nullptr;
  }
  if (env) {
    int64_t n = 0;
    auto [end, ec] = std::from_chars(env, env + std::strlen(env), n);
    if (ec == std::errc() && n > 0)
      return n; // "4,2" (nested levels) reports the outer count
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

/// The bytes of a tensor of `spec` with the dynamic dimensions in `sizes`
/// (saturating).
uint64_t specBytes(const TensorSpec &spec, const DimSizes &sizes) {
  std::optional<int64_t> n =
      checkedNumElements(spec.concreteShape(sizes), dtypeSize(spec.dtype));
  return n ? static_cast<uint64_t>(*n) * dtypeSize(spec.dtype) : UINT64_MAX;
}

/// Refuses a call that cannot fit before anything is read or allocated: the
/// arguments and results at the manifest's shapes (a dynamic dimension at
/// its smallest size, 1: what is refused here cannot fit in any call) plus
/// the entry's working memory for `threads` threads.
void checkMemoryBeforeAllocating(const EntrySpec &spec, int64_t threads) {
  DimSizes smallest;
  for (const TensorSpec &t : spec.args)
    for (const std::optional<DynamicDim> &d : t.dims)
      if (d)
        smallest[d->symbol] = 1;
  MemoryNeed need;
  auto add = [](uint64_t a, uint64_t b) {
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
  };
  for (const TensorSpec &t : spec.args)
    need.inputs = add(need.inputs, specBytes(t, smallest));
  for (const TensorSpec &t : spec.results)
    need.outputs = add(need.outputs, specBytes(t, smallest));
  need.working = workingMemory(spec, static_cast<uint64_t>(threads));
  Expected<MemoryInfo> info = readMemoryInfo();
  if (!info)
    fail(info.message());
  if (Status s = checkMemory(spec.name, need, *info); !s.ok())
    fail(s.message());
}

/// The process's peak resident set size in MiB (0 if unknown).
double peakRssMiB() {
  struct rusage usage;
  if (::getrusage(RUSAGE_SELF, &usage) != 0)
    return 0;
  return static_cast<double>(usage.ru_maxrss) / 1024.0; // KiB on Linux
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// The entries with their arguments and results, one per line, for
/// messages that ask the user to choose.
std::string entryListing(const std::vector<Entry> &entries) {
  std::string s;
  for (const Entry &e : entries) {
    const EntrySpec &spec = e.spec();
    std::string args, results;
    for (const TensorSpec &t : spec.args)
      args += (args.empty() ? "" : ", ") + t.name;
    for (const TensorSpec &t : spec.results)
      results += (results.empty() ? "" : ", ") + t.name;
    s += "\n  " + spec.name + "(" + args + ") -> " + results;
  }
  return s;
}

/// True when `spec` has every name the command line gives it: each --input
/// an argument, each --output a result or in-out argument.
bool takesNames(const EntrySpec &spec, const Options &o) {
  for (const auto &[name, file] : o.inputs)
    if (!spec.findArg(name))
      return false;
  for (const auto &[name, file] : o.outputs) {
    const TensorSpec *arg = spec.findArg(name);
    if (!spec.findResult(name) && !(arg && arg->isInOut()))
      return false;
  }
  return true;
}

/// The entry to call: --entry; else, among the gradient entries with
/// --grads (all entries without), the only one, or the only one that has
/// every name of --input and --output. `because` says why, for the log line.
const Entry *chooseEntry(const CompiledModule &module, const Options &o,
                         std::string &because) {
  const Manifest &manifest = module.manifest();
  if (o.entry) {
    if (const Entry *e = module.findEntry(*o.entry))
      return e;
    fail("module '" + o.moduleDir + "' has no entry '" + *o.entry +
         "'; its entries are: " + manifest.entryNames());
  }
  std::vector<const Entry *> candidates;
  for (const Entry &e : module.entries())
    if (!o.grads || endsWith(e.spec().name, kGradSuffix))
      candidates.push_back(&e);
  if (o.grads && candidates.empty())
    fail("--grads: module '" + o.moduleDir +
         "' has no gradient entry (an entry named NAME" +
         std::string(kGradSuffix) +
         "); compile it with hkt-compile --backward. Its entries are: " +
         manifest.entryNames());
  if (candidates.size() == 1) {
    if (module.entries().size() > 1)
      because = " (the only gradient entry, for --grads)";
    return candidates.front();
  }
  std::vector<const Entry *> named;
  for (const Entry *e : candidates)
    if (takesNames(e->spec(), o))
      named.push_back(e);
  std::string names;
  for (const auto &[name, file] : o.inputs)
    names += (names.empty() ? "" : ", ") + ("--input " + name);
  for (const auto &[name, file] : o.outputs)
    names += (names.empty() ? "" : ", ") + ("--output " + name);
  if (named.size() == 1 && !names.empty()) {
    because = " (the only " + std::string(o.grads ? "gradient " : "") +
              "entry that takes " + names + ")";
    return named.front();
  }
  std::string kind = o.grads ? "gradient entries" : "entries";
  if (named.empty())
    fail("module '" + o.moduleDir + "' has no " +
         (o.grads ? "gradient entry" : "entry") + " that takes " + names +
         "; its " + kind + " are:" + entryListing(module.entries()));
  fail("module '" + o.moduleDir + "' has several " + kind +
       "; choose one with --entry: " + manifest.entryNames() +
       (names.empty() ? std::string()
                      : " (" + std::to_string(named.size()) + " of them take " +
                            names + ")") +
       entryListing(module.entries()));
}

/// One call of an entry: the phases of `hkt-run OUT ...`, in order; each
/// fails with a message naming the argument or file at fault.
class EntryCall {
public:
  EntryCall(const Options &o, const CompiledModule &module, const Entry &entry,
            std::string chosenBecause, int64_t threads)
      : o(o), module(module), manifest(module.manifest()), entry(&entry),
        spec(entry.spec()), entryName("entry '" + spec.name + "'"),
        chosenBecause(std::move(chosenBecause)), threads(threads) {}

  int run() {
    checkOutputs();
    bindFilesAndParams();
    padTokens();
    fillUnbound();
    checkTokenRows();
    refuseUnbound();
    prepareCall();
    callAndTime();
    writeOutputs();
    writeGradients();
    return 0;
  }

private:
  /// Checks --output names before any work (an in-out argument is an output
  /// too: its value after the call).
  void checkOutputs() {
    std::set<std::string> outputNames, outputFiles;
    for (const auto &[name, file] : o.outputs) {
      const TensorSpec *arg = spec.findArg(name);
      if (!spec.findResult(name) && !(arg && arg->isInOut())) {
        if (!spec.hasInOutArgs())
          fail("--output " + name + "=" + file + ": " + entryName +
               " has no result '" + name +
               "'; its results are: " + nameList(spec.results));
        fail("--output " + name + "=" + file + ": " + entryName +
             " has no result or in-out argument '" + name +
             "'; its results are: " + nameList(spec.results) +
             "; its in-out arguments: " + nameList(spec.args, isInOut));
      }
      if (!outputNames.insert(name).second)
        fail("result '" + name + "' is given to --output twice");
      if (!outputFiles.insert(file).second)
        fail("two --output options write the same file '" + file + "'");
    }
  }

  /// Binds arguments from --input files, then --params tensors.
  void bindFilesAndParams() {
    for (const auto &[name, file] : o.inputs) {
      const TensorSpec *arg = spec.findArg(name);
      if (!arg)
        fail("--input " + name + "=" + file + ": " + entryName +
             " has no argument '" + name +
             "'; its arguments are: " + nameList(spec.args));
      if (bound.count(name))
        fail("argument '" + name + "' is bound twice: by " +
             bound[name].source + " and by file " + file);
      Expected<Tensor> t = readNpy(file);
      if (!t)
        fail(t.message());
      bound[name] = {std::move(t).value(), "file " + file};
    }
    for (const std::string &paramsFile : o.params) {
      Expected<SafeTensorsFile> params = readSafeTensors(paramsFile);
      if (!params)
        fail(params.message());
      bool checkpoint = isCheckpointMetadata(params->metadata);
      for (NamedTensor &nt : params->tensors) {
        std::string name = nt.name;
        if (o.paramsPrefix) {
          if (name.rfind(*o.paramsPrefix, 0) != 0)
            continue;
          name.erase(0, o.paramsPrefix->size());
        }
        std::string source = "params " + paramsFile + " ('" + nt.name + "')";
        // A checkpoint's optimizer state is its own, not a misspelt weight:
        // skipped unless the entry takes it (train_step).
        if (!spec.findArg(name) && checkpoint && isOptimizerState(nt.name)) {
          ++skipped[paramsFile];
          continue;
        }
        if (!spec.findArg(name))
          fail("unused tensor '" + nt.name + "' in " + paramsFile + ": " +
               entryName + " has no argument " +
               (name == nt.name
                    ? std::string("of that name")
                    : "'" + name + "' (after stripping the prefix '" +
                          *o.paramsPrefix + "')") +
               "; its arguments are: " + nameList(spec.args));
        if (bound.count(name))
          fail("argument '" + name + "' is bound twice: by " +
               bound[name].source + " and by " + source);
        bound[name] = {std::move(nt.tensor), source};
      }
    }
  }

  /// SPEC's classifier compiled --fixed-len: short token rows padded with 0
  /// to max_len.
  void padTokens() {
    // SPEC's classifier (hkt-compile --model --fixed-len): `tokens` (B x
    // max_len, int) may be shorter than max_len and is padded with 0, which
    // is exact (padding is masked and the mean-pool counts valid positions);
    // longer is an error. A model of dynamic length takes the tokens as
    // they are (its bound check names max_len).
    if (const TensorSpec *tok = spec.findArg("tokens");
        tok && isIntegerDType(tok->dtype) && tok->shape.size() == 2 &&
        tok->shape[1] != ::hkt::format::kDynamicDim && bound.count("tokens")) {
      Tensor &given = bound["tokens"].tensor;
      const std::vector<int64_t> &gs = given.shape();
      int64_t maxLen = tok->shape[1];
      if (gs.size() == 2 && given.dtype() == tok->dtype) {
        if (gs[1] > maxLen)
          fail(entryName + ": tokens have " + std::to_string(gs[1]) +
               " positions, more than the model's max_len " +
               std::to_string(maxLen) + " (from " + bound["tokens"].source +
               ")");
        size_t elt = dtypeSize(given.dtype());
        if (gs[1] < maxLen) {
          Expected<Tensor> padded =
              Tensor::allocate(given.dtype(), {gs[0], maxLen});
          if (!padded)
            fail("tokens: " + padded.message());
          auto *dst = static_cast<char *>(padded->data());
          const auto *src = static_cast<const char *>(given.data());
          std::memset(dst, 0, padded->byteSize());
          for (int64_t r = 0; r < gs[0]; ++r)
            std::memcpy(dst + r * maxLen * elt, src + r * gs[1] * elt,
                        static_cast<size_t>(gs[1]) * elt);
          given = std::move(padded).value();
        }
      }
    }
  }

  /// Defaults, then --random values, for what no file or params bound.
  void fillUnbound() {
    // The sizes that bound arguments give the dynamic dimensions (mismatches
    // are reported below): filled arguments take them.
    DimSizes sizes;
    for (const TensorSpec &arg : spec.args)
      if (auto it = bound.find(arg.name); it != bound.end())
        (void)arg.matchShape(it->second.tensor.shape(), sizes, "");
    // --size: a symbol of the entry, within its bound, and not another size
    // than the bound arguments give it.
    for (const auto &[symbol, size] : o.sizes) {
      int64_t max = 0;
      for (const TensorSpec &arg : spec.args)
        for (const std::optional<DynamicDim> &d : arg.dims)
          if (d && d->symbol == symbol)
            max = d->max;
      std::string what = "--size " + symbol + "=" + std::to_string(size);
      if (max == 0)
        fail("--size " + symbol + ": entry '" + spec.name +
             "' has no dynamic dimension '" + symbol + "'");
      if (size < 1 || size > max)
        fail(what + ": outside [1, " + std::to_string(max) +
             "], the bound of '" + symbol + "'");
      if (auto it = sizes.find(symbol); it != sizes.end() && it->second != size)
        fail(what + ": the bound arguments give '" + symbol + "' the size " +
             std::to_string(it->second));
      sizes[symbol] = size;
    }
    for (const TensorSpec &arg : spec.args) {
      if (bound.count(arg.name))
        continue;
      if (!arg.defaultValue && !o.seed) {
        unbound.push_back(arg.name);
        continue;
      }
      Expected<Tensor> t =
          Tensor::allocate(arg.dtype, arg.concreteShape(sizes));
      if (!t)
        fail("argument '" + arg.name + "': " + t.message());
      if (arg.defaultValue) {
        if (arg.defaultValue->isInteger)
          fillConstantInt(*t, arg.defaultValue->intValue);
        else
          fillConstant(*t, arg.defaultValue->floatValue);
        bound[arg.name] = {std::move(t).value(),
                           "default " + arg.defaultValue->str()};
      } else {
        fillRandom(*t, *o.seed, arg.name, arg.range);
        bound[arg.name] = {std::move(t).value(),
                           "random (seed " + std::to_string(*o.seed) + ")"};
      }
    }
  }

  /// A model row must have a first token.
  void checkTokenRows() {
    // A model row must have a first token (SPEC: a row of length 0 is an
    // input error). --random's tokens get one: their first position is moved
    // off the padding id.
    if (const TensorSpec *tok = spec.findArg("tokens");
        tok && isIntegerDType(tok->dtype) && tok->shape.size() == 2 &&
        bound.count("tokens")) {
      Binding &b = bound["tokens"];
      const std::vector<int64_t> &shape = b.tensor.shape();
      size_t elt = dtypeSize(b.tensor.dtype());
      bool random = b.source.rfind("random", 0) == 0;
      if (shape.size() == 2 && b.tensor.dtype() == tok->dtype &&
          (elt == 4 || elt == 8))
        for (int64_t r = 0; r < shape[0]; ++r) {
          char *first =
              static_cast<char *>(b.tensor.data()) + r * shape[1] * elt;
          int64_t value = 0;
          if (elt == 4) {
            int32_t v;
            std::memcpy(&v, first, 4);
            value = v;
          } else {
            std::memcpy(&value, first, 8);
          }
          if (value != 0)
            continue;
          if (!random)
            fail(entryName + ": row " + std::to_string(r) +
                 " of tokens is all padding (its first token is 0, so its "
                 "length is 0; from " +
                 b.source + ")");
          if (elt == 4) {
            int32_t one = 1;
            std::memcpy(first, &one, 4);
          } else {
            int64_t one = 1;
            std::memcpy(first, &one, 8);
          }
        }
    }
  }

  /// Names every argument still unbound.
  void refuseUnbound() {
    if (!unbound.empty()) {
      std::string list;
      for (const std::string &n : unbound) {
        const TensorSpec *arg = spec.findArg(n);
        list += (list.empty() ? "" : ", ") +
                ("'" + n + "' (" + arg->describe() + ")");
      }
      fail(
          entryName + " has unbound argument" +
          (unbound.size() > 1 ? "s " : " ") + list + "; bind with --input " +
          unbound.front() +
          "=FILE.npy or --params FILE.safetensors, or fill with --random SEED");
    }
  }

  /// Checks the bound tensors against the entry; allocates the results.
  void prepareCall() {
    // Entry::call checks these too, but here the message can say where the
    // offending tensor came from.
    DimSizes callSizes;
    for (const TensorSpec &arg : spec.args) {
      const Binding &b = bound[arg.name];
      std::string who = entryName + ": " +
                        (arg.isInOut() ? "in-out argument '" : "input '") +
                        arg.name + "'";
      if (b.tensor.dtype() != arg.dtype)
        fail(who + " has dtype " + dtypeName(b.tensor.dtype()) + ", expected " +
             dtypeName(arg.dtype) + " (from " + b.source + ")");
      if (Status s = arg.matchShape(b.tensor.shape(), callSizes, who); !s.ok())
        fail(s.message() + " (from " + b.source + ")");
      args.push_back(&bound[arg.name].tensor);
    }
    Expected<std::vector<std::vector<int64_t>>> resultShapes =
        entry->resultShapes(
            std::vector<const Tensor *>(args.begin(), args.end()));
    if (!resultShapes)
      fail(resultShapes.message());
    for (size_t i = 0; i < spec.results.size(); ++i) {
      const TensorSpec &res = spec.results[i];
      Expected<Tensor> t = Tensor::allocate(res.dtype, (*resultShapes)[i]);
      if (!t)
        fail("result '" + res.name + "': " + t.message());
      resultStorage.push_back(std::move(t).value());
    }
    for (Tensor &t : resultStorage)
      results.push_back(&t);
  }

  /// The log lines, the call, and --bench's timing.
  void callAndTime() {
    if (!o.quiet) {
      std::fprintf(stderr, "hkt-run: module '%s', %s%s\n", o.moduleDir.c_str(),
                   entryName.c_str(), chosenBecause.c_str());
      for (const TensorSpec &arg : spec.args)
        std::fprintf(stderr, "  arg %s: %s from %s%s\n", arg.name.c_str(),
                     bound[arg.name].tensor.describe().c_str(),
                     bound[arg.name].source.c_str(),
                     arg.isInOut() ? " (in-out)" : "");
      for (const auto &[file, n] : skipped)
        std::fprintf(stderr,
                     "  skipped %lld optimizer-state tensors (%s*, %s*) of the "
                     "checkpoint %s: %s takes no such argument\n",
                     static_cast<long long>(n), checkpoint::kFirstMoment,
                     checkpoint::kSecondMoment, file.c_str(),
                     entryName.c_str());
    }

    // Entry::call checks dtypes, shapes and ranges before running the code.
    auto callOnce = [&]() -> double {
      auto start = std::chrono::steady_clock::now();
      if (Status s = entry->call(args, results); !s.ok())
        fail(s.message());
      std::chrono::duration<double, std::milli> ms =
          std::chrono::steady_clock::now() - start;
      return ms.count();
    };
    double firstMs = callOnce();
    if (!o.quiet)
      std::fprintf(stderr, "hkt-run: call took %.3f ms (%lld threads)\n",
                   firstMs, static_cast<long long>(threads));
    bool cuda = manifest.target.kind == TargetKind::Cuda;
    if (cuda)
      (void)takeCudaKernelSpanMs(); // the warm-up call's
    if (o.bench) {
      std::vector<double> times, deviceTimes;
      for (int64_t i = 0; i < *o.bench; ++i) {
        times.push_back(callOnce());
        if (cuda)
          if (std::optional<double> ms = takeCudaKernelSpanMs())
            deviceTimes.push_back(*ms);
      }
      size_t ioBytes = 0;
      for (const Tensor *t : args)
        ioBytes += t->byteSize();
      for (const Tensor *t : results)
        ioBytes += t->byteSize();
      // cuda: the kernels' time from CUDA events (first launch to the end of
      // the last kernel), beside the call's wall time (which adds the copies
      // of the arguments and results).
      std::string device;
      if (!deviceTimes.empty())
        device =
            ",\"device_median_ms\":" + std::to_string(median(deviceTimes)) +
            ",\"device_min_ms\":" +
            std::to_string(
                *std::min_element(deviceTimes.begin(), deviceTimes.end()));
      std::printf("{\"median_ms\":%.6f,\"min_ms\":%.6f,\"max_rss_mb\":%.3f,"
                  "\"inputs_mb\":%.3f,\"n\":%lld,\"threads\":%lld%s}\n",
                  median(times), *std::min_element(times.begin(), times.end()),
                  peakRssMiB(),
                  static_cast<double>(ioBytes) / (1024.0 * 1024.0),
                  static_cast<long long>(*o.bench),
                  static_cast<long long>(threads), device.c_str());
      std::fflush(stdout);
    }
  }

  /// --output files.
  void writeOutputs() {
    for (const auto &[name, file] : o.outputs) {
      const Tensor *out = nullptr;
      if (const TensorSpec *res = spec.findResult(name))
        out = &resultStorage[static_cast<size_t>(res - spec.results.data())];
      else
        out = &bound[name].tensor; // an in-out argument
      if (Status s = writeNpy(file, *out); !s.ok())
        fail(s.message());
      if (!o.quiet)
        std::fprintf(stderr, "hkt-run: wrote %s (%s) to %s\n", name.c_str(),
                     out->describe().c_str(), file.c_str());
    }
  }

  /// --grads: every gradient under its argument's name.
  void writeGradients() {
    if (o.grads) {
      // Every gradient result, under the name of the argument it is the
      // gradient of: result `d<arg>` -> `<arg>` (hkt-differentiate's names).
      // The other results (the model's loss) are printed, scalars as one JSON
      // line.
      std::vector<std::pair<std::string, const Tensor *>> named;
      std::string values;
      for (size_t i = 0; i < spec.results.size(); ++i) {
        std::string name = spec.results[i].name;
        if (name.size() > 1 && name[0] == 'd' && spec.findArg(name.substr(1))) {
          named.emplace_back(name.substr(1), &resultStorage[i]);
          continue;
        }
        const Tensor &v = resultStorage[i];
        if (v.shape().empty() && v.dtype() == DType::F32) {
          char buf[64];
          std::snprintf(buf, sizeof buf, "%.9g", *v.dataAs<float>());
          values += (values.empty() ? "" : ",") + ("\"" + name + "\":") + buf;
        } else {
          named.emplace_back(name, &v);
        }
      }
      if (!values.empty()) {
        std::printf("{%s}\n", values.c_str());
        std::fflush(stdout);
      }
      if (Status s = writeSafeTensors(*o.grads, named); !s.ok())
        fail(s.message());
      if (!o.quiet)
        std::fprintf(stderr, "hkt-run: wrote %zu gradients to %s\n",
                     named.size(), o.grads->c_str());
    }
  }

  const Options &o;
  const CompiledModule &module;
  const Manifest &manifest;
  const Entry *entry;
  const EntrySpec &spec;
  std::string entryName, chosenBecause;
  int64_t threads;
  std::map<std::string, Binding> bound;
  std::map<std::string, int64_t> skipped; ///< optimizer state, per file
  std::vector<std::string> unbound;
  std::vector<Tensor *> args;
  std::vector<Tensor> resultStorage;
  std::vector<Tensor *> results;
};

/// --device: the module's target must be that device; checked before the
/// module is opened (a cuda module's shared object loads its kernels).
void checkDevice(const Options &o) {
  if (std::string e = hkt::run::deviceMismatch(o.moduleDir, *o.device);
      !e.empty())
    fail(e);
}

int run(const Options &o) {
  int64_t threads = configureThreads(o);
  if (o.device)
    checkDevice(o);
  Expected<std::unique_ptr<CompiledModule>> loaded =
      CompiledModule::open(o.moduleDir);
  if (!loaded)
    fail(loaded.message());
  std::string chosenBecause;
  const Entry *entry = chooseEntry(**loaded, o, chosenBecause);
  checkMemoryBeforeAllocating(entry->spec(), threads);
  return EntryCall(o, **loaded, *entry, chosenBecause, threads).run();
}

} // namespace

int main(int argc, char **argv) {
  // Working buffers from the heap, reused from call to call.
  hkt::runtime::keepLargeBuffersOnHeap();
  // Line-buffered even into a pipe: a module compiled with --check-bounds
  // prints why it aborts (an out-of-bounds access) with printf, and abort()
  // would drop a full buffer.
  std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);
  // hkt-run init / train / eval / predict OUT ...: the model's training
  // driver (Training.cpp).
  if (argc >= 2 && hkt::run::isTrainingCommand(argv[1]))
    return hkt::run::runTrainingCommand(argv[1], argc - 2, argv + 2);
  try {
    Options options;
    try {
      options = parseCommandLine(argc, argv);
    } catch (const UsageError &e) {
      std::fprintf(stderr, "hkt-run: error: %s\n%s\n", e.what(), kUsage);
      return 2;
    }
    if (options.help) {
      std::printf("%s\n%s", kUsage, kHelp);
      return 0;
    }
    // One call in one process: N copies under mpirun would each make it
    // (and write the same outputs).
    if (int launched = hkt::train::launchedRanks(); launched > 1)
      throw RunError("hkt-run MODULE makes one call in one process, but this "
                     "one was started as one of " +
                     std::to_string(launched) +
                     " (mpirun): run it without mpirun (only hkt-run train "
                     "is data-parallel)");
    return run(options);
  } catch (const RunError &e) {
    std::fprintf(stderr, "hkt-run: error: %s\n", e.what());
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "hkt-run: error: out of memory\n");
  } catch (const std::exception &e) {
    std::fprintf(stderr, "hkt-run: error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "hkt-run: error: unknown failure\n");
  }
  return 1;
}
