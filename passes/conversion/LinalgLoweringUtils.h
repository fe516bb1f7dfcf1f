//===- LinalgLoweringUtils.h - hkt -> linalg helpers -----------*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// Head splitting and tap layouts the op families of hkt-lower-to-linalg
// share (the general builders are dialect/Utils/LinalgBuilders.h).
//
//===----------------------------------------------------------------------===//

#ifndef HKT_PASSES_CONVERSION_LINALGLOWERINGUTILS_H
#define HKT_PASSES_CONVERSION_LINALGLOWERINGUTILS_H

#include "dialect/Utils/LinalgBuilders.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

namespace mlir::hkt::conversion {

inline RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// B x T x D -> B x T x H x d (head h owns columns [h*d, (h+1)*d)).
inline Value splitHeads(OpBuilder &b, Location loc, Value x, int64_t heads) {
  RankedTensorType type = tensorType(x);
  auto shape = type.getShape();
  auto split = RankedTensorType::get(
      {shape[0], shape[1], heads, shape[2] / heads}, type.getElementType());
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
  SmallVector<OpFoldResult> outputShape = {sizes[0], sizes[1],
                                           b.getIndexAttr(heads),
                                           b.getIndexAttr(shape[2] / heads)};
  return tensor::ExpandShapeOp::create(b, loc, split, x, {{0}, {1}, {2, 3}},
                                       outputShape);
}

inline Value mergeHeads(OpBuilder &b, Location loc, Value x) {
  return tensor::CollapseShapeOp::create(b, loc, x, {{0}, {1}, {2, 3}});
}

/// A C x K tap weight as K x C, so that a convolution whose channel loop is
/// innermost reads every operand along it (then hkt-cpu-codegen vectorises
/// it by rows).
inline Value tapsMajor(OpBuilder &b, Location loc, Value w) {
  RankedTensorType t = tensorType(w);
  auto type = RankedTensorType::get({t.getDimSize(1), t.getDimSize(0)},
                                    t.getElementType());
  Value init =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  return linalg::TransposeOp::create(b, loc, w, init, ArrayRef<int64_t>{1, 0})
      .getResult()[0];
}

} // namespace mlir::hkt::conversion

#endif // HKT_PASSES_CONVERSION_LINALGLOWERINGUTILS_H
