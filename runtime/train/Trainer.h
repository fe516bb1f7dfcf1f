//===- Trainer.h - The training loop of a compiled model -------*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// Trains a compiled model (docs/training.md): the parameters and AdamW
// moments live in tensors that the module's `train_step` updates in place,
// one call per step; batches come from a Task in a per-epoch order fixed by
// the seed; a checkpoint holds everything a resumed run needs to continue
// exactly (TrainingState's metadata, the parameters, the moments).
//
// The driver (hkt-run train, the Python API, a data-parallel launcher) owns
// the loop around `step()`: logging, evaluation and save points.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_RUNTIME_TRAIN_TRAINER_H
#define HKT_RUNTIME_TRAIN_TRAINER_H

#include "runtime/DeviceMemory.h"
#include "runtime/train/Model.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace hkt::train {

/// Everything that defines a run besides the tensors; saved in the
/// checkpoint's metadata.
struct TrainingState {
  std::string task;
  uint64_t seed = 0, dataSeed = 1;
  int64_t batch = 32;
  int64_t step = 0;         ///< steps done
  int64_t examplesSeen = 0; ///< the data position
  double lr = 1e-3, weightDecay = 0.01, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  int64_t warmup = 0;
  std::string schedule = "constant"; ///< constant, cosine or linear
  int64_t decaySteps = 0;

  /// The checkpoint metadata of this state (without the model config).
  std::map<std::string, std::string> metadata() const;
  /// The state a checkpoint saved; `path` names it in messages.
  static Expected<TrainingState>
  fromMetadata(const std::map<std::string, std::string> &metadata,
               const std::string &path);

  /// The learning rate of step t (1-based): linear warm-up over `warmup`
  /// steps, then constant, cosine or linear decay to 0 at `decaySteps`.
  double learningRate(int64_t t) const;
};

/// True for the schedules TrainingState knows.
bool isSchedule(const std::string &name);

/// The train-set order: a permutation per epoch from (seed, epoch).
class DataOrder {
public:
  DataOrder(int64_t size, uint64_t seed) : size(size), seed(seed) {}
  /// The example at data position `position` (any epoch).
  int64_t at(int64_t position);

private:
  int64_t size;
  uint64_t seed;
  int64_t currentEpoch = -1;
  std::vector<int64_t> order;
};

/// This process's part of a data-parallel run (docs/training.md, "Several
/// processes"): rank `rank` of `ranks` takes the rows [B r / N, B (r + 1) / N)
/// of each batch of B rows, in the order one process would take them all.
struct RankShare {
  int64_t rank = 0, ranks = 1;
  int64_t begin(int64_t rows) const { return rows * rank / ranks; }
  int64_t end(int64_t rows) const { return rows * (rank + 1) / ranks; }
};

/// One training run's tensors and state, bound to the model's train_step.
/// It refers to the Model it was made from, which must outlive it.
class Trainer {
public:
  /// Binds `train_step`'s arguments. `parameters`, `firstMoment` and
  /// `secondMoment` hold a tensor per model parameter; `task` is the opened
  /// `state.task`. Refuses a batch larger than the module takes. `share`:
  /// the rows of each batch this process trains on (a data-parallel
  /// module's rank; `state.batch` is the whole batch of every rank).
  static Expected<std::unique_ptr<Trainer>>
  create(const Model &model, TrainingState state, TensorMap parameters,
         TensorMap firstMoment, TensorMap secondMoment,
         std::unique_ptr<Task> task, RankShare share = {});
  /// A run resumed from a checkpoint that `save` wrote: the state, the
  /// parameters and the moments (on any number of ranks).
  static Expected<std::unique_ptr<Trainer>>
  resume(const Model &model, const std::string &checkpointPath,
         RankShare share = {});

  /// Runs one step on the next batch: the learning rate of the schedule,
  /// the parameters and moments updated in place. Returns the batch's loss,
  /// which may be non-finite: the parameters are then already updated from
  /// a non-finite gradient, and the caller must not save them.
  Expected<double> step();

  /// The validation accuracy over the first `limit` examples (all if < 0);
  /// of a rank, over its share of them (the driver sums the ranks').
  Expected<Accuracy> evaluate(int64_t limit);

  /// Writes the checkpoint atomically (runtime/train/Checkpoint.h).
  Status save(const std::string &path);

  /// Whether the parameters and moments live in device memory between
  /// steps (a GPU module: train_step has a device twin); the host tensors
  /// are then brought up to date only for a checkpoint or an evaluation.
  bool onDevice() const { return device != nullptr; }
  /// The copies between the host and the device so far (zero on the host).
  runtime::DeviceTraffic deviceTraffic() const {
    return device ? device->traffic() : runtime::DeviceTraffic();
  }

  const TrainingState &state() const { return st; }
  const RankShare &share() const { return rankShare; }
  /// Hyperparameters that may change when resuming (lr, schedule, ...); not
  /// those that define the data (task, seeds, batch).
  TrainingState &hyperparameters() { return st; }
  const Task &task() const { return *data; }
  /// The parameters, up to date on the host.
  Expected<TensorMap *> parameters();

private:
  Trainer(const Model &model) : model(model) {}
  Status bindArguments(const runtime::Entry &trainStep);
  /// Uploads every argument (the device's copies start as the host's).
  Status bindDeviceArguments();
  /// Downloads the parameters and moments if a step changed them.
  Status syncToHost();

  const Model &model;
  TrainingState st;
  RankShare rankShare;
  TensorMap params, first, second;
  std::unique_ptr<Task> data;
  std::unique_ptr<DataOrder> order;
  const runtime::Entry *trainStep = nullptr;
  // The call's tensors, reused every step; the in-out ones are the
  // parameters and moments above.
  runtime::Tensor tokens, labels, stepTensor, loss;
  std::map<std::string, runtime::Tensor> scalars;
  std::vector<runtime::Tensor *> args;
  std::vector<Example> examples;
  // On a device: a device tensor per argument (the in-out ones uploaded
  // once; the others, the batch and the step's scalars, every step) and
  // the loss, downloaded after each step.
  std::unique_ptr<runtime::DeviceMemory> device;
  std::vector<runtime::DeviceTensor> deviceArgs;
  runtime::DeviceTensor deviceLoss;
  bool hostStale = false;
};

} // namespace hkt::train

#endif // HKT_RUNTIME_TRAIN_TRAINER_H
