//===- BufferAliasing.h - which buffers may overlap -------------*- C++ -*-===//
//
// The aliasing facts the CPU codegen passes rely on, decided on the buffers
// views come from (hkt-cpu-hoist-vector-accumulators, hkt-cpu-amx-matmul).
//
//===----------------------------------------------------------------------===//

#ifndef HKT_PASSES_CODEGEN_CPU_BUFFERALIASING_H
#define HKT_PASSES_CODEGEN_CPU_BUFFERALIASING_H

#include "mlir/IR/Value.h"

namespace mlir::hkt {

/// The buffer `v` is a view of (through subviews, reshapes, casts).
Value viewRoot(Value v);

/// A buffer no other buffer overlaps: an allocation, a global, or an
/// argument of a function. Arguments count because a written argument
/// overlaps no other: the module format promises it at entries
/// (docs/module-format.md, "Aliasing"; the runtime checks it), and at calls
/// inside a module one-shot bufferization copies a buffer that would be
/// written through one argument and read through another.
bool isDistinctBuffer(Value root);

/// Whether the buffers `a` and `b` are views of may share memory: the same
/// root, the same global, or a root that is not a distinct buffer.
bool mayAlias(Value a, Value b);

} // namespace mlir::hkt

#endif // HKT_PASSES_CODEGEN_CPU_BUFFERALIASING_H
