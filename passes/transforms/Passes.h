//===- Passes.h - hkt -> hkt passes -----------------------------*- C++ -*-===//

#ifndef HKT_PASSES_TRANSFORMS_PASSES_H
#define HKT_PASSES_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;

namespace hkt {

#define GEN_PASS_DECL
#include "passes/transforms/Passes.h.inc"

/// Replaces every op under `root` that `select` accepts and that implements
/// linalg's AggregatedOpInterface by its decomposition (hkt.attention into
/// step ops, linalg.softmax into generics).
LogicalResult
decomposeAggregatedOps(Operation *root,
                       llvm::function_ref<bool(Operation *)> select);

/// The pattern of hkt-fuse: the SPEC 3-6 step-op chain -> online attention.
void populateHktFusePatterns(RewritePatternSet &patterns);

#define GEN_PASS_REGISTRATION
#include "passes/transforms/Passes.h.inc"

} // namespace hkt
} // namespace mlir

#endif // HKT_PASSES_TRANSFORMS_PASSES_H
