//===- LayerConfig.h - one HKT layer from a JSON config ---------*- C++ -*-===//
//
// SPEC.md: "A single layer is described by a layer config". Parses the JSON
// and builds the module whose entry `layer` runs that layer.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_COMPILER_FRONTEND_LAYERCONFIG_H
#define HKT_COMPILER_FRONTEND_LAYERCONFIG_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>

namespace mlir::hkt {

struct LayerConfig {
  int64_t batch = 0, seqLen = 0, dim = 0, heads = 0;
  int64_t levels = 3, stride = 2, kernel = 3, convKernel = 3;
  bool hybrid = true, causal = false;
  /// T is dynamic, any length in [1, seqLen] (hkt-compile --max-seq-len):
  /// seqLen is then the bound.
  bool dynamicSeqLen = false;
  /// B is dynamic, any batch in [1, batch] (hkt-compile --layer --max-batch):
  /// batch is then the bound.
  bool dynamicBatch = false;
};

/// Limits of a layer config (docs/limits.md gives the reasons).
constexpr int64_t kMaxTensorElements = int64_t(1) << 31; // per tensor (8 GiB f32)
constexpr int64_t kMaxSeqLen = (int64_t(1) << 31) - 1;   // lengths are int32
constexpr int64_t kMaxDim = int64_t(1) << 16;
constexpr int64_t kMaxLevels = 16;
constexpr int64_t kMaxStrideProduct = int64_t(1) << 10; // stride^(levels-1)
constexpr int64_t kMaxKernel = 1024;

/// Checks a parsed config against those limits with overflow-checked shape
/// arithmetic; the message names the key, its value and the bound.
llvm::Error checkLayerConfigLimits(const LayerConfig &config);

/// Parses a layer config; errors name the offending key. `batch`, `seq_len`,
/// `dim` and `heads` are required; unknown keys are errors.
/// `maxSeqLen` > 0 (hkt-compile --max-seq-len) makes T dynamic with that
/// bound: `seq_len` may then be left out or null, and a given one may not
/// exceed it. `"seq_len": null` without a bound is an error. `maxBatch` > 0
/// (hkt-compile --layer --max-batch) does the same for `batch`.
llvm::Expected<LayerConfig> parseLayerConfig(llvm::StringRef json,
                                             int64_t maxSeqLen = 0,
                                             int64_t maxBatch = 0);

/// Builds `func.func @layer` taking `x`, the layer's parameters under SPEC's
/// names (wq, wk, wv, wo, down_w, down_b, theta, conv_u, gamma: those that
/// exist for the config; role "parameter") and `lengths` (default T, range
/// [1, T]), returning `y`, as one hkt.attention op. With a dynamic batch,
/// that op is in the private `layer_row` (batch 1) and `layer` runs it on
/// each row of x and lengths in turn (BatchedEntry.h, RowOrder::InOrder).
/// `loc` is where the config came from (diagnostics point there).
OwningOpRef<ModuleOp> buildLayerModule(MLIRContext &context,
                                       const LayerConfig &config, Location loc);

} // namespace mlir::hkt

#endif // HKT_COMPILER_FRONTEND_LAYERCONFIG_H
