//===- TileGeometry.h - tiles of the online attention ops --------*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// What the TilingInterface and the decompositions of hkt.online_attention
// and hkt.online_attention_backward share: where an operand's tile lies for
// a tile of the iteration domain (b, h, i, j), and which tiles are allowed.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_DIALECT_UTILS_TILEGEOMETRY_H
#define HKT_DIALECT_UTILS_TILEGEOMETRY_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/TilingInterface.h"

namespace mlir::hkt {

/// Offsets and sizes of the op's operand and result tiles for a tile of the
/// iteration domain (b, h, i, j).
struct TileGeometry {
  TileGeometry(OpBuilder &b, Location loc, int64_t headDim,
               ArrayRef<OpFoldResult> offsets, ArrayRef<OpFoldResult> sizes)
      : b(b), loc(loc), offsets(offsets), sizes(sizes) {
    bindSymbols(b.getContext(), s0, s1);
    col0 = apply(s0 * headDim, {offsets[1]});
    cols = apply(s0 * headDim, {sizes[1]});
  }
  OpFoldResult apply(AffineExpr e, ArrayRef<OpFoldResult> operands) {
    return affine::makeComposedFoldedAffineApply(b, loc, e, operands);
  }
  /// The B x rows x D operand tile of a sequence dimension (`dim` 2: queries,
  /// 3: keys) at level factor `f`.
  std::pair<SmallVector<OpFoldResult>, SmallVector<OpFoldResult>>
  sequenceTile(unsigned dim, int64_t f) {
    return {{offsets[0], apply(s0.floorDiv(f), {offsets[dim]}), col0},
            {sizes[0], apply(s0.ceilDiv(f), {sizes[dim]}), cols}};
  }
  /// The sequence position of a tile's first row (query, `offset` along i)
  /// or key (along j), inside an op placed at `base` (null: 0).
  Value position(Value base, OpFoldResult offset) {
    OpFoldResult p = base ? apply(s0 + s1, {base, offset}) : offset;
    return getValueOrCreateConstantIndexOp(b, loc, p);
  }
  /// The B x H x Tq tile of max and sum.
  std::pair<SmallVector<OpFoldResult>, SmallVector<OpFoldResult>> rowTile() {
    return {{offsets[0], offsets[1], offsets[2]},
            {sizes[0], sizes[1], sizes[2]}};
  }

  OpBuilder &b;
  Location loc;
  ArrayRef<OpFoldResult> offsets, sizes;
  AffineExpr s0, s1;
  OpFoldResult col0, cols;
};

/// The least common multiple of the level factors: what tiles align to.
int64_t alignmentOf(ArrayRef<int64_t> factors);

/// A tile holds whole coarse rows: offsets along i and j (dimensions 2, 3
/// of the iteration domain) are multiples of every factor, and so are sizes,
/// except a tail that ends the dimension (checked where static).
LogicalResult checkTileAlignment(Operation *op, ArrayRef<int64_t> factors,
                                 ArrayRef<Range> domain,
                                 ArrayRef<OpFoldResult> offsets,
                                 ArrayRef<OpFoldResult> sizes);

/// What a decomposition takes: every operand static, one batch row and one
/// head (tiling by [1, 1, tq, tk] gives that), sequence sizes multiples of
/// every factor.
bool isStaticOneHeadTile(Operation *op, ArrayRef<int64_t> factors,
                         int64_t batch, int64_t heads, int64_t tq,
                         int64_t tk);

/// The key length of a one-row tile's `lengths` (null: none), as an index.
Value tileKeyLength(OpBuilder &b, Location loc, Value lengths);

/// A tensor.extract_slice of `src` (unit strides), recorded in `slices`.
Value sliceOf(OpBuilder &b, Location loc, Value src,
              ArrayRef<OpFoldResult> offsets, ArrayRef<OpFoldResult> sizes,
              SmallVectorImpl<Operation *> &slices);

} // namespace mlir::hkt

#endif // HKT_DIALECT_UTILS_TILEGEOMETRY_H
