//===- AttentionLowering.h - The CPU attention lowerings --------*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// hkt-cpu-lower-online-attention lowers hkt.online_attention
// (LowerAttentionForward.cpp) and hkt.online_attention_backward
// (LowerAttentionBackward.cpp) the same way around their loop nests: the
// sequences padded to whole tiles of sizes chosen here, operands packed
// head-major once, upstream tiling for the parallel loop over (batch, head
// [, query tile]), padded rows dropped from the results. That shared part
// is AttentionLowering and the builders below.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_PASSES_CODEGEN_CPU_ATTENTIONLOWERING_H
#define HKT_PASSES_CODEGEN_CPU_ATTENTIONLOWERING_H

#include "dialect/OnlineAttentionTile.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::hkt {
class OnlineAttentionOp;
class OnlineAttentionBackwardOp;

namespace cpu {

/// Tile sizes from the requested ones: whole coarse blocks (multiples of
/// every factor), no larger than the (padded) sequence; and the sequences
/// padded to whole tiles.
void chooseTiles(ArrayRef<int64_t> factors, int64_t tq, int64_t tk,
                 int64_t requestedQ, int64_t requestedK, int64_t &tileQ,
                 int64_t &tileK, int64_t &tqPad, int64_t &tkPad);

/// A rank-reduced static slice of `src` (unit strides).
Value staticSlice(RewriterBase &rw, Location loc, RankedTensorType type,
                  Value src, ArrayRef<OpFoldResult> offsets,
                  ArrayRef<int64_t> sizes);

/// The key length of batch row `b` from B x int key lengths, as an index.
Value rowKeyLength(RewriterBase &rw, Location loc, Value keyLengths, Value b);

/// Zero-pads dimension `dim` of `v` up to `size` (at the end); a dynamic
/// size gives a dynamic dimension.
Value padHigh(RewriterBase &rw, Location loc, Value v, unsigned dim,
              OpFoldResult size, Value padValue);
inline Value padHigh(RewriterBase &rw, Location loc, Value v, unsigned dim,
                     int64_t size, Value padValue) {
  return padHigh(rw, loc, v, dim, rw.getIndexAttr(size), padValue);
}

/// Packs a B x N x D operand for the tile loops: head-major, so that every
/// tile the loops read is one contiguous block (strided tile rows 2-16 KiB
/// apart map to a few cache sets and evict each other), with the keys
/// inside every tile of `tileLen` in the order of KeyTileOrder (`radices`:
/// those of this level's tiles).
///
/// Result: B x H x tiles x d x tileLen (`transposed`, keys: each tile a
/// d x tileLen matrix) or B x H x N x d (queries and values). N may be
/// dynamic (then so is the number of tiles); `tileLen` 0 means one tile of
/// the whole sequence.
Value packHeadMajor(RewriterBase &rw, Location loc, Value src, int64_t heads,
                    int64_t tileLen, ArrayRef<int64_t> rad, bool transposed);

/// The key lengths of an op whose keys were padded from `tk` to `tkPad`:
/// `lengths` clamped to `tk` (all `tk` without lengths), so that padded keys
/// are masked; `lengths` itself when nothing was padded.
Value clampedKeyLengths(RewriterBase &rw, Location loc, Value lengths,
                        int64_t batch, int64_t tk, int64_t tkPad);
/// The same for a dynamic key sequence of `tk` (an index value): always
/// clamped, the padding is not known statically.
Value clampedKeyLengths(RewriterBase &rw, Location loc, Value lengths,
                        int64_t batch, Value tk);

/// The tiles go back into the results as matrices and rows (rank-reduced
/// 1 x n x d -> n x d, 1 x 1 x n -> n): MLIR 22's vector patterns loop
/// forever on a rank-3 strided copy.
void rankReduceParallelInserts(RewriterBase &rw, scf::ForallOp forall);

/// The leading `want` part of a padded result (`sizes`: want's sizes,
/// needed when it has dynamic ones).
Value unpadTo(RewriterBase &rw, Location loc, Value padded,
              RankedTensorType want, ArrayRef<OpFoldResult> sizes = {});

/// What the tiled ops left behind inside `forall` and nobody reads.
void eraseDeadInside(RewriterBase &rw, scf::ForallOp forall);

/// The inverse of packHeadMajor for one head's transposed tiles:
/// tiles x d x tileLen (in the order of `rad`) -> N x d in sequence order.
Value unpackHeadTiles(RewriterBase &rw, Location loc, Value packed,
                      ArrayRef<int64_t> rad);

/// The state of one op's lowering that forward and backward share: its
/// static shapes, the tiles chosen for them and the builders on them.
class AttentionLowering {
protected:
  AttentionLowering(Operation *op, RewriterBase &rw, int64_t tileQ,
                    int64_t tileK)
      : op(op), rw(rw), loc(op->getLoc()), requestedQ(tileQ),
        requestedK(tileK) {}

  /// The op untiled, and every operand static (or, with
  /// `dynamicSequences`, static but for the sequence lengths); otherwise an
  /// error on the op.
  LogicalResult checkLowerable(Value queryOffset,
                               bool dynamicSequences = false);
  /// The shapes: `rows` B x T x D (the accumulator, dout), `perHeadRows`
  /// B x H x T (max, lse), `keys` the key sequence's length.
  void setShapes(RankedTensorType rows, RankedTensorType perHeadRows,
                 int64_t keys, ArrayRef<int64_t> levels);
  /// Where a dynamic query and key length are read: dimension `queryDim`
  /// of `queryRows`, `keyDim` of `keyRows`.
  void setSequenceSources(Value queryRows, unsigned queryDim, Value keyRows,
                          unsigned keyDim);
  /// The tile sizes from the requested ones (chooseTiles), the padded
  /// lengths and the key order inside tiles. With a dynamic sequence
  /// (tq or tk ShapedType::kDynamic) the tiles are the requested ones and
  /// the lengths, real and padded, index values (tqValue ... tkPadValue)
  /// built before the op.
  void chooseTileSizes();
  /// A sequence length: `length` when static, else `value`, divided by `f`.
  OpFoldResult lengthOver(int64_t length, Value value, int64_t f) {
    if (!ShapedType::isDynamic(length))
      return rw.getIndexAttr(length / f);
    if (f == 1)
      return value;
    return arith::DivUIOp::create(rw, loc, value, index(f)).getResult();
  }
  /// The padded length of level `f`'s queries or keys.
  OpFoldResult paddedQueries(int64_t f) {
    return lengthOver(tqPad, tqPadValue, f);
  }
  OpFoldResult paddedKeys(int64_t f) {
    return lengthOver(tkPad, tkPadValue, f);
  }
  /// The tileLen of packHeadMajor for one tile of level `f`'s whole padded
  /// query sequence (0: dynamic, the whole sequence).
  int64_t wholeQueries(int64_t f) {
    return ShapedType::isDynamic(tqPad) ? 0 : tqPad / f;
  }
  /// The batch row and head of a tile that upstream tiling made, from the
  /// offsets of its B x H x T operand's slice; index values built before
  /// `tileOp`.
  FailureOr<std::pair<Value, Value>> batchAndHead(Operation *tileOp,
                                                  Value perHeadRows);
  /// Replaces the op by `forall`'s results without the padded rows, the
  /// tiles inserted as matrices and rows; erases what the tiled ops left
  /// dead inside the loop.
  void replaceWithUnpadded(scf::ForallOp forall);

  RankedTensorType type(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, elt);
  }
  Value index(int64_t v) { return arith::ConstantIndexOp::create(rw, loc, v); }
  Value slice(Value src, ArrayRef<OpFoldResult> offsets,
              ArrayRef<int64_t> sizes, ArrayRef<int64_t> resultShape) {
    return staticSlice(rw, loc, type(resultShape), src, offsets, sizes);
  }
  Value pack(Value src, int64_t tileLen, ArrayRef<int64_t> radices,
             bool transposed) {
    return packHeadMajor(rw, loc, src, heads, tileLen, radices, transposed);
  }

  Operation *op;
  RewriterBase &rw;
  Location loc;
  int64_t requestedQ, requestedK;
  Type elt;
  int64_t batch = 0, tq = 0, tk = 0, heads = 0, headDim = 0;
  int64_t tileQ = 0, tileK = 0, tqPad = 0, tkPad = 0;
  /// The lengths as index values (null where static), read from
  /// setSequenceSources's operands.
  Value tqValue, tkValue, tqPadValue, tkPadValue;
  Value tqSource, tkSource;
  unsigned tqSourceDim = 1, tkSourceDim = 1;
  /// The op's destination operands, one per result (the sizes of dynamic
  /// results).
  SmallVector<Value> resultInits;
  SmallVector<int64_t> factors;
  KeyTileOrder order;
  /// B x i32 key lengths of the padded op (padded keys included), or null.
  Value keyLengths;
};

/// Lowers one hkt.online_attention (LowerAttentionForward.cpp).
LogicalResult lowerOnlineAttention(OnlineAttentionOp op, RewriterBase &rw,
                                   int64_t tileQ, int64_t tileK);
/// Lowers one hkt.online_attention_backward (LowerAttentionBackward.cpp).
LogicalResult lowerOnlineAttentionBackward(OnlineAttentionBackwardOp op,
                                           RewriterBase &rw, int64_t tileQ,
                                           int64_t tileK);

} // namespace cpu
} // namespace mlir::hkt

#endif // HKT_PASSES_CODEGEN_CPU_ATTENTIONLOWERING_H
