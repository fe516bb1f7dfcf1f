//===- LowerAttentionBackward.cpp - The backward attention on the CPU ----===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// hkt.online_attention_backward -> scf.forall (batch, head) over
// FlashAttention-2's loop nest of the backward tile builder
// (dialect/OnlineAttentionTile.h): key tiles outside, query tiles inside.
//
//===----------------------------------------------------------------------===//

#include "dialect/HKTOps.h"
#include "dialect/OnlineAttentionTile.h"
#include "dialect/Utils/LinalgBuilders.h"
#include "passes/PipelineOptions.h"
#include "passes/codegen/cpu/AttentionLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"

#include <limits>

using namespace mlir;
using namespace mlir::hkt;
using namespace mlir::hkt::cpu;

namespace {

/// Lowers one backward op; every shape is static. Upstream tiling
/// (scf::tileUsingSCF through the op's TilingInterface) gives the parallel
/// loop over (batch, head); each head then runs FlashAttention-2's loop nest
/// on packed operands: key tiles outside, carrying the tile's dK^T and dV^T,
/// query tiles inside, adding into the head's dQ. No atomics: a head's tiles
/// are visited by one thread. Key tiles past the key length and query tiles
/// wholly above the diagonal (causal) are not visited.
class BackwardLowering : public AttentionLowering {
public:
  BackwardLowering(OnlineAttentionBackwardOp op, RewriterBase &rw,
                   int64_t tileQ, int64_t tileK)
      : AttentionLowering(op, rw, tileQ, tileK), op(op) {}

  LogicalResult run();

private:
  Value insert(Value src, Value dest, ArrayRef<OpFoldResult> offsets,
               ArrayRef<int64_t> sizes) {
    return tensor::InsertSliceOp::create(
        rw, loc, src, dest, offsets,
        getAsIndexOpFoldResult(rw.getContext(), sizes),
        SmallVector<OpFoldResult>(sizes.size(), rw.getIndexAttr(1)));
  }
  Value keyLength(Value b) {
    return keyLengths ? rowKeyLength(rw, loc, keyLengths, b) : Value();
  }

  OnlineAttentionBackwardOp padToWholeTiles();
  /// Packs the padded op's operands and destinations (packHeadMajor).
  void packOperands(OnlineAttentionBackwardOp padded);
  OnlineAttentionBackwardTileOperands tileOperands(Value b, Value h, Value kt,
                                                   Value i0, Value j0,
                                                   ValueRange state, Value len);
  void lowerHead(OnlineAttentionBackwardOp headOp, Value b, Value h);

  /// A static slice of `src` at mixed sizes (some dynamic).
  Value sliceMixed(Value src, ArrayRef<OpFoldResult> offsets,
                   ArrayRef<OpFoldResult> sizes, RankedTensorType type) {
    return tensor::ExtractSliceOp::create(
        rw, loc, type, src, offsets, sizes,
        SmallVector<OpFoldResult>(sizes.size(), rw.getIndexAttr(1)));
  }

  OnlineAttentionBackwardOp op;
  /// The number of key tiles (static, or keyTilesValue).
  int64_t keyTiles = 0;
  Value keyTilesValue;
  /// Packed once (packHeadMajor), per level: queries B x H x Tq_l x d and
  /// transposed B x H x 1 x d x Tq_l; keys in tile order B x H x Tk_l x d and
  /// transposed per tile B x H x tiles x d x tk_l; the destinations alike.
  SmallVector<Value> queries, queriesT, keys, keysT, dqueries, dkeysT;
  Value valueT, dout, doutT, dvalueT, lse, delta;
};

OnlineAttentionBackwardOp BackwardLowering::padToWholeTiles() {
  Value zero = floatConstant(rw, loc, elt, 0.0);
  auto pad = [&](Value v, unsigned dim, OpFoldResult size) {
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
    q.push_back(pad(op.getQueries()[l], 1, paddedQueries(f)));
    k.push_back(pad(op.getKeys()[l], 1, paddedKeys(f)));
    dq.push_back(pad(op.getDqueryInit()[l], 1, paddedQueries(f)));
    dk.push_back(pad(op.getDkeyInit()[l], 1, paddedKeys(f)));
  }
  keyLengths =
      tkValue ? clampedKeyLengths(rw, loc, op.getLengths(), batch, tkValue)
              : clampedKeyLengths(rw, loc, op.getLengths(), batch, tk, tkPad);
  Value dv = pad(op.getDvalueInit(), 1, paddedKeys(1));
  return OnlineAttentionBackwardOp::create(
      rw, loc, ValueRange(dq).getTypes(), ValueRange(dk).getTypes(),
      dv.getType(), q, k, pad(op.getValue(), 1, paddedKeys(1)),
      pad(op.getDout(), 1, paddedQueries(1)),
      padHigh(
          rw, loc, op.getLse(), 2, paddedQueries(1),
          floatConstant(rw, loc, elt, std::numeric_limits<double>::infinity())),
      pad(op.getDelta(), 2, paddedQueries(1)), keyLengths,
      /*query_offset=*/Value(),
      /*key_offset=*/Value(), dq, dk, dv, op.getFactorsAttr(),
      op.getCausalAttr());
}

void BackwardLowering::packOperands(OnlineAttentionBackwardOp padded) {
  rw.setInsertionPoint(padded);
  for (auto [l, f] : llvm::enumerate(factors)) {
    Value q = padded.getQueries()[l], k = padded.getKeys()[l];
    ArrayRef<int64_t> rad = order.radicesAbove(f);
    queries.push_back(pack(q, wholeQueries(f), {}, /*transposed=*/false));
    queriesT.push_back(pack(q, wholeQueries(f), {}, /*transposed=*/true));
    keys.push_back(pack(k, tileK / f, rad, /*transposed=*/false));
    keysT.push_back(pack(k, tileK / f, rad, /*transposed=*/true));
    // Zero destinations (what the adjoint passes) are not packed: each head
    // starts from zeros of its own.
    dqueries.push_back(isZeroFill(op.getDqueryInit()[l])
                           ? Value()
                           : pack(padded.getDqueryInit()[l], wholeQueries(f),
                                  {},
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
  dout = pack(padded.getDout(), wholeQueries(1), {}, /*transposed=*/false);
  doutT = pack(padded.getDout(), wholeQueries(1), {}, /*transposed=*/true);
  lse = padded.getLse();
  delta = padded.getDelta();
}

/// The operands of the tile (query tile at row `i0`, key tile `kt` at key
/// `j0`) of head (`b`, `h`): slices of the packed operands, and of `state`,
/// the head's dQ and the key tile's dK^T, dV^T carried by the loops.
OnlineAttentionBackwardTileOperands
BackwardLowering::tileOperands(Value b, Value h, Value kt, Value i0, Value j0,
                               ValueRange state, Value len) {
  size_t levels = factors.size();
  OpFoldResult zero = rw.getIndexAttr(0);
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
                           {1, 1, tileK / f, headDim}, {tileK / f, headDim}));
    t.keysT.push_back(slice(keysT[l], {b, h, kt, zero, zero},
                            {1, 1, 1, headDim, tileK / f},
                            {headDim, tileK / f}));
    t.dqueries.push_back(slice(state[l], {row0, zero}, {tileQ / f, headDim},
                               {tileQ / f, headDim}));
    t.dkeysT.push_back(state[levels + l]);
  }
  t.dvalueT = state[2 * levels];
  t.valueT = slice(valueT, {b, h, kt, zero, zero}, {1, 1, 1, headDim, tileK},
                   {headDim, tileK});
  t.dout =
      slice(dout, {b, h, i0, zero}, {1, 1, tileQ, headDim}, {tileQ, headDim});
  t.doutT = slice(doutT, {b, h, zero, zero, i0}, {1, 1, 1, headDim, tileQ},
                  {headDim, tileQ});
  t.lse = slice(lse, {b, h, i0}, {1, 1, tileQ}, {tileQ});
  t.delta = slice(delta, {b, h, i0}, {1, 1, tileQ}, {tileQ});
  t.queryOffset = i0;
  t.keyOffset = j0;
  t.keyLength = len;
  t.causal = op.getCausal();
  return t;
}

/// Replaces the op of one (batch row `b`, head `h`) by the loop nest.
void BackwardLowering::lowerHead(OnlineAttentionBackwardOp headOp, Value b,
                                 Value h) {
  OpBuilder::InsertionGuard guard(rw);
  rw.setInsertionPoint(headOp);
  size_t levels = factors.size();
  OpFoldResult zero = rw.getIndexAttr(0);
  // The head's accumulators: zeros, or from the packed destinations.
  // (Sizes mixed: the sequences may be dynamic.)
  auto start = [&](Value packed, ArrayRef<OpFoldResult> offsets,
                   ArrayRef<OpFoldResult> sizes) -> Value {
    ArrayRef<OpFoldResult> kept = sizes.drop_front(2);
    SmallVector<int64_t> shape = llvm::map_to_vector(kept, [](OpFoldResult s) {
      return getConstantIntValue(s).value_or(ShapedType::kDynamic);
    });
    if (!packed)
      return linalg::FillOp::create(
                 rw, loc, floatConstant(rw, loc, elt, 0.0),
                 tensor::EmptyOp::create(rw, loc, kept, elt).getResult())
          .getResult(0);
    return sliceMixed(packed, offsets, sizes, type(shape));
  };
  OpFoldResult one = rw.getIndexAttr(1), d = rw.getIndexAttr(headDim);
  OpFoldResult tiles =
      keyTilesValue ? OpFoldResult(keyTilesValue) : rw.getIndexAttr(keyTiles);
  SmallVector<Value> carried;
  for (auto [l, f] : llvm::enumerate(factors))
    carried.push_back(start(dqueries[l], {b, h, zero, zero},
                            {one, one, paddedQueries(f), d}));
  for (auto [l, f] : llvm::enumerate(factors))
    carried.push_back(start(dkeysT[l], {b, h, zero, zero, zero},
                            {one, one, tiles, d, rw.getIndexAttr(tileK / f)}));
  carried.push_back(start(dvalueT, {b, h, zero, zero, zero},
                          {one, one, tiles, d, rw.getIndexAttr(tileK)}));

  Value len = keyLength(b);
  Value keyEnd = len ? len : tkValue ? tkValue : index(tk);
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
              rw, loc, arith::DivUIOp::create(rw, loc, j0, index(tileQ)),
              index(tileQ));
        auto queryLoop = scf::ForOp::create(
            rw, loc, queryStart, tqPadValue ? tqPadValue : index(tqPad),
            index(tileQ), inner,
            [&](OpBuilder &, Location, Value i0, ValueRange state) {
              OnlineAttentionBackwardTileOperands t =
                  tileOperands(b, h, kt, i0, j0, state, len);
              SmallVector<Value> r = buildOnlineAttentionBackwardTile(
                  rw, loc, t, factors, order, TileMask::IfNeeded);
              SmallVector<Value> next;
              for (auto [l, f] : llvm::enumerate(factors)) {
                Value row0 = arith::DivUIOp::create(rw, loc, i0, index(f));
                next.push_back(
                    insert(r[l], state[l], {row0, zero}, {tileQ / f, headDim}));
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

  // Back to the op's layout: 1 x n x d per result (n may be dynamic).
  SmallVector<ReassociationIndices> rows = {{0, 1}, {2}};
  auto expand = [&](Value v, Type t) -> Value {
    return tensor::ExpandShapeOp::create(
        rw, loc, t, v, rows,
        SmallVector<OpFoldResult>{one, tensor::getMixedSize(rw, loc, v, 0), d});
  };
  SmallVector<Value> results;
  for (unsigned l = 0; l < levels; ++l)
    results.push_back(
        expand(keyLoop.getResult(l), headOp.getResult(l).getType()));
  for (auto [l, f] : llvm::enumerate(factors))
    results.push_back(
        expand(unpackHeadTiles(rw, loc, keyLoop.getResult(levels + l),
                               order.radicesAbove(f)),
               headOp.getResult(levels + l).getType()));
  results.push_back(expand(
      unpackHeadTiles(rw, loc, keyLoop.getResult(2 * levels), order.radices),
      headOp.getResult(2 * levels).getType()));
  rw.replaceOp(headOp, results);
}

LogicalResult BackwardLowering::run() {
  if (failed(checkLowerable(op.getQueryOffset(), /*dynamicSequences=*/true)))
    return failure();
  setShapes(cast<RankedTensorType>(op.getDout().getType()),
            cast<RankedTensorType>(op.getLse().getType()),
            op.getValue().getType().getDimSize(1), op.getFactors());
  setSequenceSources(op.getDout(), 1, op.getValue(), 1);
  llvm::append_range(resultInits, op.getDqueryInit());
  llvm::append_range(resultInits, op.getDkeyInit());
  resultInits.push_back(op.getDvalueInit());
  // Long sequences: each key tile streams the head's query side (queries,
  // dout and their transposes, dQ: about 7 Tq d floats) through the caches
  // once, which outgrows them from T = 8192 on; 4x wider key tiles stream it
  // a quarter as often (measured on the Zen 5 VM, 2 threads: 15-20% faster
  // at T = 8192 and 16384, no better at 4096, slower at 1024).
  if (tk >= kBackwardLongSequence)
    requestedK *= kBackwardLongKeyTileFactor;
  rw.setInsertionPoint(op);
  chooseTileSizes();
  if (tkPadValue)
    keyTilesValue = arith::DivUIOp::create(rw, loc, tkPadValue, index(tileK));
  else
    keyTiles = tkPad / tileK;

  OnlineAttentionBackwardOp padded = padToWholeTiles();
  packOperands(padded);

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
  FailureOr<std::pair<Value, Value>> bh = batchAndHead(headOp, headOp.getLse());
  if (failed(bh))
    return failure();
  lowerHead(headOp, bh->first, bh->second);

  replaceWithUnpadded(cast<scf::ForallOp>(outer->loops.front().getOperation()));
  return success();
}

} // namespace

LogicalResult
mlir::hkt::cpu::lowerOnlineAttentionBackward(OnlineAttentionBackwardOp op,
                                             RewriterBase &rw, int64_t tileQ,
                                             int64_t tileK) {
  return BackwardLowering(op, rw, tileQ, tileK).run();
}
