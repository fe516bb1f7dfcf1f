//===- LowerOnlineAttention.cpp - hkt-cpu-lower-online-attention --------------===//
//
// hkt.online_attention -> scf.forall (batch, head, query tile) x scf.for (key
// tile) over small static linalg ops (see Passes.td). Never materialises more
// than a tile-q x tile-k block of scores.
//
//===----------------------------------------------------------------------===//

#include "dialect/HKTOps.h"
#include "dialect/Utils/LinalgBuilders.h"
#include "dialect/OnlineAttentionTile.h"
#include "passes/codegen/cpu/Passes.h"
#include "passes/transforms/Passes.h"

#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Iterators.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"

#include <limits>
#include <numeric>

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTCPULOWERONLINEATTENTIONPASS
#include "passes/codegen/cpu/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;
using namespace mlir::hkt;

namespace {

int64_t roundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

/// Tile sizes from the requested ones: whole coarse blocks (multiples of
/// every factor), no larger than the (padded) sequence; and the sequences
/// padded to whole tiles.
void chooseTiles(ArrayRef<int64_t> factors, int64_t tq, int64_t tk,
                 int64_t requestedQ, int64_t requestedK, int64_t &tileQ,
                 int64_t &tileK, int64_t &tqPad, int64_t &tkPad) {
  int64_t align = 1;
  for (int64_t f : factors)
    align = std::lcm(align, f);
  tileQ = roundUp(std::min(requestedQ, roundUp(tq, align)), align);
  tileK = roundUp(std::min(requestedK, roundUp(tk, align)), align);
  tqPad = roundUp(tq, tileQ);
  tkPad = roundUp(tk, tileK);
}

/// A rank-reduced static slice of `src` (unit strides).
Value staticSlice(RewriterBase &rw, Location loc, RankedTensorType type,
                  Value src, ArrayRef<OpFoldResult> offsets,
                  ArrayRef<int64_t> sizes) {
  return tensor::ExtractSliceOp::create(
      rw, loc, type, src, offsets, getAsIndexOpFoldResult(rw.getContext(), sizes),
      SmallVector<OpFoldResult>(sizes.size(), rw.getIndexAttr(1)));
}

/// The key length of batch row `b` from B x int key lengths, as an index.
Value rowKeyLength(RewriterBase &rw, Location loc, Value keyLengths, Value b) {
  Value len = tensor::ExtractOp::create(rw, loc, keyLengths, ValueRange{b});
  return arith::IndexCastOp::create(rw, loc, rw.getIndexType(), len);
}

/// Zero-pads dimension `dim` of `v` up to `size` (at the end).
Value padHigh(RewriterBase &rw, Location loc, Value v, unsigned dim,
              int64_t size, Value padValue) {
  auto t = cast<RankedTensorType>(v.getType());
  if (t.getDimSize(dim) == size)
    return v;
  SmallVector<int64_t> shape(t.getShape());
  shape[dim] = size;
  return tensor::createPadHighOp(
      RankedTensorType::get(shape, t.getElementType()), v, padValue,
      /*nofold=*/false, loc, rw);
}

/// Packs a B x N x D operand for the tile loops: head-major, so that every
/// tile the loops read is one contiguous block (strided tile rows 2-16 KiB
/// apart map to a few cache sets and evict each other), with the keys
/// inside every tile of `tileLen` in the order of KeyTileOrder (`radices`:
/// those of this level's tiles).
///
/// Result: B x H x tiles x d x tileLen (`transposed`, keys: each tile a
/// d x tileLen matrix) or B x H x N x d (queries and values).
Value packHeadMajor(RewriterBase &rw, Location loc, Value src, int64_t heads,
                    int64_t tileLen, ArrayRef<int64_t> rad, bool transposed) {
  auto t = cast<RankedTensorType>(src.getType());
  Type elt = t.getElementType();
  auto type = [&](ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, elt);
  };
  int64_t batch = t.getDimSize(0), n = t.getDimSize(1),
          headDim = t.getDimSize(2) / heads;
  int64_t period = 1;
  for (int64_t r : rad)
    period *= r;
  int64_t m = rad.size();
  // B x tiles x c x r_{m-1} x ... x r_0 x H x d
  SmallVector<int64_t> shape = {batch, n / tileLen, tileLen / period};
  for (int64_t r : llvm::reverse(rad))
    shape.push_back(r);
  shape.append({heads, headDim});
  int64_t hDim = 3 + m, dDim = 4 + m;
  SmallVector<ReassociationIndices> split = {
      {0}, llvm::to_vector(llvm::seq<int64_t>(1, hDim)), {hDim, dDim}};
  Value expanded =
      tensor::ExpandShapeOp::create(rw, loc, type(shape), src, split);
  // -> B x H x tiles x [d x] r_0 x ... x r_{m-1} x c [x d]
  SmallVector<int64_t> perm = {0, hDim, 1};
  if (transposed)
    perm.push_back(dDim);
  for (int64_t i = 0; i < m; ++i)
    perm.push_back(2 + m - i);
  perm.push_back(2);
  if (!transposed)
    perm.push_back(dDim);
  SmallVector<int64_t> permShape;
  for (int64_t p : perm)
    permShape.push_back(shape[p]);
  Value init = tensor::EmptyOp::create(rw, loc, permShape, elt);
  Value moved =
      linalg::TransposeOp::create(rw, loc, expanded, init, perm).getResult()[0];
  SmallVector<ReassociationIndices> merge;
  SmallVector<int64_t> outShape;
  if (transposed) {
    merge = {{0}, {1}, {2}, {3}, llvm::to_vector(llvm::seq<int64_t>(4, 5 + m))};
    outShape = {batch, heads, n / tileLen, headDim, tileLen};
  } else {
    merge = {{0}, {1}, llvm::to_vector(llvm::seq<int64_t>(2, 4 + m)), {4 + m}};
    outShape = {batch, heads, n, headDim};
  }
  return tensor::CollapseShapeOp::create(rw, loc, type(outShape), moved, merge);
}

/// The key lengths of an op whose keys were padded from `tk` to `tkPad`:
/// `lengths` clamped to `tk` (all `tk` without lengths), so that padded keys
/// are masked; `lengths` itself when nothing was padded.
Value clampedKeyLengths(RewriterBase &rw, Location loc, Value lengths,
                        int64_t batch, int64_t tk, int64_t tkPad) {
  if (tkPad == tk)
    return lengths;
  auto lenType = lengths ? cast<RankedTensorType>(lengths.getType())
                         : RankedTensorType::get({batch}, rw.getI32Type());
  Value real = arith::ConstantOp::create(
      rw, loc, rw.getIntegerAttr(lenType.getElementType(), tk));
  Value empty = tensor::EmptyOp::create(rw, loc, lenType.getShape(),
                                        lenType.getElementType());
  if (!lengths)
    return linalg::FillOp::create(rw, loc, real, empty).getResult(0);
  AffineMap id = rw.getMultiDimIdentityMap(1);
  return linalg::GenericOp::create(
             rw, loc, lenType, lengths, empty, {id, id}, {kPar},
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               linalg::YieldOp::create(
                   nb, nl,
                   arith::MinSIOp::create(nb, nl, args[0], real).getResult());
             })
      .getResult(0);
}

/// The tiles go back into the results as matrices and rows (rank-reduced
/// 1 x n x d -> n x d, 1 x 1 x n -> n): MLIR 22's vector patterns loop
/// forever on a rank-3 strided copy.
void rankReduceParallelInserts(RewriterBase &rw, scf::ForallOp forall) {
  scf::InParallelOp terminator = forall.getTerminator();
  OpBuilder::InsertionGuard guard(rw);
  rw.setInsertionPoint(terminator);
  for (Operation &yielding : terminator.getYieldingOps()) {
    auto insert = cast<tensor::ParallelInsertSliceOp>(&yielding);
    auto sourceType = cast<RankedTensorType>(insert.getSource().getType());
    SmallVector<ReassociationIndices> merge =
        sourceType.getRank() == 3 && sourceType.getDimSize(0) == 1 &&
                sourceType.getDimSize(1) == 1
            ? SmallVector<ReassociationIndices>{{0, 1, 2}}
            : SmallVector<ReassociationIndices>{{0, 1}, {2}};
    Value reduced = tensor::CollapseShapeOp::create(rw, insert.getLoc(),
                                                    insert.getSource(), merge);
    rw.modifyOpInPlace(insert,
                       [&] { insert.getSourceMutable().assign(reduced); });
  }
}

/// The leading `want` part of a padded result.
Value unpadTo(RewriterBase &rw, Location loc, Value padded,
              RankedTensorType want) {
  if (cast<RankedTensorType>(padded.getType()) == want)
    return padded;
  int64_t rank = want.getRank();
  SmallVector<OpFoldResult> offsets(rank, rw.getIndexAttr(0)), sizes,
      strides(rank, rw.getIndexAttr(1));
  for (int64_t s : want.getShape())
    sizes.push_back(rw.getIndexAttr(s));
  return tensor::ExtractSliceOp::create(rw, loc, want, padded, offsets, sizes,
                                        strides);
}

/// What the tiled ops left behind inside `forall` and nobody reads.
void eraseDeadInside(RewriterBase &rw, scf::ForallOp forall) {
  forall.walk<WalkOrder::PostOrder, ReverseIterator>([&](Operation *o) {
    if (o != forall && isOpTriviallyDead(o))
      rw.eraseOp(o);
  });
}

/// A tensor that linalg.fill sets to zero.
bool isZeroFill(Value v) {
  auto fill = v.getDefiningOp<linalg::FillOp>();
  return fill && matchPattern(fill.getInputs()[0], m_AnyZeroFloat());
}

/// The inverse of packHeadMajor for one head's transposed tiles:
/// tiles x d x tileLen (in the order of `rad`) -> N x d in sequence order.
Value unpackHeadTiles(RewriterBase &rw, Location loc, Value packed,
                      ArrayRef<int64_t> rad) {
  auto t = cast<RankedTensorType>(packed.getType());
  Type elt = t.getElementType();
  int64_t tiles = t.getDimSize(0), headDim = t.getDimSize(1),
          tileLen = t.getDimSize(2);
  int64_t period = 1;
  for (int64_t r : rad)
    period *= r;
  int64_t m = rad.size();
  // tiles x d x r_0 x ... x r_{m-1} x c
  SmallVector<int64_t> shape = {tiles, headDim};
  llvm::append_range(shape, rad);
  shape.push_back(tileLen / period);
  SmallVector<ReassociationIndices> split = {
      {0}, {1}, llvm::to_vector(llvm::seq<int64_t>(2, 3 + m))};
  Value expanded = tensor::ExpandShapeOp::create(
      rw, loc, RankedTensorType::get(shape, elt), packed, split);
  // -> tiles x c x r_{m-1} x ... x r_0 x d
  SmallVector<int64_t> perm = {0, 2 + m};
  for (int64_t k = 0; k < m; ++k)
    perm.push_back(2 + (m - 1 - k));
  perm.push_back(1);
  SmallVector<int64_t> permShape;
  for (int64_t p : perm)
    permShape.push_back(shape[p]);
  Value moved =
      linalg::TransposeOp::create(
          rw, loc, expanded, tensor::EmptyOp::create(rw, loc, permShape, elt),
          perm)
          .getResult()[0];
  SmallVector<ReassociationIndices> merge = {
      llvm::to_vector(llvm::seq<int64_t>(0, 2 + m)), {2 + m}};
  return tensor::CollapseShapeOp::create(
      rw, loc, RankedTensorType::get({tiles * tileLen, headDim}, elt), moved,
      merge);
}

/// Lowers one op; every shape is static. The loops come from upstream tiling
/// (scf::tileUsingSCF through the op's TilingInterface); this adds what a
/// CPU wants around them: whole tiles (padding), packed operands, a
/// contiguous accumulator, and key loops that skip dead tiles and mask only
/// where needed.
class Lowering {
public:
  Lowering(OnlineAttentionOp op, RewriterBase &rw, int64_t tileQ, int64_t tileK)
      : op(op), rw(rw), loc(op.getLoc()), requestedQ(tileQ),
        requestedK(tileK) {}

  LogicalResult run();

private:
  RankedTensorType type(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, elt);
  }
  Value index(int64_t v) { return arith::ConstantIndexOp::create(rw, loc, v); }
  Value padTo(Value v, unsigned dim, int64_t size, Value padValue) {
    return padHigh(rw, loc, v, dim, size, padValue);
  }
  Value slice(Value src, ArrayRef<OpFoldResult> offsets,
              ArrayRef<int64_t> sizes, ArrayRef<int64_t> resultShape) {
    return staticSlice(rw, loc, type(resultShape), src, offsets, sizes);
  }

  Value packTiles(Value src, int64_t tileLen, ArrayRef<int64_t> radices,
                  bool transposed) {
    return packHeadMajor(rw, loc, src, heads, tileLen, radices, transposed);
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
    return tkPad != tk ? index(tk) : Value();
  }

  OnlineAttentionOp op;
  RewriterBase &rw;
  Location loc;
  int64_t requestedQ, requestedK;
  Type elt;
  int64_t batch = 0, tq = 0, tk = 0, heads = 0, headDim = 0;
  int64_t tileQ = 0, tileK = 0, tqPad = 0, tkPad = 0;
  SmallVector<int64_t> factors;
  KeyTileOrder order;
  /// Packed once, read tile by tile (packTiles): queries B x H x Tq_l x d,
  /// keys B x H x tiles x d x (tile-k / f_l), values B x H x Tk x d.
  SmallVector<Value> queries, keys;
  Value value;
  /// B x i32 key lengths of the padded op (padded keys included), or null.
  Value keyLengths;
};

/// The op on sequences zero-padded to whole tiles; padded keys are masked
/// through the key lengths (clamped to the real length), padded query rows
/// are dropped by the caller.
OnlineAttentionOp Lowering::padToWholeTiles() {
  Value zero = floatConstant(rw, loc, elt, 0.0);
  SmallVector<Value> paddedQueries, paddedKeys;
  for (auto [l, f] : llvm::enumerate(factors)) {
    paddedQueries.push_back(padTo(op.getQueries()[l], 1, tqPad / f, zero));
    paddedKeys.push_back(padTo(op.getKeys()[l], 1, tkPad / f, zero));
  }
  keyLengths = clampedKeyLengths(rw, loc, op.getLengths(), batch, tk, tkPad);
  Value acc = padTo(op.getAcc(), 1, tqPad, zero);
  Value max = padTo(op.getMax(), 2, tqPad,
                    lowestFinite(rw, loc, cast<FloatType>(elt)));
  Value sum = padTo(op.getSum(), 2, tqPad, zero);
  return OnlineAttentionOp::create(
      rw, loc, TypeRange{acc.getType(), max.getType(), sum.getType()},
      paddedQueries, paddedKeys, padTo(op.getValue(), 1, tkPad, zero),
      keyLengths, /*query_offset=*/Value(), /*key_offset=*/Value(), acc, max,
      sum, op.getFactorsAttr(), op.getCausalAttr());
}

/// Replaces one key-tile op (one batch row `b`, head `h`, tile-q x tile-k)
/// by the tile algorithm on the packed operands.
void Lowering::emitTile(OnlineAttentionOp tileOp, Value b, Value h,
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
        slice(keys[l],
              {b, h, kt, rw.getIndexAttr(0), rw.getIndexAttr(0)},
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
  rw.replaceOp(tileOp,
               ValueRange{expand(r[0], tileOp.getAcc().getType(), {{0, 1}, {2}}),
                          expand(r[1], tileOp.getMax().getType(), {{0, 1, 2}}),
                          expand(r[2], tileOp.getSum().getType(), {{0, 1, 2}})});
}

/// The key loop of one query tile (starting at row `i0`) visits only tiles
/// that hold a visible key for some row, in two loops: tiles below the
/// diagonal and inside the key length need no mask, the rest do. Both
/// bounds are exact: a skipped tile would leave the state unchanged.
void Lowering::splitKeyLoop(scf::ForOp keyLoop, Value b, Value h, Value i0) {
  OnlineAttentionOp tileOp;
  keyLoop.walk([&](OnlineAttentionOp o) { tileOp = o; });
  rw.setInsertionPoint(keyLoop);
  Value keyLength = this->keyLength(b);
  if (!keyLength)
    keyLength = index(tk);
  Value keyEnd = keyLength;
  if (op.getCausal())
    keyEnd = arith::MinSIOp::create(
        rw, loc, keyEnd, arith::AddIOp::create(rw, loc, i0, index(tileQ)));
  Value numTiles = arith::CeilDivSIOp::create(rw, loc, keyEnd, index(tileK));
  Value unmaskedEnd = arith::DivSIOp::create(rw, loc, keyLength, index(tileK));
  if (op.getCausal())
    unmaskedEnd = arith::MinSIOp::create(
        rw, loc, unmaskedEnd,
        arith::DivSIOp::create(
            rw, loc, arith::AddIOp::create(rw, loc, i0, index(1)),
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

LogicalResult Lowering::run() {
  auto accType = cast<RankedTensorType>(op.getAcc().getType());
  auto maxType = cast<RankedTensorType>(op.getMax().getType());
  for (Value v : op->getOperands())
    if (auto t = dyn_cast<RankedTensorType>(v.getType());
        t && !t.hasStaticShape())
      return op.emitOpError("lowering needs static shapes");
  if (op.getQueryOffset())
    return op.emitOpError("lowering expects an untiled op (no offsets)");
  elt = accType.getElementType();
  batch = accType.getDimSize(0);
  tq = accType.getDimSize(1);
  heads = maxType.getDimSize(1);
  headDim = accType.getDimSize(2) / heads;
  tk = op.getValue().getType().getDimSize(1);
  factors.assign(op.getFactors().begin(), op.getFactors().end());
  chooseTiles(factors, tq, tk, requestedQ, requestedK, tileQ, tileK, tqPad,
              tkPad);
  order = KeyTileOrder(factors, tileK);

  rw.setInsertionPoint(op);
  OnlineAttentionOp padded = padToWholeTiles();

  // Packed once, before the loops (packTiles).
  rw.setInsertionPoint(padded);
  for (auto [l, f] : llvm::enumerate(factors)) {
    queries.push_back(packTiles(padded.getQueries()[l], tqPad / f, {},
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
  auto queryTileOp = cast<OnlineAttentionOp>(outer->tiledOps.front());
  // The tile's batch row and head: the offsets of its slice of `max`.
  auto maxSlice = queryTileOp.getMax().getDefiningOp<tensor::ExtractSliceOp>();
  if (!maxSlice)
    return op.emitOpError("unexpected tiled form");
  SmallVector<OpFoldResult> rowOffsets = maxSlice.getMixedOffsets();
  rw.setInsertionPoint(queryTileOp);
  Value b = getValueOrCreateConstantIndexOp(rw, loc, rowOffsets[0]);
  Value h = getValueOrCreateConstantIndexOp(rw, loc, rowOffsets[1]);
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
      linalg::CopyOp::create(rw, loc, ValueRange{accRows},
                             ValueRange{tensor::EmptyOp::create(
                                 rw, loc, {tileQ, headDim}, elt)})
          .getResult(0);
  Value accTile = tensor::ExpandShapeOp::create(rw, loc, accInit.getType(),
                                                accCopy, rows);
  rw.modifyOpInPlace(keyLoop, [&] {
    keyLoop.getInitArgsMutable().slice(0, 1).assign(accTile);
  });
  splitKeyLoop(keyLoop, b, h, i0);

  auto forall = cast<scf::ForallOp>(outer->loops.front().getOperation());
  rankReduceParallelInserts(rw, forall);

  // Drop the padded query rows; what the tiled ops left behind is dead.
  rw.setInsertionPointAfter(forall);
  rw.replaceOp(op, ValueRange{unpadTo(rw, loc, forall.getResult(0), accType),
                              unpadTo(rw, loc, forall.getResult(1), maxType),
                              unpadTo(rw, loc, forall.getResult(2), maxType)});
  eraseDeadInside(rw, forall);
  return success();
}

//===----------------------------------------------------------------------===//
// hkt.online_attention_backward
//===----------------------------------------------------------------------===//

/// Lowers one backward op; every shape is static. Upstream tiling
/// (scf::tileUsingSCF through the op's TilingInterface) gives the parallel
/// loop over (batch, head); each head then runs FlashAttention-2's loop nest
/// on packed operands: key tiles outside, carrying the tile's dK^T and dV^T,
/// query tiles inside, adding into the head's dQ. No atomics: a head's tiles
/// are visited by one thread. Key tiles past the key length and query tiles
/// wholly above the diagonal (causal) are not visited.
class BackwardLowering {
public:
  BackwardLowering(OnlineAttentionBackwardOp op, RewriterBase &rw,
                   int64_t tileQ, int64_t tileK)
      : op(op), rw(rw), loc(op.getLoc()), requestedQ(tileQ),
        requestedK(tileK) {}

  LogicalResult run();

private:
  RankedTensorType type(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, elt);
  }
  Value index(int64_t v) { return arith::ConstantIndexOp::create(rw, loc, v); }
  Value pack(Value src, int64_t tileLen, ArrayRef<int64_t> radices,
             bool transposed) {
    return packHeadMajor(rw, loc, src, heads, tileLen, radices, transposed);
  }
  Value slice(Value src, ArrayRef<OpFoldResult> offsets,
              ArrayRef<int64_t> sizes, ArrayRef<int64_t> resultShape) {
    return staticSlice(rw, loc, type(resultShape), src, offsets, sizes);
  }
  Value insert(Value src, Value dest, ArrayRef<OpFoldResult> offsets,
               ArrayRef<int64_t> sizes) {
    return tensor::InsertSliceOp::create(
        rw, loc, src, dest, offsets, getAsIndexOpFoldResult(rw.getContext(), sizes),
        SmallVector<OpFoldResult>(sizes.size(), rw.getIndexAttr(1)));
  }
  Value keyLength(Value b) {
    return keyLengths ? rowKeyLength(rw, loc, keyLengths, b) : Value();
  }

  OnlineAttentionBackwardOp padToWholeTiles();
  void lowerHead(OnlineAttentionBackwardOp headOp, Value b, Value h);

  OnlineAttentionBackwardOp op;
  RewriterBase &rw;
  Location loc;
  int64_t requestedQ, requestedK;
  Type elt;
  int64_t batch = 0, tq = 0, tk = 0, heads = 0, headDim = 0;
  int64_t tileQ = 0, tileK = 0, tqPad = 0, tkPad = 0, keyTiles = 0;
  SmallVector<int64_t> factors;
  KeyTileOrder order;
  /// Packed once (packHeadMajor), per level: queries B x H x Tq_l x d and
  /// transposed B x H x 1 x d x Tq_l; keys in tile order B x H x Tk_l x d and
  /// transposed per tile B x H x tiles x d x tk_l; the destinations alike.
  SmallVector<Value> queries, queriesT, keys, keysT, dqueries, dkeysT;
  Value valueT, dout, doutT, dvalueT, lse, delta;
  Value keyLengths;
};

OnlineAttentionBackwardOp BackwardLowering::padToWholeTiles() {
  Value zero = floatConstant(rw, loc, elt, 0.0);
  auto pad = [&](Value v, unsigned dim, int64_t size) {
    return padHigh(rw, loc, v, dim, size, zero);
  };
  // Padded query rows must add nothing to any gradient: dout = 0 and delta =
  // 0 there, and lse = +inf makes their probabilities exp(S - lse) exactly 0.
  // A finite pad would not do: a padded row's coarse-level scores are real
  // (row i >= T shares its level-l query floor(i / f) with real rows), so
  // exp(S - 0) overflows on sharp attention and inf * 0 turns dV, dS and
  // every gradient downstream into NaN.
  SmallVector<Value> q, k, dq, dk;
  for (auto [l, f] : llvm::enumerate(factors)) {
    q.push_back(pad(op.getQueries()[l], 1, tqPad / f));
    k.push_back(pad(op.getKeys()[l], 1, tkPad / f));
    dq.push_back(pad(op.getDqueryInit()[l], 1, tqPad / f));
    dk.push_back(pad(op.getDkeyInit()[l], 1, tkPad / f));
  }
  keyLengths = clampedKeyLengths(rw, loc, op.getLengths(), batch, tk, tkPad);
  Value dv = pad(op.getDvalueInit(), 1, tkPad);
  return OnlineAttentionBackwardOp::create(
      rw, loc, ValueRange(dq).getTypes(), ValueRange(dk).getTypes(),
      dv.getType(), q, k, pad(op.getValue(), 1, tkPad),
      pad(op.getDout(), 1, tqPad),
      padHigh(rw, loc, op.getLse(), 2, tqPad,
              floatConstant(rw, loc, elt, std::numeric_limits<double>::infinity())),
      pad(op.getDelta(), 2, tqPad), keyLengths, /*query_offset=*/Value(),
      /*key_offset=*/Value(), dq, dk, dv, op.getFactorsAttr(),
      op.getCausalAttr());
}

/// Replaces the op of one (batch row `b`, head `h`) by the loop nest.
void BackwardLowering::lowerHead(OnlineAttentionBackwardOp headOp, Value b,
                                 Value h) {
  OpBuilder::InsertionGuard guard(rw);
  rw.setInsertionPoint(headOp);
  size_t levels = factors.size();
  OpFoldResult zero = rw.getIndexAttr(0);
  // The head's accumulators: zeros, or from the packed destinations.
  auto start = [&](Value packed, ArrayRef<OpFoldResult> offsets,
                   ArrayRef<int64_t> sizes,
                   ArrayRef<int64_t> shape) -> Value {
    if (!packed)
      return filledTensor(rw, loc, shape, elt, floatConstant(rw, loc, elt, 0.0));
    return slice(packed, offsets, sizes, shape);
  };
  SmallVector<Value> carried;
  for (auto [l, f] : llvm::enumerate(factors))
    carried.push_back(start(dqueries[l], {b, h, zero, zero},
                            {1, 1, tqPad / f, headDim}, {tqPad / f, headDim}));
  for (auto [l, f] : llvm::enumerate(factors))
    carried.push_back(start(dkeysT[l], {b, h, zero, zero, zero},
                            {1, 1, keyTiles, headDim, tileK / f},
                            {keyTiles, headDim, tileK / f}));
  carried.push_back(start(dvalueT, {b, h, zero, zero, zero},
                          {1, 1, keyTiles, headDim, tileK},
                          {keyTiles, headDim, tileK}));

  Value len = keyLength(b);
  Value keyEnd = len ? len : index(tk);
  Value numKeyTiles = arith::CeilDivSIOp::create(rw, loc, keyEnd, index(tileK));
  auto keyLoop = scf::ForOp::create(
      rw, loc, index(0), numKeyTiles, index(1), carried,
      [&](OpBuilder &, Location, Value kt, ValueRange acc) {
        Value j0 = arith::MulIOp::create(rw, loc, kt, index(tileK));
        // This key tile's dK^T and dV^T, carried over the query tiles.
        SmallVector<Value> inner(acc.take_front(levels));
        for (auto [l, f] : llvm::enumerate(factors))
          inner.push_back(slice(acc[levels + l], {kt, zero, zero},
                                {1, headDim, tileK / f}, {headDim, tileK / f}));
        inner.push_back(slice(acc[2 * levels], {kt, zero, zero},
                              {1, headDim, tileK}, {headDim, tileK}));
        // Causal: the first query tile with a row at or past j0.
        Value queryStart = index(0);
        if (op.getCausal())
          queryStart = arith::MulIOp::create(
              rw, loc,
              arith::DivUIOp::create(rw, loc, j0, index(tileQ)), index(tileQ));
        auto queryLoop = scf::ForOp::create(
            rw, loc, queryStart, index(tqPad), index(tileQ), inner,
            [&](OpBuilder &, Location, Value i0, ValueRange state) {
              OnlineAttentionBackwardTileOperands t;
              for (auto [l, f] : llvm::enumerate(factors)) {
                Value row0 = arith::DivUIOp::create(rw, loc, i0, index(f));
                Value key0 = arith::DivUIOp::create(rw, loc, j0, index(f));
                t.queries.push_back(slice(queries[l], {b, h, row0, zero},
                                          {1, 1, tileQ / f, headDim},
                                          {tileQ / f, headDim}));
                t.queriesT.push_back(slice(queriesT[l], {b, h, zero, zero, row0},
                                           {1, 1, 1, headDim, tileQ / f},
                                           {headDim, tileQ / f}));
                t.keys.push_back(slice(keys[l], {b, h, key0, zero},
                                       {1, 1, tileK / f, headDim},
                                       {tileK / f, headDim}));
                t.keysT.push_back(slice(keysT[l], {b, h, kt, zero, zero},
                                        {1, 1, 1, headDim, tileK / f},
                                        {headDim, tileK / f}));
                t.dqueries.push_back(slice(state[l], {row0, zero},
                                           {tileQ / f, headDim},
                                           {tileQ / f, headDim}));
                t.dkeysT.push_back(state[levels + l]);
              }
              t.dvalueT = state[2 * levels];
              t.valueT = slice(valueT, {b, h, kt, zero, zero},
                               {1, 1, 1, headDim, tileK}, {headDim, tileK});
              t.dout = slice(dout, {b, h, i0, zero}, {1, 1, tileQ, headDim},
                             {tileQ, headDim});
              t.doutT = slice(doutT, {b, h, zero, zero, i0},
                              {1, 1, 1, headDim, tileQ}, {headDim, tileQ});
              t.lse = slice(lse, {b, h, i0}, {1, 1, tileQ}, {tileQ});
              t.delta = slice(delta, {b, h, i0}, {1, 1, tileQ}, {tileQ});
              t.queryOffset = i0;
              t.keyOffset = j0;
              t.keyLength = len;
              t.causal = op.getCausal();
              SmallVector<Value> r = buildOnlineAttentionBackwardTile(
                  rw, loc, t, factors, order, TileMask::IfNeeded);
              SmallVector<Value> next;
              for (auto [l, f] : llvm::enumerate(factors)) {
                Value row0 = arith::DivUIOp::create(rw, loc, i0, index(f));
                next.push_back(insert(r[l], state[l], {row0, zero},
                                      {tileQ / f, headDim}));
              }
              next.append(r.begin() + levels, r.end());
              scf::YieldOp::create(rw, loc, next);
            });
        SmallVector<Value> out(queryLoop.getResults().take_front(levels));
        for (auto [l, f] : llvm::enumerate(factors))
          out.push_back(insert(queryLoop.getResult(levels + l), acc[levels + l],
                               {kt, zero, zero}, {1, headDim, tileK / f}));
        out.push_back(insert(queryLoop.getResult(2 * levels), acc[2 * levels],
                             {kt, zero, zero}, {1, headDim, tileK}));
        scf::YieldOp::create(rw, loc, out);
      });

  // Back to the op's layout: 1 x n x d per result.
  SmallVector<ReassociationIndices> rows = {{0, 1}, {2}};
  SmallVector<Value> results;
  for (unsigned l = 0; l < levels; ++l)
    results.push_back(tensor::ExpandShapeOp::create(
        rw, loc, headOp.getResult(l).getType(), keyLoop.getResult(l), rows));
  for (auto [l, f] : llvm::enumerate(factors))
    results.push_back(tensor::ExpandShapeOp::create(
        rw, loc, headOp.getResult(levels + l).getType(),
        unpackHeadTiles(rw, loc, keyLoop.getResult(levels + l),
                        order.radicesAbove(f)),
        rows));
  results.push_back(tensor::ExpandShapeOp::create(
      rw, loc, headOp.getResult(2 * levels).getType(),
      unpackHeadTiles(rw, loc, keyLoop.getResult(2 * levels), order.radices),
      rows));
  rw.replaceOp(headOp, results);
}

LogicalResult BackwardLowering::run() {
  for (Value v : op->getOperands())
    if (auto t = dyn_cast<RankedTensorType>(v.getType());
        t && !t.hasStaticShape())
      return op.emitOpError("lowering needs static shapes");
  if (op.getQueryOffset())
    return op.emitOpError("lowering expects an untiled op (no offsets)");
  auto doutType = cast<RankedTensorType>(op.getDout().getType());
  elt = doutType.getElementType();
  batch = doutType.getDimSize(0);
  tq = doutType.getDimSize(1);
  heads = cast<RankedTensorType>(op.getLse().getType()).getDimSize(1);
  headDim = doutType.getDimSize(2) / heads;
  tk = op.getValue().getType().getDimSize(1);
  factors.assign(op.getFactors().begin(), op.getFactors().end());
  // Long sequences: each key tile streams the head's query side (queries,
  // dout and their transposes, dQ: about 7 Tq d floats) through the caches
  // once, which outgrows them from T = 8192 on; 4x wider key tiles stream it
  // a quarter as often (measured on the Zen 5 VM, 2 threads: 15-20% faster
  // at T = 8192 and 16384, no better at 4096, slower at 1024).
  if (tk >= kBackwardLongSequence)
    requestedK *= kBackwardLongKeyTileFactor;
  chooseTiles(factors, tq, tk, requestedQ, requestedK, tileQ, tileK, tqPad,
              tkPad);
  keyTiles = tkPad / tileK;
  order = KeyTileOrder(factors, tileK);

  rw.setInsertionPoint(op);
  OnlineAttentionBackwardOp padded = padToWholeTiles();
  rw.setInsertionPoint(padded);
  for (auto [l, f] : llvm::enumerate(factors)) {
    Value q = padded.getQueries()[l], k = padded.getKeys()[l];
    ArrayRef<int64_t> rad = order.radicesAbove(f);
    queries.push_back(pack(q, tqPad / f, {}, /*transposed=*/false));
    queriesT.push_back(pack(q, tqPad / f, {}, /*transposed=*/true));
    keys.push_back(pack(k, tileK / f, rad, /*transposed=*/false));
    keysT.push_back(pack(k, tileK / f, rad, /*transposed=*/true));
    // Zero destinations (what the adjoint passes) are not packed: each head
    // starts from zeros of its own.
    dqueries.push_back(isZeroFill(op.getDqueryInit()[l])
                           ? Value()
                           : pack(padded.getDqueryInit()[l], tqPad / f, {},
                                  /*transposed=*/false));
    dkeysT.push_back(isZeroFill(op.getDkeyInit()[l])
                         ? Value()
                         : pack(padded.getDkeyInit()[l], tileK / f, rad,
                                /*transposed=*/true));
  }
  valueT = pack(padded.getValue(), tileK, order.radices, /*transposed=*/true);
  if (!isZeroFill(op.getDvalueInit()))
    dvalueT =
        pack(padded.getDvalueInit(), tileK, order.radices, /*transposed=*/true);
  dout = pack(padded.getDout(), tqPad, {}, /*transposed=*/false);
  doutT = pack(padded.getDout(), tqPad, {}, /*transposed=*/true);
  lse = padded.getLse();
  delta = padded.getDelta();

  // Upstream tiling: scf.forall over (batch, head).
  scf::SCFTilingOptions parallel;
  parallel.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp)
      .setTileSizes({rw.getIndexAttr(1), rw.getIndexAttr(1), rw.getIndexAttr(0),
                     rw.getIndexAttr(0)});
  FailureOr<scf::SCFTilingResult> outer = scf::tileUsingSCF(
      rw, cast<TilingInterface>(padded.getOperation()), parallel);
  if (failed(outer))
    return op.emitOpError("tiling over (batch, head) failed");
  rw.replaceOp(padded, outer->replacements);
  auto headOp = cast<OnlineAttentionBackwardOp>(outer->tiledOps.front());
  auto lseSlice = headOp.getLse().getDefiningOp<tensor::ExtractSliceOp>();
  if (!lseSlice)
    return op.emitOpError("unexpected tiled form");
  SmallVector<OpFoldResult> rowOffsets = lseSlice.getMixedOffsets();
  rw.setInsertionPoint(headOp);
  Value b = getValueOrCreateConstantIndexOp(rw, loc, rowOffsets[0]);
  Value h = getValueOrCreateConstantIndexOp(rw, loc, rowOffsets[1]);
  lowerHead(headOp, b, h);

  auto forall = cast<scf::ForallOp>(outer->loops.front().getOperation());
  rankReduceParallelInserts(rw, forall);
  rw.setInsertionPointAfter(forall);
  SmallVector<Value> results;
  for (auto [r, want] : llvm::zip(forall.getResults(), op.getResultTypes()))
    results.push_back(unpadTo(rw, loc, r, cast<RankedTensorType>(want)));
  rw.replaceOp(op, results);
  eraseDeadInside(rw, forall);
  return success();
}

struct HktCpuLowerOnlineAttentionPass
    : public mlir::hkt::impl::HktCpuLowerOnlineAttentionPassBase<
          HktCpuLowerOnlineAttentionPass> {
  using HktCpuLowerOnlineAttentionPassBase::HktCpuLowerOnlineAttentionPassBase;
  void runOnOperation() override {
    if (tileQ < 1 || tileK < 1) {
      getOperation()->emitError("tile-q and tile-k must be >= 1");
      return signalPassFailure();
    }
    // hkt.fused_attention -> hkt.online_attention and its normalisation.
    if (failed(decomposeAggregatedOps(getOperation(), [](Operation *op) {
          return isa<FusedAttentionOp>(op);
        })))
      return signalPassFailure();
    SmallVector<OnlineAttentionOp> ops;
    SmallVector<OnlineAttentionBackwardOp> backward;
    getOperation()->walk([&](Operation *op) {
      if (auto forward = dyn_cast<OnlineAttentionOp>(op))
        ops.push_back(forward);
      else if (auto b = dyn_cast<OnlineAttentionBackwardOp>(op))
        backward.push_back(b);
    });
    IRRewriter rewriter(&getContext());
    for (OnlineAttentionOp op : ops)
      if (failed(Lowering(op, rewriter, tileQ, tileK).run()))
        return signalPassFailure();
    for (OnlineAttentionBackwardOp op : backward)
      if (failed(BackwardLowering(op, rewriter, tileQ, tileK).run()))
        return signalPassFailure();
  }
};
} // namespace
