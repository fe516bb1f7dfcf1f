//===- HKTOps.h - hkt dialect operations ------------------------*- C++ -*-===//
//
// Declares the hkt operations (see dialect/HKTOps.td).
//
//===----------------------------------------------------------------------===//

#ifndef HKT_DIALECT_HKTOPS_H
#define HKT_DIALECT_HKTOPS_H

#include "dialect/HKTDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/TilingInterface.h"

#include "dialect/HKTInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialect/HKTOps.h.inc"

#endif // HKT_DIALECT_HKTOPS_H
