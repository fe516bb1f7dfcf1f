//===- ModelConfig.h - SPEC's classifier model from a JSON config -*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// SPEC.md "The classifier model": parses a model config (every key required)
// and builds the module of the model for a given batch: `logits` (tokens ->
// logits) and `loss` (tokens, labels -> mean cross-entropy), parameters under
// SPEC's names.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_COMPILER_MODELCONFIG_H
#define HKT_COMPILER_MODELCONFIG_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

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

/// Builds `func.func @logits(tokens, <parameters>) -> logits` and
/// `func.func @loss(tokens, labels, <parameters>) -> loss` for `batch` rows
/// of `max_len` tokens. tokens (B x max_len i32, range [0, vocab)), labels
/// (B i32, range [0, classes)), the parameters in SPEC's table order and
/// names (role "parameter"); the key lengths of every layer are the token
/// lengths (hkt.token_lengths).
OwningOpRef<ModuleOp> buildModelModule(MLIRContext &context,
                                       const ModelConfig &config,
                                       int64_t batch, Location loc);

} // namespace mlir::hkt

#endif // HKT_COMPILER_MODELCONFIG_H
