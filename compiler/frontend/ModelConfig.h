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

#ifndef HKT_COMPILER_FRONTEND_MODELCONFIG_H
#define HKT_COMPILER_FRONTEND_MODELCONFIG_H

#include "passes/autodiff/ModelEntries.h"

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

/// Builds `func.func @logits(tokens, <parameters>) -> logits` and
/// `func.func @loss(tokens, labels, <parameters>) -> loss` for any batch B
/// in [1, maxBatch]: tokens (B x T i32, range
/// [0, vocab)), labels (B i32, range [0, classes)), the parameters in SPEC's
/// table order and names (role "parameter"); the key lengths of every layer
/// are the token lengths (hkt.token_lengths). B is a dynamic dimension
/// (symbol "B", bound maxBatch); each entry runs its private batch-1
/// function (kLogitsRow, kLossRow) on every row, and `loss` is the mean of
/// the rows' losses. Without `dynamicLength`, T is max_len and every op
/// inside keeps static shapes. With it, T is dynamic too (symbol "T", bound
/// max_len): tokens are B x T for any T <= max_len, and each row runs at its
/// own length (its tokens before the first padding token), which is exact:
/// SPEC's causal downsampling, key mask and causal convolution keep every
/// position at or past a row's length out of its valid positions.
OwningOpRef<ModuleOp> buildModelModule(MLIRContext &context,
                                       const ModelConfig &config,
                                       int64_t maxBatch, bool dynamicLength,
                                       Location loc);

} // namespace mlir::hkt

#endif // HKT_COMPILER_FRONTEND_MODELCONFIG_H
