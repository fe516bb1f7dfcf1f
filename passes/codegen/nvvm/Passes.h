//===- Passes.h - NVVM code generation --------------------------*- C++ -*-===//

#ifndef HKT_PASSES_CODEGEN_NVVM_PASSES_H
#define HKT_PASSES_CODEGEN_NVVM_PASSES_H

#include "passes/PipelineOptions.h"
#include "passes/codegen/nvvm/TargetInfo.h"

#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;

namespace hkt {

#define GEN_PASS_DECL
#include "passes/codegen/nvvm/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/codegen/nvvm/Passes.h.inc"

} // namespace hkt
} // namespace mlir

#endif // HKT_PASSES_CODEGEN_NVVM_PASSES_H
