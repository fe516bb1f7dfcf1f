//===- Rewriters.h - The hkt -> linalg patterns, by op family ---*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_PASSES_CONVERSION_REWRITERS_H
#define HKT_PASSES_CONVERSION_REWRITERS_H

namespace mlir {
class RewritePatternSet;

namespace hkt {

/// Every hkt step and model op to linalg on tensors (the reference path);
/// the union of the families below.
void populateHktToLinalgPatterns(RewritePatternSet &patterns);

/// downsample, level_scores, upsample, convex_fuse (LevelOps.cpp).
void populateHktLevelOpsToLinalgPatterns(RewritePatternSet &patterns);
/// mask, attend, hybrid (AttentionOps.cpp).
void populateHktAttentionOpsToLinalgPatterns(RewritePatternSet &patterns);
/// embed, layer_norm, gelu, mean_pool, cross_entropy, token_lengths
/// (ModelOps.cpp).
void populateHktModelOpsToLinalgPatterns(RewritePatternSet &patterns);

} // namespace hkt
} // namespace mlir

#endif // HKT_PASSES_CONVERSION_REWRITERS_H
