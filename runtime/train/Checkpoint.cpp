//===- Checkpoint.cpp - Training checkpoints (safetensors) ----------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/Checkpoint.h"
#include "runtime/Internal.h"

#include <nlohmann/json.hpp>

using namespace hkt::runtime;
using namespace hkt::train;
using json = nlohmann::json;
using hkt::runtime::detail::concat;

Tensor *Checkpoint::find(const std::string &name) {
  auto it = tensors.find(name);
  return it == tensors.end() ? nullptr : &it->second;
}

std::string Checkpoint::meta(const std::string &key) const {
  auto it = metadata.find(key);
  return it == metadata.end() ? std::string() : it->second;
}

bool hkt::train::isOptimizerState(const std::string &name) {
  return name.rfind(checkpoint::kFirstMoment, 0) == 0 ||
         name.rfind(checkpoint::kSecondMoment, 0) == 0;
}

bool hkt::train::isCheckpointMetadata(
    const std::map<std::string, std::string> &metadata) {
  auto it = metadata.find(checkpoint::kFormat);
  return it != metadata.end() && it->second == checkpoint::kFormatName;
}

Expected<Checkpoint> hkt::train::readCheckpoint(const std::string &path) {
  Expected<SafeTensorsFile> file = readSafeTensors(path);
  if (!file)
    return file.status();
  Checkpoint c;
  c.metadata = std::move(file->metadata);
  std::string format = c.meta(checkpoint::kFormat);
  if (!format.empty() && format != checkpoint::kFormatName)
    return Status::error(concat("'", path, "': unknown checkpoint format '",
                                format, "' (expected '",
                                checkpoint::kFormatName, "')"));
  for (NamedTensor &t : file->tensors)
    c.tensors.emplace(t.name, std::move(t.tensor));
  return c;
}

Status hkt::train::writeCheckpoint(
    const std::string &path,
    const std::vector<std::pair<std::string, const Tensor *>> &tensors,
    std::map<std::string, std::string> metadata) {
  metadata[checkpoint::kFormat] = checkpoint::kFormatName;
  return writeSafeTensors(path, tensors, metadata);
}

Status hkt::train::checkModelConfig(const std::string &checkpointConfig,
                                    const std::string &checkpointPath,
                                    const std::string &moduleConfig,
                                    const std::string &modulePath) {
  if (checkpointConfig.empty())
    return Status::success();
  if (moduleConfig.empty())
    return Status::error(concat("module '", modulePath,
                                "' records no model config (compile it with "
                                "hkt-compile --model)"));
  json saved =
      json::parse(checkpointConfig, nullptr, /*allow_exceptions=*/false);
  json module = json::parse(moduleConfig, nullptr, false);
  if (!saved.is_object())
    return Status::error(concat("checkpoint '", checkpointPath,
                                "': its model config is not a JSON object"));
  auto show = [](const json &v) { return v.is_null() ? "nothing" : v.dump(); };
  for (auto it = module.begin(); it != module.end(); ++it) {
    json other = saved.contains(it.key()) ? saved[it.key()] : json();
    if (other != it.value())
      return Status::error(concat(
          "checkpoint '", checkpointPath, "' is for a model with ", it.key(),
          " ", show(other), "; the module '", modulePath, "' has ", it.key(),
          " ", show(it.value()), ": use a checkpoint of this model"));
  }
  for (auto it = saved.begin(); it != saved.end(); ++it)
    if (!module.contains(it.key()))
      return Status::error(
          concat("checkpoint '", checkpointPath, "' has the model key '",
                 it.key(), "', which the module '", modulePath, "' does not"));
  return Status::success();
}
