//===- TileGeometry.cpp - tiles of the online attention ops ---------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "dialect/Utils/TileGeometry.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <numeric>

using namespace mlir;

int64_t mlir::hkt::alignmentOf(ArrayRef<int64_t> factors) {
  int64_t align = 1;
  for (int64_t f : factors)
    align = std::lcm(align, f);
  return align;
}


/// A tile holds whole coarse rows: offsets along i and j (dimensions 2, 3
/// of the iteration domain) are multiples of every factor, and so are sizes,
/// except a tail that ends the dimension (checked where static).
LogicalResult mlir::hkt::checkTileAlignment(Operation *op, ArrayRef<int64_t> factors,
                                 ArrayRef<Range> domain,
                                 ArrayRef<OpFoldResult> offsets,
                                 ArrayRef<OpFoldResult> sizes) {
  int64_t align = alignmentOf(factors);
  for (unsigned d : {2u, 3u}) {
    std::optional<int64_t> offset = getConstantIntValue(offsets[d]),
                           size = getConstantIntValue(sizes[d]),
                           extent = getConstantIntValue(domain[d].size);
    bool tail = offset && size && extent && *offset + *size == *extent;
    if ((offset && *offset % align) || (size && *size % align && !tail))
      return op->emitOpError()
             << "tiles along the query and key dimensions must be multiples "
                "of every level factor ("
             << align << ")";
  }
  return success();
}

/// What a decomposition takes: every operand static, one batch row and one
/// head (tiling by [1, 1, tq, tk] gives that), sequence sizes multiples of
/// every factor.
bool mlir::hkt::isStaticOneHeadTile(Operation *op, ArrayRef<int64_t> factors,
                         int64_t batch, int64_t heads, int64_t tq,
                         int64_t tk) {
  for (Value v : op->getOperands())
    if (auto t = dyn_cast<RankedTensorType>(v.getType());
        t && !t.hasStaticShape())
      return false;
  int64_t align = alignmentOf(factors);
  return batch == 1 && heads == 1 && tq % align == 0 && tk % align == 0;
}

/// The key length of a one-row tile's `lengths` (null: none), as an index.
Value mlir::hkt::tileKeyLength(OpBuilder &b, Location loc, Value lengths) {
  if (!lengths)
    return Value();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value len = tensor::ExtractOp::create(b, loc, lengths, ValueRange{zero});
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), len);
}

Value mlir::hkt::sliceOf(OpBuilder &b, Location loc, Value src,
              ArrayRef<OpFoldResult> offsets, ArrayRef<OpFoldResult> sizes,
              SmallVectorImpl<Operation *> &slices) {
  SmallVector<OpFoldResult> strides(offsets.size(), b.getIndexAttr(1));
  auto slice =
      tensor::ExtractSliceOp::create(b, loc, src, offsets, sizes, strides);
  slices.push_back(slice);
  return slice;
}
