//===- ModelConfig.h - SPEC's classifier model from a JSON config -*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// SPEC.md "The classifier model": parses a model config (every key required)
// and builds the module of the model for any batch up to a bound: `logits`
// (tokens -> logits) and `loss` (tokens, labels -> mean cross-entropy),
// parameters under SPEC's names, and the gradient entry `loss_grad`.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_COMPILER_MODELCONFIG_H
#define HKT_COMPILER_MODELCONFIG_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <string>

#include <cstdint>

namespace mlir::hkt {

struct ModelConfig {
  int64_t vocab = 0, maxLen = 0, dim = 0, heads = 0, layers = 0;
  int64_t levels = 0, stride = 0, kernel = 0, convKernel = 0, ffn = 0,
          classes = 0;
  bool hybrid = true, causal = false;
};

/// Parses a model config; errors name the offending key. Every key of SPEC's
/// model config is required, unknown keys are errors, `dim` must be
/// divisible by `heads`, `vocab` must be at least 2 (token 0 is padding), and
/// each layer must pass the layer limits (docs/limits.md) at `max_len`.
llvm::Expected<ModelConfig> parseModelConfig(llvm::StringRef json);

/// The config as a JSON object with every key (what the manifest records).
std::string modelConfigToJson(const ModelConfig &config);

/// The private batch-1 functions the entries run once per row.
inline constexpr const char *kLogitsRow = "logits_row";
inline constexpr const char *kLossRow = "loss_row";

/// Builds `func.func @logits(tokens, <parameters>) -> logits` and
/// `func.func @loss(tokens, labels, <parameters>) -> loss` for any batch B
/// in [1, maxBatch] of `max_len` tokens: tokens (B x max_len i32, range
/// [0, vocab)), labels (B i32, range [0, classes)), the parameters in SPEC's
/// table order and names (role "parameter"); the key lengths of every layer
/// are the token lengths (hkt.token_lengths). B is a dynamic dimension
/// (symbol "B", bound maxBatch); each entry runs its private batch-1
/// function (kLogitsRow, kLossRow) on every row, so every op inside keeps
/// static shapes, and `loss` is the mean of the rows' losses.
OwningOpRef<ModuleOp> buildModelModule(MLIRContext &context,
                                       const ModelConfig &config,
                                       int64_t maxBatch, Location loc);

/// Adds the entry `loss_grad(tokens, labels, <parameters>, dloss) -> (loss,
/// d<parameter>...)` over the rows of a batch, from `loss_row_grad`
/// (hkt-differentiate of kLossRow with return-values): each row gets the
/// seed dloss / B, the gradients are summed over the rows, the loss is their
/// mean. `dloss` defaults to 1.
LogicalResult addModelGradientEntry(ModuleOp module, int64_t maxBatch);

/// The training step's entry and the names of the optimizer state.
inline constexpr const char *kTrainStep = "train_step";
inline constexpr const char *kAdamFirstMoment = "adam.m.";
inline constexpr const char *kAdamSecondMoment = "adam.v.";

/// Adds `train_step(tokens, labels, <parameters>, adam.m.<p>..., adam.v.<p>...,
/// lr, beta1, beta2, eps, weight_decay, step) -> loss`: one AdamW step
/// (decoupled weight decay on the matrices, bias-corrected moments, as
/// PyTorch's AdamW) on the gradient of the mean loss from `loss_grad`. The
/// parameters and both moments are in-out arguments, updated in place; the
/// loss is that of the parameters before the step. `step` is the 1-based
/// step number t of the bias corrections 1 - beta^t.
LogicalResult addModelTrainStep(ModuleOp module);

} // namespace mlir::hkt

#endif // HKT_COMPILER_MODELCONFIG_H
