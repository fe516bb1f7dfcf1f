//===- Training.h - hkt-run's model commands --------------------*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// The commands of hkt-run that drive a compiled model (hkt-compile --model)
// through SPEC's tasks (docs/training.md):
//
//   hkt-run init OUT --seed S --save W.safetensors
//   hkt-run train OUT --task T --steps N --save CKPT [--resume CKPT] ...
//   hkt-run eval OUT --params CKPT --task T [--split valid|test]
//   hkt-run predict OUT --params CKPT (--task T [--split S] | --tokens F.npy)
//                   --output P.npy
//   hkt-run export CKPT -o W.safetensors   (the weights, without the
//                                            optimizer state)
//
//===----------------------------------------------------------------------===//

#ifndef HKT_TOOLS_HKT_RUN_TRAINING_H
#define HKT_TOOLS_HKT_RUN_TRAINING_H

#include <string>

namespace hkt::run {

/// True for the command words above.
bool isTrainingCommand(const std::string &word);

/// Runs `command` with the arguments after it; returns the exit status (0,
/// 1 for a failure, 2 for a usage error) after printing any message.
int runTrainingCommand(const std::string &command, int argc, char **argv);

/// Why a module cannot run on `device` ("cpu" or "cuda": its target kind
/// is another, or its manifest does not read), or empty if it can.
std::string deviceMismatch(const std::string &moduleDir,
                           const std::string &device);

} // namespace hkt::run

#endif // HKT_TOOLS_HKT_RUN_TRAINING_H
