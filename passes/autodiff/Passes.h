//===- Passes.h - differentiation -------------------------------*- C++ -*-===//

#ifndef HKT_PASSES_AUTODIFF_PASSES_H
#define HKT_PASSES_AUTODIFF_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;

namespace hkt {

#define GEN_PASS_DECL
#include "passes/autodiff/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/autodiff/Passes.h.inc"

} // namespace hkt
} // namespace mlir

#endif // HKT_PASSES_AUTODIFF_PASSES_H
