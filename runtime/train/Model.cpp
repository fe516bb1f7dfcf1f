//===- Model.cpp - A compiled model and its parameters --------------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/Model.h"
#include "runtime/Internal.h"
#include "runtime/Random.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace hkt::runtime;
using namespace hkt::train;
using hkt::runtime::detail::check;
using hkt::runtime::detail::concat;
using hkt::runtime::detail::fail;
using hkt::runtime::detail::guarded;
using hkt::runtime::detail::take;
using json = nlohmann::json;

namespace {

uint64_t hashString(const std::string &s) {
  uint64_t h = 1469598103934665603ull; // FNV-1a
  for (unsigned char c : s)
    h = (h ^ c) * 1099511628211ull;
  return h;
}

/// SPEC "Initialisation for training", by parameter name.
Tensor initParameter(const TensorSpec &spec, uint64_t seed) {
  Tensor t = take(Tensor::allocate(DType::F32, spec.shape));
  float *p = t.dataAs<float>();
  int64_t n = t.numElements();
  const std::string &name = spec.name;
  auto endsWith = [&](const char *suffix) {
    size_t k = std::strlen(suffix);
    return name.size() >= k && name.compare(name.size() - k, k, suffix) == 0;
  };
  if (endsWith("ln1.weight") || endsWith("ln2.weight") ||
      name == "ln_f.weight") {
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

} // namespace

Expected<Model> Model::open(const std::string &dir) {
  return guarded<Expected<Model>>("model '" + dir + "'", [&]() -> Model {
    Model m;
    m.directory = dir;
    m.module = take(CompiledModule::open(dir));
    const std::string &config = m.module->manifest().modelConfig;
    if (config.empty())
      fail("module '", dir,
           "' is not a model: its manifest records no model config (compile "
           "one with hkt-compile --model MODEL.json)");
    json j = json::parse(config);
    m.configJson = j.dump();
    m.maxLength = j.value("max_len", 0);
    m.vocabulary = j.value("vocab", 0);
    m.classCount = j.value("classes", 0);
    m.logits = m.module->findEntry("logits");
    if (!m.logits)
      fail("module '", dir, "' has no entry 'logits'");
    for (const TensorSpec &a : m.logits->spec().args) {
      if (a.role == Role::Parameter)
        m.params.push_back(&a);
      if (a.name == "tokens" && a.dims.size() == 2) {
        if (a.dims[0])
          m.batchBound = a.dims[0]->max;
        m.lengthIsDynamic = a.dims[1].has_value();
      }
    }
    if (m.maxLength < 1 || m.vocabulary < 2 || m.classCount < 1 ||
        m.batchBound < 1)
      fail("module '", dir, "': unexpected model config or entries");
    return m;
  });
}

Expected<const Entry *> Model::entry(const std::string &name) const {
  if (const Entry *e = module->findEntry(name))
    return e;
  return Status::error("module '" + directory + "' has no entry '" + name +
                       "' (compile it with hkt-compile --model, without "
                       "--inference)");
}

Expected<std::unique_ptr<Task>> Model::openTask(const std::string &spec,
                                                uint64_t dataSeed) const {
  using Result = Expected<std::unique_ptr<Task>>;
  return guarded<Result>("task '" + spec + "'", [&]() -> Result {
    std::unique_ptr<Task> task =
        take(train::openTask(spec, maxLength, dataSeed));
    if (task->vocab() > vocabulary)
      fail("task '", spec, "' has token ids up to ", task->vocab() - 1,
           "; the model's vocab is ", vocabulary,
           " (compile a model with vocab >= ", task->vocab(), ")");
    if (task->classes() > classCount)
      fail("task '", spec, "' has ", task->classes(),
           " classes; the model has ", classCount);
    return task;
  });
}

Expected<TensorMap> Model::initParameters(uint64_t seed) const {
  return guarded<Expected<TensorMap>>("initialising parameters", [&] {
    TensorMap out;
    for (const TensorSpec *p : params)
      out.emplace(p->name, initParameter(*p, seed));
    return out;
  });
}

Expected<TensorMap> Model::zerosLikeParameters() const {
  return guarded<Expected<TensorMap>>("allocating optimizer state", [&] {
    TensorMap out;
    for (const TensorSpec *p : params)
      out.emplace(p->name, take(Tensor::allocate(DType::F32, p->shape)));
    return out;
  });
}

Expected<TensorMap> Model::takeParameters(Checkpoint &file,
                                          const std::string &path) const {
  return guarded<Expected<TensorMap>>("'" + path + "'", [&] {
    check(checkModelConfig(file.meta(checkpoint::kModel), path,
                           module->manifest().modelConfig, directory));
    TensorMap out;
    for (const TensorSpec *spec : params) {
      Tensor *t = file.find(spec->name);
      if (!t)
        fail("'", path, "' has no parameter '", spec->name,
             "' (the module's parameters have SPEC's names)");
      if (t->dtype() != DType::F32 || t->shape() != spec->shape)
        fail("'", path, "': parameter '", spec->name, "' is ", t->describe(),
             ", the module needs f32 ", formatShape(spec->shape));
      out.emplace(spec->name, std::move(*t));
    }
    return out;
  });
}

Status Model::predict(TensorMap &parameters, Tensor &tokens,
                      std::vector<int32_t> &predictions) const {
  int64_t rows = tokens.shape()[0];
  Expected<Tensor> logitsOut = Tensor::allocate(DType::F32, {rows, classCount});
  if (!logitsOut)
    return logitsOut.status();
  std::vector<Tensor *> args;
  for (const TensorSpec &a : logits->spec().args) {
    if (a.name == "tokens") {
      args.push_back(&tokens);
      continue;
    }
    auto it = parameters.find(a.name);
    if (it == parameters.end())
      return Status::error("no value for the parameter '" + a.name + "'");
    args.push_back(&it->second);
  }
  if (Status s = logits->call(args, {&*logitsOut}); !s.ok())
    return s;
  const float *l = logitsOut->dataAs<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = l + r * classCount;
    predictions.push_back(
        static_cast<int32_t>(std::max_element(row, row + classCount) - row));
  }
  return Status::success();
}

Expected<std::vector<int32_t>>
Model::predictSplit(TensorMap &parameters, const Task &task, Split split,
                    int64_t limit, int64_t batch, Accuracy *accuracy) const {
  int64_t n = task.size(split);
  if (limit >= 0)
    n = std::min(n, limit);
  if (n == 0)
    return Status::error(concat("predicting: task '", task.name(), "' has no ",
                                splitName(split), " examples"));
  return predictRange(parameters, task, split, 0, n, batch, accuracy);
}

Expected<std::vector<int32_t>> Model::predictRange(TensorMap &parameters,
                                                   const Task &task,
                                                   Split split, int64_t begin,
                                                   int64_t end, int64_t batch,
                                                   Accuracy *accuracy) const {
  using Result = Expected<std::vector<int32_t>>;
  return guarded<Result>("predicting", [&]() -> Result {
    if (begin < 0 || end < begin || end > task.size(split))
      fail("examples [", begin, ", ", end, ") are not in the ",
           splitName(split), " split of task '", task.name(), "'");
    std::vector<int32_t> predictions;
    for (int64_t start = begin; start < end; start += batch) {
      int64_t rows = std::min(batch, end - start);
      std::vector<Example> examples;
      for (int64_t i = 0; i < rows; ++i)
        examples.push_back(take(task.get(split, start + i)));
      Tensor tokens =
          take(Tensor::allocate(DType::I32, {rows, batchWidth(examples)}));
      Tensor labels = take(Tensor::allocate(DType::I32, {rows}));
      fillBatch(examples, tokens, labels);
      size_t first = predictions.size();
      check(predict(parameters, tokens, predictions));
      if (accuracy)
        for (int64_t i = 0; i < rows; ++i) {
          accuracy->examples++;
          accuracy->correct += predictions[first + i] == examples[i].label;
        }
    }
    return predictions;
  });
}

int64_t Model::batchWidth(const std::vector<Example> &examples) const {
  if (!lengthIsDynamic)
    return maxLength;
  size_t longest = 1;
  for (const Example &e : examples)
    longest = std::max(longest, e.tokens.size());
  return static_cast<int64_t>(longest);
}

void hkt::train::fillBatch(const std::vector<Example> &examples, Tensor &tokens,
                           Tensor &labels) {
  const int64_t width = tokens.shape()[1];
  std::memset(tokens.data(), 0, tokens.byteSize());
  int32_t *tok = tokens.dataAs<int32_t>();
  int32_t *lab = labels.dataAs<int32_t>();
  for (size_t r = 0; r < examples.size(); ++r) {
    const Example &e = examples[r];
    std::copy(e.tokens.begin(), e.tokens.end(),
              tok + static_cast<int64_t>(r) * width);
    lab[r] = e.label;
  }
}
