//===- Model.h - A compiled model and its parameters -----------*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// A module compiled with `hkt-compile --model` (docs/training.md): its
// config, its entries (`logits`, `train_step`), its parameters by SPEC name.
// Parameters are initialised (SPEC "Initialisation for training") or loaded
// from a checkpoint here; batches are predicted here. Used by hkt-run's model
// commands and by any other driver (the Python API, distributed training).
//
//===----------------------------------------------------------------------===//

#ifndef HKT_RUNTIME_TRAIN_MODEL_H
#define HKT_RUNTIME_TRAIN_MODEL_H

#include "runtime/CompiledModule.h"
#include "runtime/ModuleFormat.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/Tasks.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace hkt::train {

/// Parameters (or one AdamW moment of each) by SPEC name.
using TensorMap = std::map<std::string, runtime::Tensor>;

struct Accuracy {
  int64_t correct = 0, examples = 0;
  double value() const {
    return examples ? static_cast<double>(correct) / examples : 0.0;
  }
};

class Model {
public:
  /// Opens a compiled model; refuses a module without a model config or a
  /// `logits` entry.
  static Expected<Model> open(const std::string &dir);

  const std::string &dir() const { return directory; }
  /// The model config (JSON, as nlohmann-json writes it).
  const std::string &config() const { return configJson; }
  int64_t maxLen() const { return maxLength; }
  /// True when the entries take tokens of any length up to max_len (B x T),
  /// false when compiled --fixed-len (B x max_len).
  bool dynamicLength() const { return lengthIsDynamic; }
  /// The width of a batch of `examples`: its longest example's length for
  /// a model of dynamic length (the module runs each row at its own length
  /// anyway), else max_len.
  int64_t batchWidth(const std::vector<Example> &examples) const;
  int64_t vocab() const { return vocabulary; }
  int64_t classes() const { return classCount; }
  /// The largest batch the entries take (the bound of the symbol B).
  int64_t maxBatch() const { return batchBound; }
  /// The parameters, in the manifest's order (the logits entry's).
  const std::vector<const runtime::TensorSpec *> &parameters() const {
    return params;
  }

  /// The entry `name`, or an error saying how to compile one that has it.
  Expected<const runtime::Entry *> entry(const std::string &name) const;
  /// The number of processes a data-parallel module's train_step runs on
  /// (hkt-compile --ranks N), 0 for a module of one process.
  int64_t dataParallelRanks() const {
    const auto &dp = module->manifest().dataParallel;
    return dp ? dp->ranks : 0;
  }
  /// True if a data-parallel module sums its gradients with NCCL (a cuda
  /// module: the runtime's communicator must exist before train_step).
  bool sumsWithNccl() const {
    const auto &dp = module->manifest().dataParallel;
    return dp && dp->backend == format::backend::kNccl;
  }
  /// The kind of target the module was compiled for.
  runtime::TargetKind targetKind() const {
    return module->manifest().target.kind;
  }

  /// Opens `spec` with the model's max_len; refuses a task whose tokens or
  /// classes the model cannot take.
  Expected<std::unique_ptr<Task>> openTask(const std::string &spec,
                                           uint64_t dataSeed) const;

  /// Fresh parameters (SPEC "Initialisation for training"), each tensor
  /// from its own stream (seed, name): independent of the order.
  Expected<TensorMap> initParameters(uint64_t seed) const;
  /// Zero tensors shaped like the parameters (AdamW moments).
  Expected<TensorMap> zerosLikeParameters() const;
  /// The parameters of a checkpoint or weight file, checked against the
  /// module: the model config, every parameter present with its shape. The
  /// tensors are moved out of `file`.
  Expected<TensorMap> takeParameters(Checkpoint &file,
                                     const std::string &path) const;

  /// Calls `logits` on `tokens` (rows x width); appends the predicted
  /// classes.
  Status predict(TensorMap &parameters, runtime::Tensor &tokens,
                 std::vector<int32_t> &predictions) const;
  /// Predictions for the first `limit` examples of `split` (all if < 0), in
  /// batches of at most `batch` rows; the accuracy into `accuracy` if given.
  Expected<std::vector<int32_t>> predictSplit(TensorMap &parameters,
                                              const Task &task, Split split,
                                              int64_t limit, int64_t batch,
                                              Accuracy *accuracy) const;
  /// The same for the examples [begin, end) of `split` (a rank's share of a
  /// sharded evaluation); an empty range predicts nothing.
  Expected<std::vector<int32_t>> predictRange(TensorMap &parameters,
                                              const Task &task, Split split,
                                              int64_t begin, int64_t end,
                                              int64_t batch,
                                              Accuracy *accuracy) const;

private:
  Model() = default;

  std::shared_ptr<runtime::CompiledModule> module;
  std::string directory, configJson;
  int64_t maxLength = 0, vocabulary = 0, classCount = 0, batchBound = 0;
  bool lengthIsDynamic = false;
  const runtime::Entry *logits = nullptr;
  std::vector<const runtime::TensorSpec *> params;
};

/// Writes the tokens (rows x width, each row padded with 0; every example
/// fits the width) and labels (rows) of `examples`.
void fillBatch(const std::vector<Example> &examples, runtime::Tensor &tokens,
               runtime::Tensor &labels);

} // namespace hkt::train

#endif // HKT_RUNTIME_TRAIN_MODEL_H
