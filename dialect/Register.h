//===- Register.h - The dialects of hkt IR and its pipelines ----*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_DIALECT_REGISTER_H
#define HKT_DIALECT_REGISTER_H

namespace mlir {
class DialectRegistry;

namespace hkt {

/// Registers the hkt dialect and every upstream dialect that hkt IR and the
/// hkt pipelines produce, from tensors to the LLVM and NVVM dialects. The
/// interfaces other libraries attach to them (bufferization, adjoints,
/// translation to LLVM IR) are registerHktExtensions' (passes/Passes.h).
void registerHktDialects(DialectRegistry &registry);

} // namespace hkt
} // namespace mlir

#endif // HKT_DIALECT_REGISTER_H
