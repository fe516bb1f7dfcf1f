//===- Sizes.h - sizes known at compile time or at run time -----*- C++ -*-===//
//
// The kernels' sizes (the batch, the sequence lengths, a GEMM's rows) as
// index values on the host: constants where the shape is static, so the
// static kernels are what they were, else memref.dim / tensor.dim, so one
// kernel serves every size up to the module's bound.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_PASSES_CODEGEN_NVVM_SIZES_H
#define HKT_PASSES_CODEGEN_NVVM_SIZES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::hkt::nvvm {

/// The size of `shaped` (a tensor or a memref) in `dim`: a constant where
/// static.
inline Value extent(ImplicitLocOpBuilder &b, Value shaped, int64_t dim) {
  if (isa<MemRefType>(shaped.getType()))
    return b.createOrFold<memref::DimOp>(shaped, dim);
  return b.createOrFold<tensor::DimOp>(shaped, dim);
}

/// The sizes of `shaped`'s dynamic dimensions, for an empty or an alloc
/// like it.
inline SmallVector<Value> dynamicSizes(ImplicitLocOpBuilder &b, Value shaped) {
  SmallVector<Value> sizes;
  auto type = cast<ShapedType>(shaped.getType());
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (type.isDynamicDim(i))
      sizes.push_back(extent(b, shaped, i));
  return sizes;
}

/// ceil(x / y), folded where x is a constant.
inline Value ceilDiv(ImplicitLocOpBuilder &b, Value x, int64_t y) {
  return b.createOrFold<arith::CeilDivUIOp>(
      x, arith::ConstantIndexOp::create(b, y));
}

} // namespace mlir::hkt::nvvm

#endif // HKT_PASSES_CODEGEN_NVVM_SIZES_H
