//===- Training.cpp - hkt-run init / train / eval / predict ---------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// Drives a compiled model through SPEC's tasks (docs/training.md): the
// parameters and AdamW moments live in tensors that `train_step` updates in
// place, one call per step; batches are assembled here from runtime/Tasks.h;
// checkpoints (runtime/Checkpoint.h) hold everything a resumed run needs to
// continue exactly.
//
//===----------------------------------------------------------------------===//

#include "tools/hkt-run/Training.h"

#include "runtime/Checkpoint.h"
#include "runtime/CompiledModule.h"
#include "runtime/Npy.h"
#include "runtime/Random.h"
#include "runtime/Tasks.h"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

using namespace hkt::runtime;
using json = nlohmann::json;

namespace hkt::run {
namespace {

constexpr const char *kUsage = R"(usage:
  hkt-run init OUT --save W.safetensors [--seed S]
  hkt-run train OUT --task TASK --steps N --save CKPT [--resume CKPT]
                [--params W] [--batch B] [--seed S] [--data-seed S]
                [--lr X] [--weight-decay X] [--beta1 X] [--beta2 X] [--eps X]
                [--warmup N] [--schedule constant|cosine|linear]
                [--decay-steps N] [--eval-every N] [--eval-examples N]
                [--save-every N] [--log LOG.jsonl] [--log-every N]
                [--threads N] [--quiet]
  hkt-run eval OUT --params CKPT --task TASK [--split valid|test]
               [--limit N] [--batch B] [--data-seed S] [--threads N]
  hkt-run predict OUT --params CKPT (--task TASK [--split S] [--limit N]
               | --tokens T.npy) --output P.npy [--batch B] [--threads N]
  hkt-run export CKPT -o W.safetensors
TASK: listops[:train=N,...] | fmnist[:DIR] | text:FILE (docs/tasks.md))";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct RunError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
[[noreturn]] void fail(const std::string &message) { throw RunError(message); }

template <typename T> T check(Expected<T> e) {
  if (!e)
    fail(e.message());
  return std::move(e).value();
}
void check(const Status &s) {
  if (!s.ok())
    fail(s.message());
}

//===----------------------------------------------------------------------===//
// Command line
//===----------------------------------------------------------------------===//

/// `--flag value` pairs and bare `--flag`s, checked against the command's
/// list; the first non-flag argument is the module.
struct Args {
  std::string module;
  std::map<std::string, std::string> values;

  bool has(const std::string &flag) const { return values.count(flag) != 0; }
  std::string str(const std::string &flag, const std::string &def = "") const {
    auto it = values.find(flag);
    return it == values.end() ? def : it->second;
  }
  int64_t integer(const std::string &flag, int64_t def, int64_t lo,
                  int64_t hi) const {
    auto it = values.find(flag);
    if (it == values.end())
      return def;
    int64_t v = 0;
    const std::string &s = it->second;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || v < lo || v > hi)
      throw UsageError(flag + " needs an integer in [" + std::to_string(lo) +
                       ", " + std::to_string(hi) + "], got '" + s + "'");
    return v;
  }
  double real(const std::string &flag, double def, double lo,
              double hi) const {
    auto it = values.find(flag);
    if (it == values.end())
      return def;
    char *end = nullptr;
    double v = std::strtod(it->second.c_str(), &end);
    if (it->second.empty() || *end || !std::isfinite(v) || v < lo || v > hi)
      throw UsageError(flag + " needs a number in [" + std::to_string(lo) +
                       ", " + std::to_string(hi) + "], got '" + it->second +
                       "'");
    return v;
  }
};

Args parseArgs(int argc, char **argv, const std::vector<std::string> &withValue,
               const std::vector<std::string> &bare,
               const char *missing =
                   "no module: give the directory hkt-compile --model wrote") {
  Args a;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.size() < 2 || arg[0] != '-') {
      if (!a.module.empty())
        throw UsageError("unexpected argument '" + arg + "'");
      a.module = arg;
      continue;
    }
    if (std::find(bare.begin(), bare.end(), arg) != bare.end()) {
      a.values[arg] = "";
      continue;
    }
    if (std::find(withValue.begin(), withValue.end(), arg) == withValue.end())
      throw UsageError("unknown option '" + arg + "'");
    if (i + 1 >= argc)
      throw UsageError(arg + " needs a value");
    if (a.values.count(arg))
      throw UsageError(arg + " is given twice");
    a.values[arg] = argv[++i];
  }
  if (a.module.empty())
    throw UsageError(missing);
  return a;
}

/// OMP_NUM_THREADS before the module (and its OpenMP runtime) is loaded.
void configureThreads(const Args &a) {
  if (a.has("--threads"))
    ::setenv("OMP_NUM_THREADS",
             std::to_string(a.integer("--threads", 1, 1, 4096)).c_str(), 1);
}

//===----------------------------------------------------------------------===//
// The model module
//===----------------------------------------------------------------------===//

/// A compiled model: its entries and config.
struct Model {
  std::unique_ptr<CompiledModule> module;
  std::string dir;
  json config;
  int64_t maxLen = 0, vocab = 0, classes = 0;
  /// The largest batch the entries take (the bound of the symbol B).
  int64_t maxBatch = 0;
  const Entry *logits = nullptr;
  /// The parameters, in the manifest's order (the logits entry's).
  std::vector<const TensorSpec *> params;

  const Entry &entry(const std::string &name) const {
    const Entry *e = module->findEntry(name);
    if (!e)
      fail("module '" + dir + "' has no entry '" + name +
           "' (compile it with hkt-compile --model, without --inference)");
    return *e;
  }
};

Model openModel(const std::string &dir) {
  Model m;
  m.dir = dir;
  m.module = check(CompiledModule::open(dir));
  const std::string &config = m.module->manifest().modelConfig;
  if (config.empty())
    fail("module '" + dir +
         "' is not a model: its manifest records no model config (compile "
         "one with hkt-compile --model MODEL.json)");
  m.config = json::parse(config);
  m.maxLen = m.config.value("max_len", 0);
  m.vocab = m.config.value("vocab", 0);
  m.classes = m.config.value("classes", 0);
  m.logits = m.module->findEntry("logits");
  if (!m.logits)
    fail("module '" + dir + "' has no entry 'logits'");
  for (const TensorSpec &a : m.logits->spec().args) {
    if (a.role == Role::Parameter)
      m.params.push_back(&a);
    if (a.name == "tokens" && !a.dims.empty() && a.dims[0])
      m.maxBatch = a.dims[0]->max;
  }
  if (m.maxLen < 1 || m.vocab < 2 || m.classes < 1 || m.maxBatch < 1)
    fail("module '" + dir + "': unexpected model config or entries");
  return m;
}

std::unique_ptr<Task> openModelTask(const Model &m, const std::string &spec,
                                    uint64_t dataSeed) {
  std::unique_ptr<Task> task = check(openTask(spec, m.maxLen, dataSeed));
  if (task->vocab() > m.vocab)
    fail("task '" + spec + "' has token ids up to " +
         std::to_string(task->vocab() - 1) + "; the model's vocab is " +
         std::to_string(m.vocab) + " (compile a model with vocab >= " +
         std::to_string(task->vocab()) + ")");
  if (task->classes() > m.classes)
    fail("task '" + spec + "' has " + std::to_string(task->classes()) +
         " classes; the model has " + std::to_string(m.classes));
  return task;
}

uint64_t hashString(const std::string &s) {
  uint64_t h = 1469598103934665603ull; // FNV-1a
  for (unsigned char c : s)
    h = (h ^ c) * 1099511628211ull;
  return h;
}

/// SPEC "Initialisation for training", by parameter name: each tensor from
/// its own stream (seed, name), so the values do not depend on the order.
Tensor initParameter(const TensorSpec &spec, uint64_t seed) {
  Tensor t = check(Tensor::allocate(DType::F32, spec.shape));
  float *p = t.dataAs<float>();
  int64_t n = t.numElements();
  const std::string &name = spec.name;
  auto endsWith = [&](const char *suffix) {
    size_t k = std::strlen(suffix);
    return name.size() >= k && name.compare(name.size() - k, k, suffix) == 0;
  };
  if (endsWith("ln1.weight") || endsWith("ln2.weight") || name == "ln_f.weight") {
    std::fill(p, p + n, 1.0f);
  } else if (endsWith(".bias") || endsWith(".b1") || endsWith(".b2") ||
             endsWith(".down_b") || endsWith(".theta") || name == "head.b") {
    // zeros
  } else if (endsWith(".down_w")) {
    int64_t taps = spec.shape.back();
    for (int64_t i = 0; i < n; i += taps)
      p[i] = 1.0f; // tap 0: identity-like subsampling
  } else if (endsWith(".gamma")) {
    std::fill(p, p + n, 2.0f);
  } else {
    // embed, pos, conv_u and the weight matrices: normal, std 0.02.
    SplitMix64 rng(seed * 0x9E3779B97F4A7C15ull ^ hashString(name));
    for (int64_t i = 0; i < n; i += 2) {
      double r = std::sqrt(-2.0 * std::log(rng.uniform()));
      double a = 2.0 * M_PI * rng.uniform();
      p[i] = static_cast<float>(0.02 * r * std::cos(a));
      if (i + 1 < n)
        p[i + 1] = static_cast<float>(0.02 * r * std::sin(a));
    }
  }
  return t;
}

/// The parameters from a checkpoint or weight file, checked against the
/// module: the model config, every parameter present with its shape.
std::map<std::string, Tensor> loadParameters(const Model &m, Checkpoint &c,
                                             const std::string &path) {
  check(checkModelConfig(c.meta(checkpoint::kModel), path,
                         m.module->manifest().modelConfig, m.dir));
  std::map<std::string, Tensor> out;
  for (const TensorSpec *spec : m.params) {
    Tensor *t = c.find(spec->name);
    if (!t)
      fail("'" + path + "' has no parameter '" + spec->name +
           "' (the module's parameters have SPEC's names)");
    if (t->dtype() != DType::F32 || t->shape() != spec->shape)
      fail("'" + path + "': parameter '" + spec->name + "' is " +
           t->describe() + ", the module needs f32 " + formatShape(spec->shape));
    out.emplace(spec->name, std::move(*t));
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Batches and evaluation
//===----------------------------------------------------------------------===//

/// tokens (rows x max_len, padded with 0) and labels (rows) of examples.
void fillBatch(const std::vector<Example> &examples, Tensor &tokens,
               Tensor &labels, int64_t maxLen) {
  std::memset(tokens.data(), 0, tokens.byteSize());
  int32_t *tok = tokens.dataAs<int32_t>();
  int32_t *lab = labels.dataAs<int32_t>();
  for (size_t r = 0; r < examples.size(); ++r) {
    const Example &e = examples[r];
    std::copy(e.tokens.begin(), e.tokens.end(),
              tok + static_cast<int64_t>(r) * maxLen);
    lab[r] = e.label;
  }
}

/// Calls `logits` on `rows` examples; writes the predicted classes.
void predictBatch(const Model &m, std::map<std::string, Tensor> &params,
                  Tensor &tokens, std::vector<int32_t> &predictions) {
  int64_t rows = tokens.shape()[0];
  Tensor logits = check(Tensor::allocate(DType::F32, {rows, m.classes}));
  std::vector<Tensor *> args;
  for (const TensorSpec &a : m.logits->spec().args)
    args.push_back(a.name == "tokens" ? &tokens : &params.at(a.name));
  check(m.logits->call(args, {&logits}));
  const float *l = logits.dataAs<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = l + r * m.classes;
    predictions.push_back(
        static_cast<int32_t>(std::max_element(row, row + m.classes) - row));
  }
}

struct Accuracy {
  int64_t correct = 0, examples = 0;
  double value() const {
    return examples ? static_cast<double>(correct) / examples : 0.0;
  }
};

/// Predictions for the first `limit` examples of `split` (all if < 0), in
/// batches of at most `batch` rows; optionally the accuracy.
std::vector<int32_t> predictSplit(const Model &m,
                                  std::map<std::string, Tensor> &params,
                                  const Task &task, Split split, int64_t limit,
                                  int64_t batch, Accuracy *accuracy) {
  int64_t n = task.size(split);
  if (limit >= 0)
    n = std::min(n, limit);
  if (n == 0)
    fail("task '" + task.name() + "' has no " + splitName(split) +
         " examples");
  std::vector<int32_t> predictions;
  for (int64_t start = 0; start < n; start += batch) {
    int64_t rows = std::min(batch, n - start);
    std::vector<Example> examples;
    for (int64_t i = 0; i < rows; ++i)
      examples.push_back(check(task.get(split, start + i)));
    Tensor tokens = check(Tensor::allocate(DType::I32, {rows, m.maxLen}));
    Tensor labels = check(Tensor::allocate(DType::I32, {rows}));
    fillBatch(examples, tokens, labels, m.maxLen);
    size_t first = predictions.size();
    predictBatch(m, params, tokens, predictions);
    if (accuracy)
      for (int64_t i = 0; i < rows; ++i) {
        accuracy->examples++;
        accuracy->correct += predictions[first + i] == examples[i].label;
      }
  }
  return predictions;
}

Split parseSplit(const std::string &s) {
  if (s == "train")
    return Split::Train;
  if (s == "valid")
    return Split::Valid;
  if (s == "test")
    return Split::Test;
  throw UsageError("--split must be train, valid or test, got '" + s + "'");
}

std::string formatDouble(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string formatDuration(double seconds) {
  char buf[32];
  int64_t s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", (long long)(s / 3600),
                  (long long)(s / 60 % 60));
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", (long long)(s / 60),
                  (long long)(s % 60));
  else
    std::snprintf(buf, sizeof buf, "%llds", (long long)s);
  return buf;
}

//===----------------------------------------------------------------------===//
// init
//===----------------------------------------------------------------------===//

int runInit(int argc, char **argv) {
  Args a = parseArgs(argc, argv, {"--seed", "--save"}, {});
  if (!a.has("--save"))
    throw UsageError("init needs --save W.safetensors");
  Model m = openModel(a.module);
  uint64_t seed = static_cast<uint64_t>(a.integer("--seed", 0, 0, INT64_MAX));
  std::vector<Tensor> tensors;
  tensors.reserve(m.params.size());
  std::vector<std::pair<std::string, const Tensor *>> named;
  for (const TensorSpec *p : m.params)
    tensors.push_back(initParameter(*p, seed));
  for (size_t i = 0; i < m.params.size(); ++i)
    named.emplace_back(m.params[i]->name, &tensors[i]);
  check(writeCheckpoint(a.str("--save"), named,
                        {{checkpoint::kModel, m.config.dump()},
                         {checkpoint::kStep, "0"},
                         {"seed", std::to_string(seed)}}));
  std::printf("%s\n", json({{"parameters", named.size()},
                            {"seed", seed},
                            {"file", a.str("--save")}})
                          .dump()
                          .c_str());
  return 0;
}

//===----------------------------------------------------------------------===//
// train
//===----------------------------------------------------------------------===//

/// Everything a run needs to continue exactly; saved in the checkpoint.
struct TrainState {
  std::string task;
  uint64_t seed = 0, dataSeed = 1;
  int64_t batch = 32;
  int64_t step = 0;         ///< steps done
  int64_t examplesSeen = 0; ///< the data position
  double lr = 1e-3, weightDecay = 0.01, beta1 = 0.9, beta2 = 0.999,
         eps = 1e-8;
  int64_t warmup = 0;
  std::string schedule = "constant";
  int64_t decaySteps = 0;

  std::map<std::string, std::string> metadata() const {
    return {{"task", task},
            {"seed", std::to_string(seed)},
            {"data_seed", std::to_string(dataSeed)},
            {"batch", std::to_string(batch)},
            {checkpoint::kStep, std::to_string(step)},
            {"examples_seen", std::to_string(examplesSeen)},
            {"lr", formatDouble(lr)},
            {"weight_decay", formatDouble(weightDecay)},
            {"beta1", formatDouble(beta1)},
            {"beta2", formatDouble(beta2)},
            {"eps", formatDouble(eps)},
            {"warmup", std::to_string(warmup)},
            {"schedule", schedule},
            {"decay_steps", std::to_string(decaySteps)}};
  }

  /// The learning rate of step t (1-based): linear warm-up over `warmup`
  /// steps, then constant, cosine or linear decay to 0 at `decaySteps`.
  double learningRate(int64_t t) const {
    if (warmup > 0 && t <= warmup)
      return lr * static_cast<double>(t) / static_cast<double>(warmup);
    if (schedule == "constant" || decaySteps <= warmup)
      return lr;
    double progress = std::min(
        1.0, static_cast<double>(t - warmup) /
                 static_cast<double>(decaySteps - warmup));
    if (schedule == "cosine")
      return lr * 0.5 * (1.0 + std::cos(M_PI * progress));
    return lr * (1.0 - progress);
  }
};

/// The train-set order: a permutation per epoch from (seed, epoch).
class DataOrder {
public:
  DataOrder(int64_t size, uint64_t seed) : size(size), seed(seed) {}
  int64_t at(int64_t position) {
    int64_t epoch = position / size;
    if (epoch != currentEpoch) {
      order.resize(static_cast<size_t>(size));
      for (int64_t i = 0; i < size; ++i)
        order[i] = i;
      SplitMix64 rng(seed ^ (0xD1B54A32D192ED03ull * (epoch + 1)));
      for (int64_t i = size - 1; i > 0; --i)
        std::swap(order[i], order[rng.next() % static_cast<uint64_t>(i + 1)]);
      currentEpoch = epoch;
    }
    return order[position % size];
  }

private:
  int64_t size;
  uint64_t seed;
  int64_t currentEpoch = -1;
  std::vector<int64_t> order;
};

int runTrain(int argc, char **argv) {
  Args a = parseArgs(
      argc, argv,
      {"--task", "--steps", "--save", "--resume", "--params", "--batch",
       "--seed", "--data-seed", "--lr", "--weight-decay", "--beta1", "--beta2",
       "--eps", "--warmup", "--schedule", "--decay-steps", "--eval-every",
       "--eval-examples", "--save-every", "--log", "--log-every", "--threads"},
      {"--quiet"});
  if (!a.has("--save"))
    throw UsageError("train needs --save CKPT.safetensors");
  if (!a.has("--steps"))
    throw UsageError("train needs --steps N (the steps of this run)");
  if (!a.has("--task") && !a.has("--resume"))
    throw UsageError("train needs --task TASK (or --resume CKPT)");
  if (a.has("--resume") && a.has("--params"))
    throw UsageError("--resume and --params exclude each other (a checkpoint "
                     "holds the parameters)");
  int64_t steps = a.integer("--steps", 0, 1, INT64_C(1) << 40);
  std::string schedule = a.str("--schedule", "constant");
  if (schedule != "constant" && schedule != "cosine" && schedule != "linear")
    throw UsageError("--schedule must be constant, cosine or linear, got '" +
                     schedule + "'");
  bool quiet = a.has("--quiet");
  configureThreads(a);
  Model m = openModel(a.module);
  const Entry &trainStep = m.entry("train_step");

  // The state: from the checkpoint when resuming, the flags override.
  TrainState st;
  std::map<std::string, Tensor> params, first, second;
  std::string resumed;
  if (a.has("--resume")) {
    resumed = a.str("--resume");
    Checkpoint c = check(readCheckpoint(resumed));
    params = loadParameters(m, c, resumed);
    for (const TensorSpec *p : m.params)
      for (auto [prefix, into] : {std::pair{checkpoint::kFirstMoment, &first},
                                  std::pair{checkpoint::kSecondMoment, &second}}) {
        Tensor *t = c.find(prefix + p->name);
        if (!t || t->shape() != p->shape || t->dtype() != DType::F32)
          fail("'" + resumed + "' has no optimizer state '" + prefix +
               p->name + "' of shape " + formatShape(p->shape) +
               " (resume from a checkpoint hkt-run train wrote; start from "
               "weights with --params)");
        into->emplace(p->name, std::move(*t));
      }
    auto num = [&](const char *key) {
      std::string v = c.meta(key);
      if (v.empty())
        fail("'" + resumed + "' has no '" + key +
             "' in its metadata: not a training checkpoint");
      return v;
    };
    auto integer = [&](const char *key) -> int64_t {
      std::string v = num(key);
      int64_t out = 0;
      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
      if (ec != std::errc() || end != v.data() + v.size() || out < 0)
        fail("'" + resumed + "': metadata '" + key + "' = '" + v +
             "' is not a non-negative integer");
      return out;
    };
    auto real = [&](const char *key) {
      std::string v = num(key);
      char *end = nullptr;
      double out = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || !std::isfinite(out))
        fail("'" + resumed + "': metadata '" + key + "' = '" + v +
             "' is not a number");
      return out;
    };
    st.task = num("task");
    st.seed = static_cast<uint64_t>(integer("seed"));
    st.dataSeed = static_cast<uint64_t>(integer("data_seed"));
    st.batch = integer("batch");
    st.step = integer("step");
    st.examplesSeen = integer("examples_seen");
    st.lr = real("lr");
    st.weightDecay = real("weight_decay");
    st.beta1 = real("beta1");
    st.beta2 = real("beta2");
    st.eps = real("eps");
    st.warmup = integer("warmup");
    st.schedule = num("schedule");
    st.decaySteps = integer("decay_steps");
    if (st.batch < 1)
      fail("'" + resumed + "': metadata 'batch' must be at least 1");
    // What defines the data may not change: it would not be a continuation.
    auto same = [&](const char *flag, const std::string &saved) {
      if (a.has(flag) && a.str(flag) != saved)
        fail(std::string(flag) + " " + a.str(flag) + " differs from the " +
             saved + " that '" + resumed + "' was trained with");
    };
    same("--task", st.task);
    same("--seed", std::to_string(st.seed));
    same("--data-seed", std::to_string(st.dataSeed));
    same("--batch", std::to_string(st.batch));
  } else {
    st.task = a.str("--task");
    st.seed = static_cast<uint64_t>(a.integer("--seed", 0, 0, INT64_MAX));
    st.dataSeed = static_cast<uint64_t>(a.integer("--data-seed", 1, 0, INT64_MAX));
    st.batch = a.integer("--batch", std::min<int64_t>(32, m.maxBatch), 1,
                         INT64_C(1) << 20);
    if (a.has("--params")) {
      std::string path = a.str("--params");
      Checkpoint c = check(readCheckpoint(path));
      params = loadParameters(m, c, path);
    } else {
      for (const TensorSpec *p : m.params)
        params.emplace(p->name, initParameter(*p, st.seed));
    }
    for (const TensorSpec *p : m.params) {
      first.emplace(p->name, check(Tensor::allocate(DType::F32, p->shape)));
      second.emplace(p->name, check(Tensor::allocate(DType::F32, p->shape)));
    }
  }
  st.lr = a.real("--lr", st.lr, 0, 1e30);
  st.weightDecay = a.real("--weight-decay", st.weightDecay, 0, 1e6);
  st.beta1 = a.real("--beta1", st.beta1, 0, 0.999999);
  st.beta2 = a.real("--beta2", st.beta2, 0, 0.999999999);
  st.eps = a.real("--eps", st.eps, 1e-30, 1);
  st.warmup = a.integer("--warmup", st.warmup, 0, INT64_C(1) << 40);
  if (a.has("--schedule"))
    st.schedule = schedule;
  int64_t finalStep = st.step + steps;
  if (a.has("--decay-steps"))
    st.decaySteps = a.integer("--decay-steps", 0, 1, INT64_C(1) << 40);
  else if (resumed.empty())
    st.decaySteps = finalStep;
  if (st.batch > m.maxBatch)
    fail("--batch " + std::to_string(st.batch) + " exceeds the largest batch "
         "the module takes (" + std::to_string(m.maxBatch) +
         "; compile with hkt-compile --max-batch N)");
  int64_t evalEvery = a.integer("--eval-every", 0, 0, INT64_C(1) << 40);
  int64_t evalExamples = a.integer("--eval-examples", -1, -1, INT64_C(1) << 40);
  int64_t saveEvery = a.integer("--save-every", 0, 0, INT64_C(1) << 40);
  int64_t logEvery = a.integer("--log-every", 10, 1, INT64_C(1) << 40);
  std::string savePath = a.str("--save");
  // Found out now, not after the run: a checkpoint that cannot be written.
  {
    size_t slash = savePath.find_last_of('/');
    std::string dir = slash == std::string::npos ? "." : savePath.substr(0, slash + 1);
    if (::access(dir.c_str(), W_OK) != 0)
      fail("cannot write the checkpoint '" + savePath + "': its directory '" +
           dir + "' is not writable (" + std::strerror(errno) + ")");
  }

  std::unique_ptr<Task> task = openModelTask(m, st.task, st.dataSeed);
  int64_t trainSize = task->size(Split::Train);
  if (trainSize == 0)
    fail("task '" + st.task + "' has no training examples");
  DataOrder order(trainSize, st.seed);

  // The log: appended to when resuming, so one file holds the whole run.
  FILE *log = nullptr;
  if (a.has("--log")) {
    log = std::fopen(a.str("--log").c_str(), resumed.empty() ? "w" : "a");
    if (!log)
      fail("cannot open the log '" + a.str("--log") +
           "': " + std::strerror(errno));
  }
  auto logLine = [&](const json &j) {
    if (log) {
      std::fprintf(log, "%s\n", j.dump().c_str());
      std::fflush(log);
    }
  };

  // The call's tensors, reused every step; the in-out ones are updated in
  // place by the compiled step.
  Tensor tokens = check(Tensor::allocate(DType::I32, {st.batch, m.maxLen}));
  Tensor labels = check(Tensor::allocate(DType::I32, {st.batch}));
  std::map<std::string, Tensor> scalars;
  for (const char *name : {"lr", "beta1", "beta2", "eps", "weight_decay"})
    scalars.emplace(name, check(Tensor::allocate(DType::F32, {})));
  Tensor stepTensor = check(Tensor::allocate(DType::I64, {}));
  Tensor loss = check(Tensor::allocate(DType::F32, {}));
  std::vector<Tensor *> args;
  for (const TensorSpec &spec : trainStep.spec().args) {
    const std::string &n = spec.name;
    if (n == "tokens")
      args.push_back(&tokens);
    else if (n == "labels")
      args.push_back(&labels);
    else if (n == "step")
      args.push_back(&stepTensor);
    else if (scalars.count(n))
      args.push_back(&scalars.at(n));
    else if (n.rfind(checkpoint::kFirstMoment, 0) == 0)
      args.push_back(&first.at(n.substr(std::strlen(checkpoint::kFirstMoment))));
    else if (n.rfind(checkpoint::kSecondMoment, 0) == 0)
      args.push_back(
          &second.at(n.substr(std::strlen(checkpoint::kSecondMoment))));
    else if (params.count(n))
      args.push_back(&params.at(n));
    else
      fail("train_step has an argument '" + n + "' this runtime does not know");
  }
  *scalars.at("beta1").dataAs<float>() = static_cast<float>(st.beta1);
  *scalars.at("beta2").dataAs<float>() = static_cast<float>(st.beta2);
  *scalars.at("eps").dataAs<float>() = static_cast<float>(st.eps);
  *scalars.at("weight_decay").dataAs<float>() =
      static_cast<float>(st.weightDecay);

  auto save = [&]() {
    std::vector<std::pair<std::string, const Tensor *>> named;
    for (const TensorSpec *p : m.params)
      named.emplace_back(p->name, &params.at(p->name));
    for (const TensorSpec *p : m.params)
      named.emplace_back(checkpoint::kFirstMoment + p->name, &first.at(p->name));
    for (const TensorSpec *p : m.params)
      named.emplace_back(checkpoint::kSecondMoment + p->name, &second.at(p->name));
    std::map<std::string, std::string> meta = st.metadata();
    meta[checkpoint::kModel] = m.config.dump();
    check(writeCheckpoint(savePath, named, meta));
  };
  int64_t evalBatch = std::min<int64_t>(m.maxBatch, 64);
  std::optional<double> lastAccuracy;
  auto evaluate = [&]() {
    Accuracy acc;
    predictSplit(m, params, *task, Split::Valid, evalExamples, evalBatch, &acc);
    lastAccuracy = acc.value();
    logLine({{"step", st.step},
             {"split", "valid"},
             {"accuracy", acc.value()},
             {"examples", acc.examples}});
    return acc;
  };

  bool terminal = !quiet && ::isatty(STDERR_FILENO);
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  double trainSeconds = 0, windowLoss = 0;
  int64_t windowSteps = 0, doneSteps = 0;
  double lastLoss = 0;
  std::optional<double> lastWindowLoss;
  std::vector<Example> examples(static_cast<size_t>(st.batch));
  for (int64_t k = 0; k < steps; ++k) {
    int64_t t = st.step + 1;
    for (int64_t r = 0; r < st.batch; ++r)
      examples[r] = check(
          task->get(Split::Train, order.at(st.examplesSeen + r)));
    fillBatch(examples, tokens, labels, m.maxLen);
    double lr = st.learningRate(t);
    *scalars.at("lr").dataAs<float>() = static_cast<float>(lr);
    *stepTensor.dataAs<int64_t>() = t;
    auto before = Clock::now();
    check(trainStep.call(args, {&loss}));
    trainSeconds += std::chrono::duration<double>(Clock::now() - before).count();
    double value = *loss.dataAs<float>();
    if (!std::isfinite(value)) {
      if (terminal)
        std::fprintf(stderr, "\n");
      // The parameters are already updated from a non-finite gradient: never
      // saved. The last checkpoint on disk stays as it is.
      fail("the loss is " + std::string(std::isnan(value) ? "nan" : "infinite") +
           " at step " + std::to_string(t) + " (learning rate " +
           formatDouble(lr) + "); stopped without saving, '" + savePath +
           "' is left as it was" +
           (resumed.empty() ? "" : " (resumed at step " +
                                       std::to_string(t - 1 - k) + ")"));
    }
    st.step = t;
    st.examplesSeen += st.batch;
    ++doneSteps;
    lastLoss = value;
    windowLoss += value;
    ++windowSteps;
    double rate = trainSeconds > 0 ? doneSteps * st.batch / trainSeconds : 0;
    bool logNow = t % logEvery == 0 || k + 1 == steps;
    if (logNow) {
      lastWindowLoss = windowLoss / windowSteps;
      logLine({{"step", t},
               {"loss", *lastWindowLoss},
               {"lr", lr},
               {"examples_per_s", rate},
               {"elapsed_s",
                std::chrono::duration<double>(Clock::now() - start).count()}});
      windowLoss = 0;
      windowSteps = 0;
    }
    if (evalEvery && t % evalEvery == 0 && k + 1 != steps)
      evaluate();
    if (saveEvery && t % saveEvery == 0 && k + 1 != steps)
      save();
    double eta = rate > 0 ? (steps - k - 1) * st.batch / rate : 0;
    std::string acc = lastAccuracy ? formatDouble(*lastAccuracy).substr(0, 5) : "-";
    if (terminal) {
      int width = 24, filled = static_cast<int>(width * (k + 1) / steps);
      std::fprintf(stderr,
                   "\r[%s%s] step %lld/%lld loss %.4f acc %s %.1f ex/s ETA %s  ",
                   std::string(filled, '#').c_str(),
                   std::string(width - filled, '.').c_str(), (long long)t,
                   (long long)finalStep, value, acc.c_str(), rate,
                   formatDuration(eta).c_str());
      std::fflush(stderr);
    } else if (!quiet && logNow) {
      std::fprintf(stderr,
                   "step %lld/%lld loss %.4f acc %s %.1f ex/s eta %s\n",
                   (long long)t, (long long)finalStep, *lastWindowLoss,
                   acc.c_str(), rate, formatDuration(eta).c_str());
    }
  }
  if (terminal)
    std::fprintf(stderr, "\n");
  Accuracy final;
  if (evalExamples != 0)
    final = evaluate();
  save();
  if (log)
    std::fclose(log);
  json result = {{"step", st.step},
                 {"train_loss", lastWindowLoss.value_or(lastLoss)},
                 {"examples_per_s",
                  trainSeconds > 0 ? doneSteps * st.batch / trainSeconds : 0.0}};
  if (evalExamples != 0) {
    result["eval_accuracy"] = final.value();
    result["eval_examples"] = final.examples;
  }
  std::printf("%s\n", result.dump().c_str());
  return 0;
}

//===----------------------------------------------------------------------===//
// eval, predict
//===----------------------------------------------------------------------===//

std::map<std::string, Tensor> parametersFromFlag(const Model &m,
                                                 const Args &a) {
  if (!a.has("--params"))
    throw UsageError("give the weights with --params CKPT.safetensors");
  std::string path = a.str("--params");
  Checkpoint c = check(readCheckpoint(path));
  return loadParameters(m, c, path);
}

int runEval(int argc, char **argv) {
  Args a = parseArgs(argc, argv,
                     {"--params", "--task", "--split", "--limit", "--batch",
                      "--data-seed", "--threads"},
                     {});
  if (!a.has("--task"))
    throw UsageError("eval needs --task TASK");
  Split split = parseSplit(a.str("--split", "test"));
  configureThreads(a);
  Model m = openModel(a.module);
  std::map<std::string, Tensor> params = parametersFromFlag(m, a);
  std::unique_ptr<Task> task = openModelTask(
      m, a.str("--task"),
      static_cast<uint64_t>(a.integer("--data-seed", 1, 0, INT64_MAX)));
  int64_t batch = a.integer("--batch", std::min<int64_t>(64, m.maxBatch), 1,
                            m.maxBatch);
  Accuracy acc;
  predictSplit(m, params, *task, split,
               a.integer("--limit", -1, -1, INT64_C(1) << 40), batch, &acc);
  std::printf("%s\n", json({{"split", splitName(split)},
                            {"accuracy", acc.value()},
                            {"correct", acc.correct},
                            {"examples", acc.examples}})
                          .dump()
                          .c_str());
  return 0;
}

int runPredict(int argc, char **argv) {
  Args a = parseArgs(argc, argv,
                     {"--params", "--task", "--split", "--limit", "--tokens",
                      "--output", "--batch", "--data-seed", "--threads"},
                     {});
  if (!a.has("--output"))
    throw UsageError("predict needs --output P.npy");
  if (a.has("--task") == a.has("--tokens"))
    throw UsageError("predict needs one of --task TASK and --tokens T.npy");
  configureThreads(a);
  Model m = openModel(a.module);
  std::map<std::string, Tensor> params = parametersFromFlag(m, a);
  int64_t batch = a.integer("--batch", std::min<int64_t>(64, m.maxBatch), 1,
                            m.maxBatch);
  std::vector<int32_t> predictions;
  if (a.has("--task")) {
    std::unique_ptr<Task> task = openModelTask(
        m, a.str("--task"),
        static_cast<uint64_t>(a.integer("--data-seed", 1, 0, INT64_MAX)));
    predictions = predictSplit(m, params, *task,
                               parseSplit(a.str("--split", "test")),
                               a.integer("--limit", -1, -1, INT64_C(1) << 40),
                               batch, nullptr);
  } else {
    std::string path = a.str("--tokens");
    Tensor given = check(readNpy(path));
    if (given.rank() != 2 || given.dtype() != DType::I32)
      fail("'" + path + "': tokens must be a 2-D int32 array (rows x "
           "positions), got " + given.describe());
    int64_t rows = given.shape()[0], width = given.shape()[1];
    if (width > m.maxLen)
      fail("'" + path + "': " + std::to_string(width) +
           " positions, more than the model's max_len " +
           std::to_string(m.maxLen));
    const int32_t *g = given.dataAs<int32_t>();
    for (int64_t start = 0; start < rows; start += batch) {
      int64_t n = std::min(batch, rows - start);
      Tensor tokens = check(Tensor::allocate(DType::I32, {n, m.maxLen}));
      int32_t *t = tokens.dataAs<int32_t>();
      for (int64_t r = 0; r < n; ++r) {
        const int32_t *row = g + (start + r) * width;
        if (width == 0 || row[0] == 0)
          fail("'" + path + "': row " + std::to_string(start + r) +
               " is all padding (its first token is 0)");
        for (int64_t j = 0; j < width; ++j) {
          if (row[j] < 0 || row[j] >= m.vocab)
            fail("'" + path + "': token " + std::to_string(row[j]) +
                 " at [" + std::to_string(start + r) + "," +
                 std::to_string(j) + "] is outside the vocabulary [0, " +
                 std::to_string(m.vocab - 1) + "]");
          t[r * m.maxLen + j] = row[j];
        }
      }
      predictBatch(m, params, tokens, predictions);
    }
  }
  Tensor out = check(Tensor::allocate(
      DType::I32, {static_cast<int64_t>(predictions.size())}));
  std::copy(predictions.begin(), predictions.end(), out.dataAs<int32_t>());
  check(writeNpy(a.str("--output"), out));
  std::printf("%s\n", json({{"predictions", predictions.size()},
                            {"file", a.str("--output")}})
                          .dump()
                          .c_str());
  return 0;
}

//===----------------------------------------------------------------------===//
// export
//===----------------------------------------------------------------------===//

/// The weights of a checkpoint, without its optimizer state: the file a
/// user hands on. The metadata keeps the model config and the step.
int runExport(int argc, char **argv) {
  Args a = parseArgs(argc, argv, {"-o", "--output"}, {},
                     "no checkpoint: give the file hkt-run train --save wrote");
  if (a.has("-o") == a.has("--output"))
    throw UsageError("export needs -o W.safetensors");
  std::string path = a.module, out = a.str(a.has("-o") ? "-o" : "--output");
  std::error_code ec;
  if (std::filesystem::equivalent(path, out, ec))
    fail("export would overwrite the checkpoint '" + path +
         "' with its weights alone (its optimizer state would be lost); "
         "give another file to -o");
  Checkpoint c = check(readCheckpoint(path));
  if (!isCheckpointMetadata(c.metadata))
    fail("'" + path + "' is not a checkpoint (its metadata has no format '" +
         std::string(checkpoint::kFormatName) +
         "'): it is a weight file already");
  std::vector<std::pair<std::string, const Tensor *>> weights;
  size_t dropped = 0;
  for (const auto &[name, tensor] : c.tensors) {
    if (isOptimizerState(name))
      ++dropped;
    else
      weights.emplace_back(name, &tensor);
  }
  if (weights.empty())
    fail("'" + path + "' holds no weights, only optimizer state");
  std::map<std::string, std::string> meta;
  for (const char *key : {checkpoint::kModel, checkpoint::kStep})
    if (std::string v = c.meta(key); !v.empty())
      meta[key] = v;
  check(writeCheckpoint(out, weights, meta));
  json result = {{"parameters", weights.size()},
                 {"optimizer_state_dropped", dropped},
                 {"file", out}};
  std::string step = c.meta(checkpoint::kStep);
  int64_t stepValue = 0;
  auto [end, parseError] =
      std::from_chars(step.data(), step.data() + step.size(), stepValue);
  if (!step.empty() && parseError == std::errc() &&
      end == step.data() + step.size())
    result["step"] = stepValue;
  std::printf("%s\n", result.dump().c_str());
  return 0;
}

} // namespace

bool isTrainingCommand(const std::string &word) {
  return word == "init" || word == "train" || word == "eval" ||
         word == "predict" || word == "export";
}

int runTrainingCommand(const std::string &command, int argc, char **argv) {
  try {
    if (argc >= 1 && (std::strcmp(argv[0], "--help") == 0 ||
                      std::strcmp(argv[0], "-h") == 0)) {
      std::printf("%s\n", kUsage);
      return 0;
    }
    if (command == "init")
      return runInit(argc, argv);
    if (command == "train")
      return runTrain(argc, argv);
    if (command == "eval")
      return runEval(argc, argv);
    if (command == "export")
      return runExport(argc, argv);
    return runPredict(argc, argv);
  } catch (const UsageError &e) {
    std::fprintf(stderr, "hkt-run %s: error: %s\n%s\n", command.c_str(),
                 e.what(), kUsage);
    return 2;
  } catch (const RunError &e) {
    std::fprintf(stderr, "hkt-run %s: error: %s\n", command.c_str(), e.what());
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "hkt-run %s: error: out of memory\n", command.c_str());
  } catch (const std::exception &e) {
    std::fprintf(stderr, "hkt-run %s: error: %s\n", command.c_str(), e.what());
  }
  return 1;
}

} // namespace hkt::run
