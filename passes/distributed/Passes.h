//===- Passes.h - data-parallel collectives ---------------------*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_PASSES_DISTRIBUTED_PASSES_H
#define HKT_PASSES_DISTRIBUTED_PASSES_H

#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MPI/IR/MPI.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Pass/Pass.h"

namespace mlir::hkt {

#define GEN_PASS_DECL
#include "passes/distributed/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/distributed/Passes.h.inc"

} // namespace mlir::hkt

#endif // HKT_PASSES_DISTRIBUTED_PASSES_H
