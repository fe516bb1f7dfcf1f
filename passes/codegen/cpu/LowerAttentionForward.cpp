//===- LowerAttentionForward.cpp - hkt.online_attention on the CPU --------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// hkt.online_attention -> scf.forall (batch, head, query tile) x scf.for
// (key tile) over the tile builder's small static linalg ops
// (dialect/OnlineAttentionTile.h). Never materialises more than a
// tile-q x tile-k block of scores.
//
//===----------------------------------------------------------------------===//

#include "dialect/HKTOps.h"
#include "dialect/OnlineAttentionTile.h"
#include "dialect/Utils/LinalgBuilders.h"
#include "passes/codegen/cpu/AttentionLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::hkt;
using namespace mlir::hkt::cpu;

namespace {

/// Lowers one op; every shape is static. The loops come from upstream tiling
/// (scf::tileUsingSCF through the op's TilingInterface); this adds what a
/// CPU wants around them: whole tiles (padding), packed operands, a
/// contiguous accumulator, and key loops that skip dead tiles and mask only
/// where needed.
class ForwardLowering : public AttentionLowering {
public:
  ForwardLowering(OnlineAttentionOp op, RewriterBase &rw, int64_t tileQ,
                  int64_t tileK)
      : AttentionLowering(op, rw, tileQ, tileK), op(op) {}

  LogicalResult run();

private:
  Value padTo(Value v, unsigned dim, OpFoldResult size, Value padValue) {
    return padHigh(rw, loc, v, dim, size, padValue);
  }
  Value packTiles(Value src, int64_t tileLen, ArrayRef<int64_t> radices,
                  bool transposed) {
    return pack(src, tileLen, radices, transposed);
  }
  OnlineAttentionOp padToWholeTiles();
  void emitTile(OnlineAttentionOp tileOp, Value b, Value h, TileMask mask);
  void splitKeyLoop(scf::ForOp keyLoop, Value b, Value h, Value i0);
  /// Keys of batch row `b` at or past this index are masked: the row's key
  /// length (clamped to the sequence), the sequence when it was padded, or
  /// null when no key is ever masked for its length.
  Value keyLength(Value b) {
    if (op.getLengths())
      return rowKeyLength(rw, loc, keyLengths, b);
    if (tkValue)
      return tkValue;
    return tkPad != tk ? index(tk) : Value();
  }
  /// The running state padded: a fresh fill of the padded size when the
  /// state is a fill of the pad value (the usual start: no copy), else
  /// padTo.
  Value padState(Value v, unsigned dim, OpFoldResult size, Value padValue) {
    auto fill = v.getDefiningOp<linalg::FillOp>();
    Attribute filled, pad;
    if (!fill || !matchPattern(fill.getInputs()[0], m_Constant(&filled)) ||
        !matchPattern(padValue, m_Constant(&pad)) || filled != pad ||
        !fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>() ||
        !ShapedType::isDynamic(tqPad))
      return padTo(v, dim, size, padValue);
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rw, loc, v);
    sizes[dim] = size;
    Value empty = tensor::EmptyOp::create(rw, loc, sizes, elt);
    return linalg::FillOp::create(rw, loc, padValue, empty).getResult(0);
  }
  OnlineAttentionOp withStaticTileState(OnlineAttentionOp tileOp);

  OnlineAttentionOp op;
  /// Packed once, read tile by tile (packTiles): queries B x H x Tq_l x d,
  /// keys B x H x tiles x d x (tile-k / f_l), values B x H x Tk x d.
  SmallVector<Value> queries, keys;
  Value value;
};

/// The op on sequences zero-padded to whole tiles; padded keys are masked
/// through the key lengths (clamped to the real length), padded query rows
/// are dropped by the caller.
OnlineAttentionOp ForwardLowering::padToWholeTiles() {
  Value zero = floatConstant(rw, loc, elt, 0.0);
  SmallVector<Value> queryRows, keyRows;
  for (auto [l, f] : llvm::enumerate(factors)) {
    queryRows.push_back(padTo(op.getQueries()[l], 1, paddedQueries(f), zero));
    keyRows.push_back(padTo(op.getKeys()[l], 1, paddedKeys(f), zero));
  }
  keyLengths =
      tkValue ? clampedKeyLengths(rw, loc, op.getLengths(), batch, tkValue)
              : clampedKeyLengths(rw, loc, op.getLengths(), batch, tk, tkPad);
  Value acc = padState(op.getAcc(), 1, paddedQueries(1), zero);
  Value max = padState(op.getMax(), 2, paddedQueries(1),
                       lowestFinite(rw, loc, cast<FloatType>(elt)));
  Value sum = padState(op.getSum(), 2, paddedQueries(1), zero);
  return OnlineAttentionOp::create(
      rw, loc, TypeRange{acc.getType(), max.getType(), sum.getType()},
      queryRows, keyRows, padTo(op.getValue(), 1, paddedKeys(1), zero),
      keyLengths, /*query_offset=*/Value(), /*key_offset=*/Value(), acc, max,
      sum, op.getFactorsAttr(), op.getCausalAttr());
}

/// A query tile of a dynamic sequence has dynamic sizes (upstream tiling
/// bounds each by min(tile-q, Tpad - i0)), yet every tile of the padded op
/// is whole: its accumulator and running rows are cast to their static
/// tile shapes, so that the key loop and the tile algorithm stay static.
OnlineAttentionOp
ForwardLowering::withStaticTileState(OnlineAttentionOp tileOp) {
  SmallVector<Type> staticTypes = {type({1, tileQ, headDim}),
                                   type({1, 1, tileQ}), type({1, 1, tileQ})};
  if (TypeRange(tileOp->getResultTypes()) == TypeRange(staticTypes))
    return tileOp;
  OpBuilder::InsertionGuard guard(rw);
  rw.setInsertionPoint(tileOp);
  auto cast = [&](Value v, Type t) -> Value {
    return v.getType() == t ? v : tensor::CastOp::create(rw, loc, t, v);
  };
  auto staticOp = OnlineAttentionOp::create(
      rw, loc, staticTypes, tileOp.getQueries(), tileOp.getKeys(),
      tileOp.getValue(), tileOp.getLengths(), tileOp.getQueryOffset(),
      tileOp.getKeyOffset(), cast(tileOp.getAcc(), staticTypes[0]),
      cast(tileOp.getMax(), staticTypes[1]),
      cast(tileOp.getSum(), staticTypes[2]), tileOp.getFactorsAttr(),
      tileOp.getCausalAttr());
  SmallVector<Value> results;
  for (auto [r, old] : llvm::zip(staticOp->getResults(), tileOp->getResults()))
    results.push_back(cast(r, old.getType()));
  rw.replaceOp(tileOp, results);
  return staticOp;
}

/// Replaces one key-tile op (one batch row `b`, head `h`, tile-q x tile-k)
/// by the tile algorithm on the packed operands.
void ForwardLowering::emitTile(OnlineAttentionOp tileOp, Value b, Value h,
                               TileMask mask) {
  OpBuilder::InsertionGuard guard(rw);
  rw.setInsertionPoint(tileOp);
  Value i0 = tileOp.getQueryOffset(), j0 = tileOp.getKeyOffset();
  Value kt = arith::DivUIOp::create(rw, loc, j0, index(tileK));
  OnlineAttentionTileOperands tile;
  for (auto [l, f] : llvm::enumerate(factors)) {
    Value row0 = arith::DivUIOp::create(rw, loc, i0, index(f));
    tile.queries.push_back(slice(queries[l], {b, h, row0, rw.getIndexAttr(0)},
                                 {1, 1, tileQ / f, headDim},
                                 {tileQ / f, headDim}));
    tile.keysT.push_back(
        slice(keys[l], {b, h, kt, rw.getIndexAttr(0), rw.getIndexAttr(0)},
              {1, 1, 1, headDim, tileK / f}, {headDim, tileK / f}));
  }
  tile.value = slice(value, {b, h, j0, rw.getIndexAttr(0)},
                     {1, 1, tileK, headDim}, {tileK, headDim});
  auto collapse = [&](Value v, SmallVector<ReassociationIndices> r) -> Value {
    return tensor::CollapseShapeOp::create(rw, loc, v, r);
  };
  tile.acc = collapse(tileOp.getAcc(), {{0, 1}, {2}});
  tile.max = collapse(tileOp.getMax(), {{0, 1, 2}});
  tile.sum = collapse(tileOp.getSum(), {{0, 1, 2}});
  tile.queryOffset = i0;
  tile.keyOffset = j0;
  tile.keyLength = keyLength(b);
  tile.causal = op.getCausal();
  SmallVector<Value> r =
      buildOnlineAttentionTile(rw, loc, tile, factors, order, mask);
  auto expand = [&](Value v, Type t, SmallVector<ReassociationIndices> re) {
    return tensor::ExpandShapeOp::create(rw, loc, t, v, re).getResult();
  };
  rw.replaceOp(
      tileOp, ValueRange{expand(r[0], tileOp.getAcc().getType(), {{0, 1}, {2}}),
                         expand(r[1], tileOp.getMax().getType(), {{0, 1, 2}}),
                         expand(r[2], tileOp.getSum().getType(), {{0, 1, 2}})});
}

/// The key loop of one query tile (starting at row `i0`) visits only tiles
/// that hold a visible key for some row, in two loops: tiles below the
/// diagonal and inside the key length need no mask, the rest do. Both
/// bounds are exact: a skipped tile would leave the state unchanged.
void ForwardLowering::splitKeyLoop(scf::ForOp keyLoop, Value b, Value h,
                                   Value i0) {
  OnlineAttentionOp tileOp;
  keyLoop.walk([&](OnlineAttentionOp o) { tileOp = o; });
  rw.setInsertionPoint(keyLoop);
  Value keyLength = this->keyLength(b);
  if (!keyLength)
    keyLength = tkValue ? tkValue : index(tk);
  Value keyEnd = keyLength;
  if (op.getCausal())
    keyEnd = arith::MinSIOp::create(
        rw, loc, keyEnd, arith::AddIOp::create(rw, loc, i0, index(tileQ)));
  Value numTiles = arith::CeilDivSIOp::create(rw, loc, keyEnd, index(tileK));
  Value unmaskedEnd = arith::DivSIOp::create(rw, loc, keyLength, index(tileK));
  if (op.getCausal())
    unmaskedEnd = arith::MinSIOp::create(
        rw, loc, unmaskedEnd,
        arith::DivSIOp::create(rw, loc,
                               arith::AddIOp::create(rw, loc, i0, index(1)),
                               index(tileK)));
  unmaskedEnd = arith::MinSIOp::create(rw, loc, unmaskedEnd, numTiles);
  Value split = arith::MulIOp::create(rw, loc, unmaskedEnd, index(tileK));
  Value upper = arith::MulIOp::create(rw, loc, numTiles, index(tileK));

  auto unmasked = cast<scf::ForOp>(rw.clone(*keyLoop));
  OnlineAttentionOp unmaskedTileOp;
  unmasked.walk([&](OnlineAttentionOp o) { unmaskedTileOp = o; });
  rw.modifyOpInPlace(unmasked, [&] { unmasked.setUpperBound(split); });
  rw.modifyOpInPlace(keyLoop, [&] {
    keyLoop.setLowerBound(split);
    keyLoop.setUpperBound(upper);
    keyLoop.getInitArgsMutable().assign(unmasked.getResults());
  });
  emitTile(unmaskedTileOp, b, h, TileMask::None);
  emitTile(tileOp, b, h, TileMask::Always);
}

LogicalResult ForwardLowering::run() {
  if (failed(checkLowerable(op.getQueryOffset(), /*dynamicSequences=*/true)))
    return failure();
  setShapes(cast<RankedTensorType>(op.getAcc().getType()),
            cast<RankedTensorType>(op.getMax().getType()),
            op.getValue().getType().getDimSize(1), op.getFactors());
  setSequenceSources(op.getAcc(), 1, op.getValue(), 1);
  resultInits = {op.getAcc(), op.getMax(), op.getSum()};
  rw.setInsertionPoint(op);
  chooseTileSizes();

  OnlineAttentionOp padded = padToWholeTiles();

  // Packed once, before the loops (packTiles).
  rw.setInsertionPoint(padded);
  for (auto [l, f] : llvm::enumerate(factors)) {
    queries.push_back(packTiles(padded.getQueries()[l], wholeQueries(f), {},
                                /*transposed=*/false));
    keys.push_back(packTiles(padded.getKeys()[l], tileK / f,
                             order.radicesAbove(f), /*transposed=*/true));
  }
  value = packTiles(padded.getValue(), tileK, order.radices,
                    /*transposed=*/false);

  // Upstream tiling: scf.forall over (batch, head, query tile), then scf.for
  // over key tiles carrying the running state (the op's TilingInterface).
  auto sizes = [&](ArrayRef<int64_t> s) {
    return llvm::map_to_vector(
        s, [&](int64_t v) -> OpFoldResult { return rw.getIndexAttr(v); });
  };
  scf::SCFTilingOptions parallel;
  parallel.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp)
      .setTileSizes(sizes({1, 1, tileQ, 0}));
  FailureOr<scf::SCFTilingResult> outer = scf::tileUsingSCF(
      rw, cast<TilingInterface>(padded.getOperation()), parallel);
  if (failed(outer))
    return op.emitOpError("tiling over (batch, head, query tile) failed");
  rw.replaceOp(padded, outer->replacements);
  auto queryTileOp =
      withStaticTileState(cast<OnlineAttentionOp>(outer->tiledOps.front()));
  // The tile's batch row and head: the offsets of its slice of `max`.
  FailureOr<std::pair<Value, Value>> bh =
      batchAndHead(queryTileOp, queryTileOp.getMax());
  if (failed(bh))
    return failure();
  auto [b, h] = *bh;
  Value i0 = queryTileOp.getQueryOffset();

  scf::SCFTilingOptions sequential;
  sequential.setTileSizes(sizes({0, 0, 0, tileK}));
  FailureOr<scf::SCFTilingResult> inner = scf::tileUsingSCF(
      rw, cast<TilingInterface>(queryTileOp.getOperation()), sequential);
  if (failed(inner))
    return op.emitOpError("tiling over key tiles failed");
  rw.replaceOp(queryTileOp, inner->replacements);
  auto keyLoop = cast<scf::ForOp>(inner->loops.front().getOperation());

  // The accumulator tile is carried in a contiguous buffer of its own (its
  // rows in the B x T x D result are D apart); copied as a tile-q x d matrix
  // (MLIR 22's vector patterns loop forever on a rank-3 strided copy).
  rw.setInsertionPoint(keyLoop);
  Value accInit = keyLoop.getInitArgs()[0];
  SmallVector<ReassociationIndices> rows = {{0, 1}, {2}};
  Value accRows = tensor::CollapseShapeOp::create(rw, loc, accInit, rows);
  Value accCopy =
      linalg::CopyOp::create(
          rw, loc, ValueRange{accRows},
          ValueRange{tensor::EmptyOp::create(rw, loc, {tileQ, headDim}, elt)})
          .getResult(0);
  Value accTile =
      tensor::ExpandShapeOp::create(rw, loc, accInit.getType(), accCopy, rows);
  rw.modifyOpInPlace(keyLoop, [&] {
    keyLoop.getInitArgsMutable().slice(0, 1).assign(accTile);
  });
  splitKeyLoop(keyLoop, b, h, i0);

  // Drop the padded query rows; what the tiled ops left behind is dead.
  replaceWithUnpadded(cast<scf::ForallOp>(outer->loops.front().getOperation()));
  return success();
}

} // namespace

LogicalResult mlir::hkt::cpu::lowerOnlineAttention(OnlineAttentionOp op,
                                                   RewriterBase &rw,
                                                   int64_t tileQ,
                                                   int64_t tileK) {
  return ForwardLowering(op, rw, tileQ, tileK).run();
}
