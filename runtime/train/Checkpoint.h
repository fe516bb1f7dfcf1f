//===- Checkpoint.h - Training checkpoints (safetensors) --------*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// A checkpoint is a safetensors file (docs/training.md): every SPEC parameter
// under its SPEC name, the AdamW moments under `adam.m.<name>` and
// `adam.v.<name>` (absent in a weight file from `hkt-run init`), and in its
// `__metadata__` the model config, the step, the data position and the
// training settings, so that a resumed run continues exactly. It is written
// atomically (temporary file, fsync, rename): a process killed at any moment
// leaves the previous checkpoint intact.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_RUNTIME_TRAIN_CHECKPOINT_H
#define HKT_RUNTIME_TRAIN_CHECKPOINT_H

#include "runtime/ModuleFormat.h"
#include "runtime/SafeTensors.h"
#include "runtime/Status.h"
#include "runtime/Tensor.h"

#include <map>
#include <string>
#include <vector>

namespace hkt::train {

using runtime::Expected;
using runtime::Status;
using runtime::Tensor;

/// Metadata keys.
namespace checkpoint {
inline constexpr const char *kFormat = "format";
inline constexpr const char *kFormatName = "hkt-checkpoint";
inline constexpr const char *kModel = "model";
inline constexpr const char *kStep = "step";
/// Name prefixes of the AdamW moments (the train_step's, ModuleFormat.h).
inline constexpr const char *kFirstMoment = ::hkt::format::kAdamFirstMoment;
inline constexpr const char *kSecondMoment = ::hkt::format::kAdamSecondMoment;
} // namespace checkpoint

/// True for the name of a checkpoint's optimizer state (an AdamW moment):
/// the checkpoint's own, never a model parameter.
bool isOptimizerState(const std::string &name);

/// True when safetensors metadata marks a file writeCheckpoint wrote (a
/// checkpoint, or a weight file from `hkt-run init` / `export`).
bool isCheckpointMetadata(const std::map<std::string, std::string> &metadata);

struct Checkpoint {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;

  /// The tensor called `name`, or null.
  Tensor *find(const std::string &name);
  /// The metadata value of `key`, or "" if absent.
  std::string meta(const std::string &key) const;
};

/// Reads a checkpoint or weight file. A safetensors file without the
/// checkpoint metadata is read too (weights from another tool), with empty
/// metadata.
Expected<Checkpoint> readCheckpoint(const std::string &path);

/// Writes `tensors` and `metadata` (plus the format key) atomically.
Status writeCheckpoint(
    const std::string &path,
    const std::vector<std::pair<std::string, const Tensor *>> &tensors,
    std::map<std::string, std::string> metadata);

/// Compares a checkpoint's model config (metadata "model") with a module's
/// (its manifest's "model"), both JSON objects: the message names the first
/// key that differs ("checkpoint 'c.safetensors' is for a model with dim 8;
/// the module 'm' has dim 16"). A checkpoint without a config passes (its
/// tensors' names and shapes are still checked by the caller).
Status checkModelConfig(const std::string &checkpointConfig,
                        const std::string &checkpointPath,
                        const std::string &moduleConfig,
                        const std::string &modulePath);

} // namespace hkt::train

#endif // HKT_RUNTIME_TRAIN_CHECKPOINT_H
