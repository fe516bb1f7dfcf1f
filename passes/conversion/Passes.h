//===- Passes.h - hkt -> linalg ---------------------------------*- C++ -*-===//

#ifndef HKT_PASSES_CONVERSION_PASSES_H
#define HKT_PASSES_CONVERSION_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;

namespace hkt {

#define GEN_PASS_DECL
#include "passes/conversion/Passes.h.inc"

/// Patterns lowering every hkt step op to linalg.generic (the reference path).
void populateHktToLinalgPatterns(RewritePatternSet &patterns);
/// The model ops' part of it (passes/conversion/LowerModelOps.cpp).
void populateHktModelToLinalgPatterns(RewritePatternSet &patterns);

#define GEN_PASS_REGISTRATION
#include "passes/conversion/Passes.h.inc"

} // namespace hkt
} // namespace mlir

#endif // HKT_PASSES_CONVERSION_PASSES_H
