//===- Passes.h - differentiation -------------------------------*- C++ -*-===//

#ifndef HKT_PASSES_AUTODIFF_PASSES_H
#define HKT_PASSES_AUTODIFF_PASSES_H

#include "passes/PipelineOptions.h"

#include "mlir/Pass/Pass.h"

namespace mlir {
class DialectRegistry;
class RewritePatternSet;

namespace hkt {

#define GEN_PASS_DECL
#include "passes/autodiff/Passes.h.inc"

/// Attaches AdjointOpInterface to the upstream linalg and tensor ops that
/// hkt functions use (UpstreamAdjoints.cpp); the hkt ops implement it
/// themselves (dialect/AdjointOpInterfaceImpl.cpp).
void registerAdjointExternalModels(DialectRegistry &registry);

#define GEN_PASS_REGISTRATION
#include "passes/autodiff/Passes.h.inc"

} // namespace hkt
} // namespace mlir

#endif // HKT_PASSES_AUTODIFF_PASSES_H
