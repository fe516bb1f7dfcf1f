//===- HKTDialect.h - The hkt dialect ---------------------------*- C++ -*-===//
//
// Declares the hkt dialect (see dialect/HKTDialect.td).
//
//===----------------------------------------------------------------------===//

#ifndef HKT_DIALECT_HKTDIALECT_H
#define HKT_DIALECT_HKTDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialect/HKTOpsDialect.h.inc"

#endif // HKT_DIALECT_HKTDIALECT_H
