//===- ZeroFill.h - zero fills a kernel can absorb --------------*- C++ -*-===//
//
// A projection's or a sum's output starts as a fresh buffer zero-filled
// just for it (linalg.fill, then an op that adds into it). On the GPU that
// fill is a kernel of its own and the adding kernel reads the zeros back;
// a kernel that writes its result instead of adding it absorbs the fill.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_PASSES_CODEGEN_NVVM_ZEROFILL_H
#define HKT_PASSES_CODEGEN_NVVM_ZEROFILL_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlir::hkt::nvvm {

/// The zero fill of `buffer` that `consumer` (which adds into it) can
/// absorb: `buffer` is a memref.alloc that nothing reads or writes before
/// `consumer` except that fill, in the same block; null otherwise.
linalg::FillOp absorbableZeroFill(Operation *consumer, Value buffer);

} // namespace mlir::hkt::nvvm

#endif // HKT_PASSES_CODEGEN_NVVM_ZEROFILL_H
