//===- Passes.h - hkt -> linalg ---------------------------------*- C++ -*-===//

#ifndef HKT_PASSES_CONVERSION_PASSES_H
#define HKT_PASSES_CONVERSION_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace hkt {

#define GEN_PASS_DECL
#include "passes/conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/conversion/Passes.h.inc"

} // namespace hkt
} // namespace mlir

#endif // HKT_PASSES_CONVERSION_PASSES_H
