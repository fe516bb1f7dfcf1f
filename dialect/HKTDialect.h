//===- HKTDialect.h - The hkt dialect ---------------------------*- C++ -*-===//
//
// Declares the hkt dialect (see dialect/HKTDialect.td).
//
//===----------------------------------------------------------------------===//

#ifndef HKT_DIALECT_HKTDIALECT_H
#define HKT_DIALECT_HKTDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialect/HKTOpsDialect.h.inc"

namespace mlir::hkt {
/// The discardable attribute naming what a structured op computes, set where
/// hkt ops are lowered or differentiated ("downsample", "hybrid_grad"):
/// the NVVM path names the op's kernel after it, for profilers and
/// --kernel-report.
constexpr const char *kKernelAttr = "hkt.kernel";
} // namespace mlir::hkt

#endif // HKT_DIALECT_HKTDIALECT_H
