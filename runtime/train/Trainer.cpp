//===- Trainer.cpp - The training loop of a compiled model ----------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/Trainer.h"
#include "runtime/Internal.h"
#include "runtime/Random.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace hkt::runtime;
using namespace hkt::train;
using hkt::runtime::detail::check;
using hkt::runtime::detail::concat;
using hkt::runtime::detail::fail;
using hkt::runtime::detail::guarded;
using hkt::runtime::detail::take;

namespace {

/// Round-trips exactly through the metadata's text.
std::string formatDouble(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

/// Reads a checkpoint's metadata values, naming the file in messages.
struct MetadataReader {
  const std::map<std::string, std::string> &metadata;
  const std::string &path;

  std::string text(const char *key) const {
    auto it = metadata.find(key);
    if (it == metadata.end() || it->second.empty())
      fail("'", path, "' has no '", key,
           "' in its metadata: not a training checkpoint");
    return it->second;
  }
  int64_t integer(const char *key) const {
    std::string v = text(key);
    int64_t out = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (ec != std::errc() || end != v.data() + v.size() || out < 0)
      fail("'", path, "': metadata '", key, "' = '", v,
           "' is not a non-negative integer");
    return out;
  }
  double real(const char *key) const {
    std::string v = text(key);
    char *end = nullptr;
    double out = std::strtod(v.c_str(), &end);
    if (*end || !std::isfinite(out))
      fail("'", path, "': metadata '", key, "' = '", v, "' is not a number");
    return out;
  }
};

} // namespace

//===----------------------------------------------------------------------===//
// TrainingState
//===----------------------------------------------------------------------===//

std::map<std::string, std::string> TrainingState::metadata() const {
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

Expected<TrainingState>
TrainingState::fromMetadata(const std::map<std::string, std::string> &metadata,
                            const std::string &path) {
  return guarded<Expected<TrainingState>>("'" + path + "'", [&] {
    MetadataReader r{metadata, path};
    TrainingState st;
    st.task = r.text("task");
    st.seed = static_cast<uint64_t>(r.integer("seed"));
    st.dataSeed = static_cast<uint64_t>(r.integer("data_seed"));
    st.batch = r.integer("batch");
    st.step = r.integer("step");
    st.examplesSeen = r.integer("examples_seen");
    st.lr = r.real("lr");
    st.weightDecay = r.real("weight_decay");
    st.beta1 = r.real("beta1");
    st.beta2 = r.real("beta2");
    st.eps = r.real("eps");
    st.warmup = r.integer("warmup");
    st.schedule = r.text("schedule");
    st.decaySteps = r.integer("decay_steps");
    if (st.batch < 1)
      fail("'", path, "': metadata 'batch' must be at least 1");
    if (!isSchedule(st.schedule))
      fail("'", path, "': metadata 'schedule' = '", st.schedule,
           "' is not constant, cosine or linear");
    return st;
  });
}

double TrainingState::learningRate(int64_t t) const {
  if (warmup > 0 && t <= warmup)
    return lr * static_cast<double>(t) / static_cast<double>(warmup);
  if (schedule == "constant" || decaySteps <= warmup)
    return lr;
  double progress = std::min(1.0, static_cast<double>(t - warmup) /
                                      static_cast<double>(decaySteps - warmup));
  if (schedule == "cosine")
    return lr * 0.5 * (1.0 + std::cos(M_PI * progress));
  return lr * (1.0 - progress);
}

bool hkt::train::isSchedule(const std::string &name) {
  return name == "constant" || name == "cosine" || name == "linear";
}

int64_t DataOrder::at(int64_t position) {
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

//===----------------------------------------------------------------------===//
// Trainer
//===----------------------------------------------------------------------===//

Expected<std::unique_ptr<Trainer>>
Trainer::create(const Model &model, TrainingState state, TensorMap parameters,
                TensorMap firstMoment, TensorMap secondMoment,
                std::unique_ptr<Task> task, RankShare share) {
  using Result = Expected<std::unique_ptr<Trainer>>;
  return guarded<Result>("training", [&]() -> Result {
    const Entry *trainStep = take(model.entry("train_step"));
    if (share.ranks < 1 || share.rank < 0 || share.rank >= share.ranks)
      fail("rank ", share.rank, " of ", share.ranks, " is not a rank");
    if (state.batch < share.ranks)
      fail("--batch ", state.batch, " is smaller than the ", share.ranks,
           " ranks (every rank takes at least one row of a batch)");
    int64_t rows = share.end(state.batch) - share.begin(state.batch);
    if (rows > model.maxBatch())
      fail("--batch ", state.batch,
           share.ranks > 1
               ? concat(" (", rows, " rows on a rank of ", share.ranks, ")")
               : std::string(),
           " exceeds the largest batch the module takes (", model.maxBatch(),
           "; compile with hkt-compile --max-batch N)");
    int64_t trainSize = task->size(Split::Train);
    if (trainSize == 0)
      fail("task '", state.task, "' has no training examples");
    std::unique_ptr<Trainer> t(new Trainer(model));
    t->order = std::make_unique<DataOrder>(trainSize, state.seed);
    t->st = std::move(state);
    t->params = std::move(parameters);
    t->first = std::move(firstMoment);
    t->second = std::move(secondMoment);
    t->data = std::move(task);
    t->rankShare = share;
    t->examples.resize(static_cast<size_t>(rows));
    check(t->bindArguments(*trainStep));
    return t;
  });
}

Expected<std::unique_ptr<Trainer>>
Trainer::resume(const Model &model, const std::string &path, RankShare share) {
  using Result = Expected<std::unique_ptr<Trainer>>;
  return guarded<Result>("'" + path + "'", [&]() -> Result {
    Checkpoint c = take(readCheckpoint(path));
    TensorMap params = take(model.takeParameters(c, path));
    TensorMap first, second;
    for (const TensorSpec *p : model.parameters())
      for (auto [prefix, into] :
           {std::pair{checkpoint::kFirstMoment, &first},
            std::pair{checkpoint::kSecondMoment, &second}}) {
        Tensor *t = c.find(prefix + p->name);
        if (!t || t->shape() != p->shape || t->dtype() != DType::F32)
          fail("'", path, "' has no optimizer state '", prefix, p->name,
               "' of shape ", formatShape(p->shape),
               " (resume from a checkpoint hkt-run train wrote; start from "
               "weights with --params)");
        into->emplace(p->name, std::move(*t));
      }
    TrainingState st = take(TrainingState::fromMetadata(c.metadata, path));
    std::unique_ptr<Task> task = take(model.openTask(st.task, st.dataSeed));
    return create(model, std::move(st), std::move(params), std::move(first),
                  std::move(second), std::move(task), share);
  });
}

/// train_step's arguments by name: the batch, the step number, the AdamW
/// scalars, the moments (by their prefixes) and the parameters.
Status Trainer::bindArguments(const Entry &entry) {
  return guarded<Status>("train_step", [&] {
    trainStep = &entry;
    auto rows = static_cast<int64_t>(examples.size());
    tokens = take(Tensor::allocate(DType::I32, {rows, model.maxLen()}));
    labels = take(Tensor::allocate(DType::I32, {rows}));
    stepTensor = take(Tensor::allocate(DType::I64, {}));
    loss = take(Tensor::allocate(DType::F32, {}));
    for (const char *name : {"lr", "beta1", "beta2", "eps", "weight_decay"})
      scalars.emplace(name, take(Tensor::allocate(DType::F32, {})));
    auto moment = [&](TensorMap &moments, const std::string &name,
                      const char *prefix) -> Tensor * {
      auto it = moments.find(name.substr(std::strlen(prefix)));
      if (it == moments.end())
        fail("train_step's argument '", name, "' has no parameter");
      return &it->second;
    };
    for (const TensorSpec &spec : entry.spec().args) {
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
        args.push_back(moment(first, n, checkpoint::kFirstMoment));
      else if (n.rfind(checkpoint::kSecondMoment, 0) == 0)
        args.push_back(moment(second, n, checkpoint::kSecondMoment));
      else if (params.count(n))
        args.push_back(&params.at(n));
      else
        fail("train_step has an argument '", n, "' this runtime does not know");
    }
    if (entry.hasDeviceTwin())
      check(bindDeviceArguments());
    return Status::success();
  });
}

Status Trainer::bindDeviceArguments() {
  return guarded<Status>("the device", [&] {
    device = take(runtime::DeviceMemory::create(model.targetKind()));
    for (Tensor *t : args)
      deviceArgs.push_back(take(device->upload(*t)));
    deviceLoss = take(device->allocate(loss.dtype(), loss.shape()));
    return Status::success();
  });
}

Status Trainer::syncToHost() {
  if (!hostStale)
    return Status::success();
  const std::vector<TensorSpec> &specs = trainStep->spec().args;
  for (size_t i = 0; i < args.size(); ++i)
    if (specs[i].isInOut())
      if (Status s = device->download(*args[i], deviceArgs[i]); !s.ok())
        return s;
  hostStale = false;
  return Status::success();
}

Expected<TensorMap *> Trainer::parameters() {
  if (Status s = syncToHost(); !s.ok())
    return s;
  return &params;
}

Expected<double> Trainer::step() {
  return guarded<Expected<double>>("training step", [&]() -> double {
    int64_t t = st.step + 1;
    // This rank's rows of the batch (all of them on one process).
    int64_t first = st.examplesSeen + rankShare.begin(st.batch);
    auto rows = static_cast<int64_t>(examples.size());
    for (int64_t r = 0; r < rows; ++r)
      examples[r] = take(data->get(Split::Train, order->at(first + r)));
    if (model.dynamicLength())
      // The batch as wide as its longest example (train_step's tokens
      // argument points at this member, so it moves with it; on a device
      // its buffer, allocated at max_len, takes the width).
      tokens = take(
          Tensor::allocate(DType::I32, {rows, model.batchWidth(examples)}));
    fillBatch(examples, tokens, labels);
    *scalars.at("lr").dataAs<float>() = static_cast<float>(st.learningRate(t));
    *scalars.at("beta1").dataAs<float>() = static_cast<float>(st.beta1);
    *scalars.at("beta2").dataAs<float>() = static_cast<float>(st.beta2);
    *scalars.at("eps").dataAs<float>() = static_cast<float>(st.eps);
    *scalars.at("weight_decay").dataAs<float>() =
        static_cast<float>(st.weightDecay);
    *stepTensor.dataAs<int64_t>() = t;
    if (device) {
      // The batch's ranges (token ids, labels) are checked here, on the
      // host, as Entry::call would: the twin cannot read them first.
      std::vector<const Tensor *> hostArgs(args.begin(), args.end());
      check(trainStep->check(hostArgs, {&loss}));
      // The batch and the step's scalars go up; the parameters and moments
      // stay where they are.
      const std::vector<TensorSpec> &specs = trainStep->spec().args;
      std::vector<runtime::DeviceTensor *> deviceArgPtrs;
      for (size_t i = 0; i < args.size(); ++i) {
        deviceArgPtrs.push_back(&deviceArgs[i]);
        if (!specs[i].isInOut())
          check(device->uploadReshaping(deviceArgs[i], *args[i]));
      }
      hostStale = true;
      check(trainStep->callOnDevice(deviceArgPtrs, {&deviceLoss}));
      check(device->download(loss, deviceLoss));
    } else {
      check(trainStep->call(args, {&loss}));
    }
    st.step = t;
    st.examplesSeen += st.batch;
    return *loss.dataAs<float>();
  });
}

Expected<Accuracy> Trainer::evaluate(int64_t limit) {
  if (Status s = syncToHost(); !s.ok())
    return s;
  Accuracy acc;
  int64_t batch = std::min<int64_t>(model.maxBatch(), 64);
  int64_t n = data->size(Split::Valid);
  if (limit >= 0)
    n = std::min(n, limit);
  if (n == 0)
    return Status::error(
        concat("task '", data->name(), "' has no validation examples"));
  auto predictions =
      model.predictRange(params, *data, Split::Valid, rankShare.begin(n),
                         rankShare.end(n), batch, &acc);
  if (!predictions)
    return predictions.status();
  return acc;
}

Status Trainer::save(const std::string &path) {
  if (Status s = syncToHost(); !s.ok())
    return s;
  std::vector<std::pair<std::string, const Tensor *>> named;
  const auto &ps = model.parameters();
  for (const TensorSpec *p : ps)
    named.emplace_back(p->name, &params.at(p->name));
  for (const TensorSpec *p : ps)
    named.emplace_back(checkpoint::kFirstMoment + p->name, &first.at(p->name));
  for (const TensorSpec *p : ps)
    named.emplace_back(checkpoint::kSecondMoment + p->name,
                       &second.at(p->name));
  std::map<std::string, std::string> meta = st.metadata();
  meta[checkpoint::kModel] = model.config();
  return writeCheckpoint(path, named, meta);
}
