//===- Passes.h - hkt passes and pipelines ----------------------*- C++ -*-===//

#ifndef HKT_PASSES_PASSES_H
#define HKT_PASSES_PASSES_H

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir {
class DialectRegistry;
class RewritePatternSet;

namespace hkt {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

/// Patterns lowering every hkt step op to linalg.generic (the reference path).
void populateHktToLinalgPatterns(RewritePatternSet &patterns);

/// The reference CPU pipeline: hkt on tensors -> LLVM dialect, with every
/// score matrix materialised. Public functions take and return their tensors
/// as memrefs, results turned into trailing out-parameters.
void buildHktCpuReferencePipeline(OpPassManager &pm);

/// Registers the hkt dialect and every dialect and external interface model
/// (bufferization, LLVM translation) that the hkt pipelines need.
void registerHktDialects(DialectRegistry &registry);

/// Registers the passes and the named pipelines (hkt-cpu-reference-pipeline).
void registerHktPassesAndPipelines();

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace hkt
} // namespace mlir

#endif // HKT_PASSES_PASSES_H
