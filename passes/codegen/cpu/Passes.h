//===- Passes.h - CPU code generation ---------------------------*- C++ -*-===//

#ifndef HKT_PASSES_CODEGEN_CPU_PASSES_H
#define HKT_PASSES_CODEGEN_CPU_PASSES_H

#include "passes/PipelineOptions.h"

#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;

namespace hkt {

#define GEN_PASS_DECL
#include "passes/codegen/cpu/Passes.h.inc"

/// hkt-cpu-hoist-vector-accumulators on every scf.for under `root` (also run
/// by hkt-cpu-codegen between vectorisation and the lowering of the
/// vectors). Returns the number of transfer pairs hoisted.
int64_t hoistVectorAccumulators(Operation *root);

#define GEN_PASS_REGISTRATION
#include "passes/codegen/cpu/Passes.h.inc"

} // namespace hkt
} // namespace mlir

#endif // HKT_PASSES_CODEGEN_CPU_PASSES_H
