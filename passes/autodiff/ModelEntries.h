//===- ModelEntries.h - the model's gradient and train step -----*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_PASSES_AUTODIFF_MODELENTRIES_H
#define HKT_PASSES_AUTODIFF_MODELENTRIES_H

#include "mlir/IR/BuiltinOps.h"

namespace mlir::hkt {

/// The model's private batch-1 loss function (compiler/frontend/ModelConfig.cpp
/// builds it), whose gradient the model's gradient entry batches.
inline constexpr const char *kLossRow = "loss_row";

/// Adds the entry `loss_grad(tokens, labels, <parameters>, dloss) -> (loss,
/// d<parameter>...)` over the rows of a batch, from `loss_row_grad`
/// (hkt-differentiate of kLossRow with return-values): each row gets the
/// seed dloss / B, the gradients are summed over the rows, the loss is their
/// mean. `dloss` defaults to 1.
LogicalResult addModelGradientEntry(ModuleOp module, int64_t maxBatch);

/// The training step's entry (its moments are named as ModuleFormat.h says).
inline constexpr const char *kTrainStep = "train_step";

/// Adds `train_step(tokens, labels, <parameters>, adam.m.<p>..., adam.v.<p>...,
/// lr, beta1, beta2, eps, weight_decay, step) -> loss`: one AdamW step
/// (decoupled weight decay on the matrices, bias-corrected moments, as
/// PyTorch's AdamW) on the gradient of the mean loss from `loss_grad`. The
/// parameters and both moments are in-out arguments, updated in place; the
/// loss is that of the parameters before the step. `step` is the 1-based
/// step number t of the bias corrections 1 - beta^t.
LogicalResult addModelTrainStep(ModuleOp module, int64_t ranks = 0);

} // namespace mlir::hkt

#endif // HKT_PASSES_AUTODIFF_MODELENTRIES_H
