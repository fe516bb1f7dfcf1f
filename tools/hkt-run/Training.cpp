//===- Training.cpp - hkt-run init / train / eval / predict ---------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// The command line of the model commands (docs/training.md): flags, logs,
// progress and results. The model, the training loop, checkpoints and
// tasks are the runtime/train library's.
//
//===----------------------------------------------------------------------===//

#include "tools/hkt-run/Training.h"

#include "runtime/Manifest.h"
#include "runtime/Nccl.h"
#include "runtime/Npy.h"
#include "runtime/train/MpiWorld.h"
#include "runtime/train/Trainer.h"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
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
using namespace hkt::train;
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
                [--threads N] [--device cpu|cuda] [--quiet]
  mpirun -np R hkt-run train OUT ...   (OUT compiled with --ranks R: B is
                the whole batch; rank 0 logs and saves; docs/training.md)
  hkt-run eval OUT --params CKPT --task TASK [--split valid|test]
               [--limit N] [--batch B] [--data-seed S] [--threads N]
               [--device cpu|cuda]
  hkt-run predict OUT --params CKPT (--task TASK [--split S] [--limit N]
               | --tokens T.npy) --output P.npy [--batch B] [--threads N]
               [--device cpu|cuda]
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
// The processes of a run
//===----------------------------------------------------------------------===//

/// The MPI world of a data-parallel run, once joined: an error on any rank
/// then ends every rank (MPI_Abort), never leaving the others waiting in a
/// collective.
std::optional<MpiWorld> world;

/// "rank R of N: " in a data-parallel run's messages.
std::string rankPrefix() {
  if (!world)
    return "";
  return "rank " + std::to_string(world->rank()) + " of " +
         std::to_string(world->size()) + ": ";
}

/// Joins the ranks of a data-parallel module (hkt-compile --ranks N) and
/// returns this process's share of each batch; refuses a module and a
/// launch that disagree on the number of processes.
RankShare joinRanks(const Model &m) {
  int64_t expected = m.dataParallelRanks();
  int launched = launchedRanks();
  if (expected == 0) {
    if (launched > 1)
      fail("started as one of " + std::to_string(launched) +
           " processes (mpirun), but module '" + m.dir() +
           "' was compiled for one: each would train alone on the whole "
           "batch and write the same checkpoint; compile it with "
           "hkt-compile --model M.json --ranks " +
           std::to_string(launched));
    return {};
  }
  // One GPU summing with NCCL needs no MPI: a communicator of one.
  if (launched == 1 && expected == 1 && m.sumsWithNccl()) {
    check(
        joinNcclWorld(0, 1, [](void *, size_t) { return Status::success(); }));
    return {};
  }
  if (launched == 1 && expected > 1)
    fail("module '" + m.dir() + "' was compiled for " +
         std::to_string(expected) + " ranks (--ranks " +
         std::to_string(expected) + "): start it with mpirun -np " +
         std::to_string(expected) + " hkt-run train ... (docs/training.md)");
  world = check(MpiWorld::init());
  if (world->size() != expected) {
    std::string message = "module '" + m.dir() + "' was compiled for " +
                          std::to_string(expected) + " ranks (--ranks " +
                          std::to_string(expected) + ") but this run has " +
                          std::to_string(world->size()) +
                          ": start it with mpirun -np " +
                          std::to_string(expected) + " hkt-run train ...";
    fail(message);
  }
  // A GPU module's gradient sums: NCCL, over the same ranks.
  if (m.sumsWithNccl())
    check(joinNcclWorld(world->rank(), world->size(),
                        [](void *data, size_t bytes) {
                          return world->broadcast(data, bytes);
                        }));
  return RankShare{world->rank(), world->size()};
}

/// The leader writes the log, the progress, the checkpoints and the result.
bool isLeader() { return !world || world->rank() == 0; }

/// Sums a rank's share of an evaluation over the ranks.
Accuracy sumOverRanks(Accuracy acc) {
  if (!world)
    return acc;
  std::vector<double> v = {static_cast<double>(acc.correct),
                           static_cast<double>(acc.examples)};
  check(world->sum(v));
  return Accuracy{static_cast<int64_t>(v[0]), static_cast<int64_t>(v[1])};
}

/// A 64-bit digest of the parameters' bytes (the replicas of a
/// data-parallel run must agree bit for bit).
uint64_t digest(const TensorMap &params) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const auto &[name, t] : params) {
    const auto *bytes = static_cast<const unsigned char *>(t.data());
    for (size_t i = 0; i < t.byteSize(); ++i)
      h = (h ^ bytes[i]) * 0x100000001b3ull;
  }
  return h;
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
  double real(const std::string &flag, double def, double lo, double hi) const {
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

/// --device (train, eval, predict): the module must run on that device;
/// checked before it is opened (a cuda module's shared object loads its
/// kernels).
Model openModel(const Args &a) {
  if (a.has("--device")) {
    std::string device = a.str("--device");
    if (device != "cpu" && device != "cuda")
      throw UsageError("--device must be cpu or cuda, got '" + device + "'");
    if (std::string e = deviceMismatch(a.module, device); !e.empty())
      fail(e);
  }
  return check(Model::open(a.module));
}

std::unique_ptr<Task> openModelTask(const Model &m, const std::string &spec,
                                    uint64_t dataSeed) {
  return check(m.openTask(spec, dataSeed));
}

/// The parameters of a checkpoint or weight file, checked against `m`.
TensorMap loadParameters(const Model &m, const std::string &path) {
  Checkpoint c = check(readCheckpoint(path));
  return check(m.takeParameters(c, path));
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
  Model m = check(Model::open(a.module));
  uint64_t seed = static_cast<uint64_t>(a.integer("--seed", 0, 0, INT64_MAX));
  TensorMap params = check(m.initParameters(seed));
  std::vector<std::pair<std::string, const Tensor *>> named;
  for (const TensorSpec *p : m.parameters())
    named.emplace_back(p->name, &params.at(p->name));
  check(writeCheckpoint(a.str("--save"), named,
                        {{checkpoint::kModel, m.config()},
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

/// The trainer of `hkt-run train`'s flags: resumed from --resume (the flags
/// that define the data must agree with it) or started from --params or
/// fresh parameters; then the flags' hyperparameters.
std::unique_ptr<Trainer> startTrainer(const Model &m, const Args &a,
                                      int64_t steps, RankShare share) {
  std::unique_ptr<Trainer> trainer;
  if (a.has("--resume")) {
    std::string resumed = a.str("--resume");
    trainer = check(Trainer::resume(m, resumed, share));
    const TrainingState &st = trainer->state();
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
    TrainingState st;
    st.task = a.str("--task");
    st.seed = static_cast<uint64_t>(a.integer("--seed", 0, 0, INT64_MAX));
    st.dataSeed =
        static_cast<uint64_t>(a.integer("--data-seed", 1, 0, INT64_MAX));
    st.batch = a.integer("--batch", std::min<int64_t>(32, m.maxBatch()), 1,
                         INT64_C(1) << 20);
    TensorMap params = a.has("--params") ? loadParameters(m, a.str("--params"))
                                         : check(m.initParameters(st.seed));
    std::unique_ptr<Task> task = openModelTask(m, st.task, st.dataSeed);
    trainer = check(Trainer::create(
        m, st, std::move(params), check(m.zerosLikeParameters()),
        check(m.zerosLikeParameters()), std::move(task), share));
  }
  TrainingState &st = trainer->hyperparameters();
  st.lr = a.real("--lr", st.lr, 0, 1e30);
  st.weightDecay = a.real("--weight-decay", st.weightDecay, 0, 1e6);
  st.beta1 = a.real("--beta1", st.beta1, 0, 0.999999);
  st.beta2 = a.real("--beta2", st.beta2, 0, 0.999999999);
  st.eps = a.real("--eps", st.eps, 1e-30, 1);
  st.warmup = a.integer("--warmup", st.warmup, 0, INT64_C(1) << 40);
  if (a.has("--schedule"))
    st.schedule = a.str("--schedule");
  if (a.has("--decay-steps"))
    st.decaySteps = a.integer("--decay-steps", 0, 1, INT64_C(1) << 40);
  else if (!a.has("--resume"))
    st.decaySteps = st.step + steps;
  return trainer;
}

/// Fails now, not after the run, if the checkpoint cannot be written.
void checkWritable(const std::string &savePath) {
  size_t slash = savePath.find_last_of('/');
  std::string dir =
      slash == std::string::npos ? "." : savePath.substr(0, slash + 1);
  if (::access(dir.c_str(), W_OK) != 0)
    fail("cannot write the checkpoint '" + savePath + "': its directory '" +
         dir + "' is not writable (" + std::strerror(errno) + ")");
}

/// The run's reports: the JSON-lines log (appended to when resuming, so
/// one file holds the whole run) and the progress on stderr (a bar on a
/// terminal, a line per log window otherwise).
class Progress {
public:
  /// Only the leader of a data-parallel run reports.
  Progress(const Args &a, bool resumed, int64_t finalStep, bool leader)
      : quiet(a.has("--quiet") || !leader),
        terminal(!quiet && ::isatty(STDERR_FILENO)), finalStep(finalStep) {
    if (leader && a.has("--log")) {
      log = std::fopen(a.str("--log").c_str(), resumed ? "a" : "w");
      if (!log)
        fail("cannot open the log '" + a.str("--log") +
             "': " + std::strerror(errno));
    }
  }
  ~Progress() {
    if (log)
      std::fclose(log);
  }
  Progress(const Progress &) = delete;
  Progress &operator=(const Progress &) = delete;

  void logLine(const json &j) {
    if (log) {
      std::fprintf(log, "%s\n", j.dump().c_str());
      std::fflush(log);
    }
  }
  /// Ends the progress bar's line before a message or the result.
  void endLine() {
    if (terminal)
      std::fprintf(stderr, "\n");
  }
  /// `loss` is the step's; `windowLoss` the mean since the last log line,
  /// when this step writes one.
  void show(int64_t t, double fraction, double loss,
            const std::optional<double> &windowLoss,
            const std::optional<double> &accuracy, double rate, double eta) {
    std::string acc = accuracy ? formatDouble(*accuracy).substr(0, 5) : "-";
    if (terminal) {
      int width = 24, filled = static_cast<int>(width * fraction);
      std::fprintf(
          stderr, "\r[%s%s] step %lld/%lld loss %.4f acc %s %.1f ex/s ETA %s  ",
          std::string(filled, '#').c_str(),
          std::string(width - filled, '.').c_str(), (long long)t,
          (long long)finalStep, loss, acc.c_str(), rate,
          formatDuration(eta).c_str());
      std::fflush(stderr);
    } else if (!quiet && windowLoss) {
      std::fprintf(stderr, "step %lld/%lld loss %.4f acc %s %.1f ex/s eta %s\n",
                   (long long)t, (long long)finalStep, *windowLoss, acc.c_str(),
                   rate, formatDuration(eta).c_str());
    }
  }

private:
  bool quiet, terminal;
  int64_t finalStep;
  FILE *log = nullptr;
};

/// train's flags, checked: those that need no module.
Args parseTrainArgs(int argc, char **argv) {
  Args a = parseArgs(
      argc, argv,
      {"--task",       "--steps",         "--save",       "--resume",
       "--params",     "--batch",         "--seed",       "--data-seed",
       "--lr",         "--weight-decay",  "--beta1",      "--beta2",
       "--eps",        "--warmup",        "--schedule",   "--decay-steps",
       "--eval-every", "--eval-examples", "--save-every", "--log",
       "--log-every",  "--threads",       "--device"},
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
  a.integer("--steps", 0, 1, INT64_C(1) << 40);
  if (a.has("--schedule") && !isSchedule(a.str("--schedule")))
    throw UsageError("--schedule must be constant, cosine or linear, got '" +
                     a.str("--schedule") + "'");
  return a;
}

int runTrain(int argc, char **argv) {
  Args a = parseTrainArgs(argc, argv);
  int64_t steps = a.integer("--steps", 0, 1, INT64_C(1) << 40);
  int64_t evalEvery = a.integer("--eval-every", 0, 0, INT64_C(1) << 40);
  int64_t evalExamples = a.integer("--eval-examples", -1, -1, INT64_C(1) << 40);
  int64_t saveEvery = a.integer("--save-every", 0, 0, INT64_C(1) << 40);
  int64_t logEvery = a.integer("--log-every", 10, 1, INT64_C(1) << 40);
  std::string savePath = a.str("--save");
  configureThreads(a);
  Model m = openModel(a);
  RankShare share = joinRanks(m);
  std::unique_ptr<Trainer> trainer = startTrainer(m, a, steps, share);
  const TrainingState &st = trainer->state();
  bool leader = isLeader();
  if (leader)
    checkWritable(savePath);
  int64_t firstStep = st.step + 1, finalStep = st.step + steps;
  Progress progress(a, a.has("--resume"), finalStep, leader);
  // The checkpoint of a data-parallel run is the leader's replica; every
  // rank must hold the same one (the collectives give every rank the same
  // sums), checked before each save.
  auto save = [&]() {
    if (world && !check(world->allEqual(digest(*check(trainer->parameters())))))
      fail("the ranks' parameters differ at step " + std::to_string(st.step) +
           " (their gradient sums disagreed); '" + savePath +
           "' is left as it was");
    if (leader)
      check(trainer->save(savePath));
  };

  std::optional<double> lastAccuracy;
  auto evaluate = [&]() {
    Accuracy acc = sumOverRanks(check(trainer->evaluate(evalExamples)));
    lastAccuracy = acc.value();
    progress.logLine({{"step", st.step},
                      {"split", "valid"},
                      {"accuracy", acc.value()},
                      {"examples", acc.examples}});
    return acc;
  };
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  double trainSeconds = 0, windowLoss = 0, lastLoss = 0;
  int64_t windowSteps = 0;
  std::optional<double> lastWindowLoss;
  for (int64_t k = 0; k < steps; ++k) {
    int64_t t = st.step + 1;
    double lr = st.learningRate(t);
    auto before = Clock::now();
    double value = check(trainer->step());
    trainSeconds +=
        std::chrono::duration<double>(Clock::now() - before).count();
    if (!std::isfinite(value)) {
      progress.endLine();
      // The parameters are already updated from a non-finite gradient: never
      // saved. The last checkpoint on disk stays as it is.
      fail("the loss is " +
           std::string(std::isnan(value) ? "nan" : "infinite") + " at step " +
           std::to_string(t) + " (learning rate " + formatDouble(lr) +
           "); stopped without saving, '" + savePath + "' is left as it was" +
           (a.has("--resume")
                ? " (resumed at step " + std::to_string(firstStep - 1) + ")"
                : ""));
    }
    lastLoss = value;
    windowLoss += value;
    ++windowSteps;
    double rate = trainSeconds > 0 ? (k + 1) * st.batch / trainSeconds : 0;
    bool logNow = t % logEvery == 0 || k + 1 == steps;
    if (logNow) {
      lastWindowLoss = windowLoss / windowSteps;
      progress.logLine(
          {{"step", t},
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
    progress.show(t, static_cast<double>(k + 1) / steps, value,
                  logNow ? lastWindowLoss : std::nullopt, lastAccuracy, rate,
                  eta);
  }
  progress.endLine();
  Accuracy final;
  if (evalExamples != 0)
    final = evaluate();
  save();
  leaveNcclWorld();
  if (world) {
    check(world->finalize());
    if (!leader)
      return 0;
  }
  json result = {{"step", st.step},
                 {"train_loss", lastWindowLoss.value_or(lastLoss)},
                 {"examples_per_s",
                  trainSeconds > 0 ? steps * st.batch / trainSeconds : 0.0}};
  if (trainer->onDevice()) {
    // What crossed between the host and the device in the whole run: the
    // weights and moments once each way, then per step the batch and loss.
    DeviceTraffic traffic = trainer->deviceTraffic();
    result["device_traffic"] = {{"uploads", traffic.uploads},
                                {"bytes_up", traffic.bytesUp},
                                {"downloads", traffic.downloads},
                                {"bytes_down", traffic.bytesDown}};
  }
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

TensorMap parametersFromFlag(const Model &m, const Args &a) {
  if (!a.has("--params"))
    throw UsageError("give the weights with --params CKPT.safetensors");
  return loadParameters(m, a.str("--params"));
}

int runEval(int argc, char **argv) {
  Args a = parseArgs(argc, argv,
                     {"--params", "--task", "--split", "--limit", "--batch",
                      "--data-seed", "--threads", "--device"},
                     {});
  if (!a.has("--task"))
    throw UsageError("eval needs --task TASK");
  Split split = parseSplit(a.str("--split", "test"));
  configureThreads(a);
  Model m = openModel(a);
  TensorMap params = parametersFromFlag(m, a);
  std::unique_ptr<Task> task = openModelTask(
      m, a.str("--task"),
      static_cast<uint64_t>(a.integer("--data-seed", 1, 0, INT64_MAX)));
  int64_t batch = a.integer("--batch", std::min<int64_t>(64, m.maxBatch()), 1,
                            m.maxBatch());
  Accuracy acc;
  check(m.predictSplit(params, *task, split,
                       a.integer("--limit", -1, -1, INT64_C(1) << 40), batch,
                       &acc));
  std::printf("%s\n", json({{"split", splitName(split)},
                            {"accuracy", acc.value()},
                            {"correct", acc.correct},
                            {"examples", acc.examples}})
                          .dump()
                          .c_str());
  return 0;
}

int runPredict(int argc, char **argv) {
  Args a =
      parseArgs(argc, argv,
                {"--params", "--task", "--split", "--limit", "--tokens",
                 "--output", "--batch", "--data-seed", "--threads", "--device"},
                {});
  if (!a.has("--output"))
    throw UsageError("predict needs --output P.npy");
  if (a.has("--task") == a.has("--tokens"))
    throw UsageError("predict needs one of --task TASK and --tokens T.npy");
  configureThreads(a);
  Model m = openModel(a);
  TensorMap params = parametersFromFlag(m, a);
  int64_t batch = a.integer("--batch", std::min<int64_t>(64, m.maxBatch()), 1,
                            m.maxBatch());
  std::vector<int32_t> predictions;
  if (a.has("--task")) {
    std::unique_ptr<Task> task = openModelTask(
        m, a.str("--task"),
        static_cast<uint64_t>(a.integer("--data-seed", 1, 0, INT64_MAX)));
    predictions = check(m.predictSplit(
        params, *task, parseSplit(a.str("--split", "test")),
        a.integer("--limit", -1, -1, INT64_C(1) << 40), batch, nullptr));
  } else {
    std::string path = a.str("--tokens");
    Tensor given = check(readNpy(path));
    if (given.rank() != 2 || given.dtype() != DType::I32)
      fail("'" + path +
           "': tokens must be a 2-D int32 array (rows x "
           "positions), got " +
           given.describe());
    int64_t rows = given.shape()[0], width = given.shape()[1];
    if (width > m.maxLen())
      fail("'" + path + "': " + std::to_string(width) +
           " positions, more than the model's max_len " +
           std::to_string(m.maxLen()));
    const int32_t *g = given.dataAs<int32_t>();
    for (int64_t start = 0; start < rows; start += batch) {
      int64_t n = std::min(batch, rows - start);
      // A model of dynamic length takes the file's width as it is.
      int64_t padded =
          m.dynamicLength() ? std::max<int64_t>(width, 1) : m.maxLen();
      Tensor tokens = check(Tensor::allocate(DType::I32, {n, padded}));
      int32_t *t = tokens.dataAs<int32_t>();
      for (int64_t r = 0; r < n; ++r) {
        const int32_t *row = g + (start + r) * width;
        if (width == 0 || row[0] == 0)
          fail("'" + path + "': row " + std::to_string(start + r) +
               " is all padding (its first token is 0)");
        for (int64_t j = 0; j < width; ++j) {
          if (row[j] < 0 || row[j] >= m.vocab())
            fail("'" + path + "': token " + std::to_string(row[j]) + " at [" +
                 std::to_string(start + r) + "," + std::to_string(j) +
                 "] is outside the vocabulary [0, " +
                 std::to_string(m.vocab() - 1) + "]");
          t[r * padded + j] = row[j];
        }
      }
      check(m.predict(params, tokens, predictions));
    }
  }
  Tensor out = check(
      Tensor::allocate(DType::I32, {static_cast<int64_t>(predictions.size())}));
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

std::string deviceMismatch(const std::string &moduleDir,
                           const std::string &device) {
  Expected<Manifest> m = readManifest(moduleDir + "/manifest.json");
  if (!m)
    return m.message();
  std::string kind = targetKindName(m->target.kind);
  if (kind == device)
    return "";
  return "module '" + moduleDir + "' runs on " + kind +
         (m->target.kind == TargetKind::Cuda ? " (" + m->target.arch + ")"
                                             : std::string()) +
         ", not on --device " + device + ": compile it with hkt-compile " +
         "--target " + (device == "cuda" ? "nvvm" : "cpu");
}

int runTrainingCommand(const std::string &command, int argc, char **argv) {
  try {
    if (argc >= 1 && (std::strcmp(argv[0], "--help") == 0 ||
                      std::strcmp(argv[0], "-h") == 0)) {
      std::printf("%s\n", kUsage);
      return 0;
    }
    if (command == "train")
      return runTrain(argc, argv);
    // Only train runs on several ranks; N copies of the others would each
    // do the whole job (and write the same files).
    if (int launched = launchedRanks(); launched > 1)
      fail("hkt-run " + command + " runs in one process, but this one was "
           "started as one of " + std::to_string(launched) +
           " (mpirun): run it without mpirun (only train is data-parallel)");
    if (command == "init")
      return runInit(argc, argv);
    if (command == "eval")
      return runEval(argc, argv);
    if (command == "export")
      return runExport(argc, argv);
    return runPredict(argc, argv);
  } catch (const UsageError &e) {
    std::fprintf(stderr, "hkt-run %s: error: %s%s\n%s\n", command.c_str(),
                 rankPrefix().c_str(), e.what(), kUsage);
    if (world) {
      std::fflush(stderr);
      world->abort(2);
    }
    return 2;
  } catch (const RunError &e) {
    std::fprintf(stderr, "hkt-run %s: error: %s%s\n", command.c_str(),
                 rankPrefix().c_str(), e.what());
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "hkt-run %s: error: %sout of memory\n",
                 command.c_str(), rankPrefix().c_str());
  } catch (const std::exception &e) {
    std::fprintf(stderr, "hkt-run %s: error: %s%s\n", command.c_str(),
                 rankPrefix().c_str(), e.what());
  }
  // The other ranks may be waiting in a collective for this one.
  if (world) {
    std::fflush(stderr);
    world->abort(1);
  }
  return 1;
}

} // namespace hkt::run
