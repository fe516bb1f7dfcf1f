//===- OnlineAttentionTile.cpp - one tile of online attention ------------===//
//
// The per-tile algorithm of hkt.online_attention and its backward, which both
// their decompositions (AggregatedOpInterfaceImpl.cpp) and the CPU lowering
// build.
//
//===----------------------------------------------------------------------===//

#include "dialect/OnlineAttentionTile.h"
#include "dialect/HKTOps.h"
#include "dialect/Utils/LinalgBuilders.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace mlir::hkt;

//===----------------------------------------------------------------------===//
// Key order inside tiles
//===----------------------------------------------------------------------===//

KeyTileOrder::KeyTileOrder(ArrayRef<int64_t> factors, int64_t tileK) {
  SmallVector<int64_t> chain(factors);
  llvm::sort(chain);
  chain.erase(std::unique(chain.begin(), chain.end()), chain.end());
  bool isChain = chain.size() > 1;
  for (size_t i = 1; i < chain.size(); ++i)
    isChain &= chain[i] % chain[i - 1] == 0;
  if (!isChain)
    return;
  chainFactors = chain;
  for (size_t i = 1; i < chain.size(); ++i)
    radices.push_back(chain[i] / chain[i - 1]);
  // originalOffset[position] = key offset, from the mixed-radix digits.
  int64_t period = chain.back(), perPeriod = tileK / period;
  originalOffset.assign(tileK, 0);
  for (int64_t j = 0; j < tileK; ++j) {
    int64_t c = j / period, r = j % period, pos = 0;
    for (int64_t radix : radices) {
      pos = pos * radix + r % radix;
      r /= radix;
    }
    originalOffset[pos * perPeriod + c] = j;
  }
}

ArrayRef<int64_t> KeyTileOrder::radicesAbove(int64_t factor) const {
  if (radices.empty())
    return {};
  size_t k = 0;
  for (int64_t prod = 1; prod != factor; ++k)
    prod *= radices[k];
  return ArrayRef<int64_t>(radices).drop_front(k);
}

//===----------------------------------------------------------------------===//
// One tile
//===----------------------------------------------------------------------===//

namespace {
class TileBuilder {
public:
  TileBuilder(OpBuilder &b, Location loc, const OnlineAttentionTileOperands &t,
              ArrayRef<int64_t> factors, const KeyTileOrder &order)
      : TileBuilder(b, loc, t, factors, order,
                    cast<RankedTensorType>(t.acc.getType()).getDimSize(0),
                    cast<RankedTensorType>(t.value.getType()).getDimSize(0)) {}
  /// Scores only: `t` needs its queries and keysT.
  TileBuilder(OpBuilder &b, Location loc, const OnlineAttentionTileOperands &t,
              ArrayRef<int64_t> factors, const KeyTileOrder &order,
              int64_t tileQ, int64_t tileK)
      : b(b), loc(loc), ctx(b.getContext()), t(t), factors(factors),
        order(order), tileQ(tileQ), tileK(tileK) {
    elt = cast<RankedTensorType>(t.queries.front().getType()).getElementType();
  }

  SmallVector<Value> build(TileMask mask);
  Value scores();

private:
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  AffineMap map(unsigned dims, ArrayRef<AffineExpr> results) {
    return indexingMap(dims, results, ctx);
  }
  /// One linalg.generic writing `out`; `body` computes the yielded value
  /// from the block arguments (the inputs, then `out`).
  Value generic(ValueRange ins, Value out, ArrayRef<AffineMap> maps,
                ArrayRef<utils::IteratorType> iterators,
                function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
    return linalg::GenericOp::create(
               b, loc, out.getType(), ins, ValueRange{out}, maps, iterators,
               [&](OpBuilder &nb, Location nl, ValueRange args) {
                 linalg::YieldOp::create(nb, nl, body(nb, nl, args));
               })
        .getResult(0);
  }
  Value zeros(ArrayRef<int64_t> shape) {
    return filledTensor(b, loc, shape, elt, floatConstant(b, loc, elt, 0.0));
  }

  Value levelBlock(unsigned l, Value target);
  Value scoresInOrder();
  Value broadcastBlock(Value coarse, int64_t ratio);
  Value applyMask(Value scores);
  SmallVector<Value> update(Value scores);

  OpBuilder &b;
  Location loc;
  MLIRContext *ctx;
  const OnlineAttentionTileOperands &t;
  ArrayRef<int64_t> factors;
  const KeyTileOrder &order;
  Type elt;
  int64_t tileQ, tileK;
};

/// queries_l keysT_l accumulated into `target` ((tileQ / f) x (tileK / f)).
Value TileBuilder::levelBlock(unsigned l, Value target) {
  return linalg::MatmulOp::create(b, loc, ValueRange{t.queries[l], t.keysT[l]},
                                  ValueRange{target})
      .getResult(0);
}

/// S[i, j] = sum_l queries_l[i / f_l] . keys_l[j / f_l]: the level-l block
/// is computed once at coarse resolution and broadcast over f_l x f_l.
Value TileBuilder::scores() {
  if (!order.reordered())
    return scoresInOrder();
  // Reordered keys: coarsest to finest, each factor's block starts as the
  // next coarser block broadcast into it and accumulates its levels'
  // q k^T on top; the finest (factor 1) block is S.
  ArrayRef<int64_t> chain = order.chainFactors;
  Value block;
  for (size_t idx = chain.size(); idx-- > 0;) {
    int64_t f = chain[idx];
    block = block ? broadcastBlock(block, chain[idx + 1] / f)
                  : zeros({tileQ / f, tileK / f});
    for (unsigned l = 0; l < factors.size(); ++l)
      if (factors[l] == f)
        block = levelBlock(l, block);
  }
  return block;
}

/// The block of the next finer factor, from `coarse` (R x n): row i gets
/// coarse row i / ratio in each of its `ratio` column blocks y * n .. y * n
/// + n (see KeyTileOrder). One contiguous row segment at a time: a 4-D
/// broadcast generic, or a 2-D one on an expanded row, sends MLIR 22's
/// vector patterns into an endless loop.
Value TileBuilder::broadcastBlock(Value coarse, int64_t ratio) {
  auto coarseType = cast<RankedTensorType>(coarse.getType());
  int64_t rows = coarseType.getDimSize(0) * ratio,
          n = coarseType.getDimSize(1);
  Value fine = tensor::EmptyOp::create(b, loc, {rows, n * ratio}, elt);
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(n)},
                            strides = {b.getIndexAttr(1), b.getIndexAttr(1)};
  auto segmentType = RankedTensorType::get({n}, elt);
  auto rowLoop = scf::ForOp::create(
      b, loc, index(0), index(rows), index(1), ValueRange{fine},
      [&](OpBuilder &, Location, Value i, ValueRange rowIter) {
        Value a = arith::DivUIOp::create(b, loc, i, index(ratio));
        Value segment = tensor::ExtractSliceOp::create(
            b, loc, segmentType, coarse,
            SmallVector<OpFoldResult>{a, b.getIndexAttr(0)}, sizes, strides);
        auto colLoop = scf::ForOp::create(
            b, loc, index(0), index(n * ratio), index(n), rowIter,
            [&](OpBuilder &, Location, Value col, ValueRange iter) {
              SmallVector<OpFoldResult> offsets = {i, col};
              Value part = tensor::ExtractSliceOp::create(
                  b, loc, segmentType, iter[0], offsets, sizes, strides);
              Value copied = linalg::CopyOp::create(
                                 b, loc, ValueRange{segment}, ValueRange{part})
                                 .getResult(0);
              scf::YieldOp::create(
                  b, loc,
                  ValueRange{tensor::InsertSliceOp::create(
                      b, loc, copied, iter[0], offsets, sizes, strides)});
            });
        scf::YieldOp::create(b, loc, colLoop.getResults());
      });
  return rowLoop.getResult(0);
}

/// Keys in order: each level's block is added to the (tileQ/f, f, tileK/f,
/// f) view of the scores.
Value TileBuilder::scoresInOrder() {
  Value scores = levelBlock(0, zeros({tileQ, tileK}));
  for (unsigned l = 1; l < factors.size(); ++l) {
    int64_t f = factors[l];
    Value block = levelBlock(l, zeros({tileQ / f, tileK / f}));
    SmallVector<ReassociationIndices> split = {{0, 1}, {2, 3}};
    Value blocks = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({tileQ / f, f, tileK / f, f}, elt),
        scores, split);
    AffineExpr a, x, c, y;
    bindDims(ctx, a, x, c, y);
    Value added = generic(
        block, blocks, {map(4, {a, c}), map(4, {a, x, c, y})},
        {kPar, kPar, kPar, kPar},
        [](OpBuilder &nb, Location nl, ValueRange args) -> Value {
          return arith::AddFOp::create(nb, nl, args[1], args[0]);
        });
    scores = tensor::CollapseShapeOp::create(b, loc, added, split);
  }
  return scores;
}

/// -inf where SPEC 5 masks the key (buildKeyMaskPredicate).
Value TileBuilder::applyMask(Value scores) {
  AffineExpr i, j;
  bindDims(ctx, i, j);
  Value negInf = negativeInfinity(b, loc, cast<FloatType>(elt));
  SmallVector<Value> ins;
  SmallVector<AffineMap> maps;
  if (order.reordered()) {
    // Reordered keys: position j holds the key at keyOffset + table[j].
    auto tableType = RankedTensorType::get({tileK}, b.getIndexType());
    ins.push_back(arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(
            tableType, llvm::map_to_vector(order.originalOffset, [&](int64_t v) {
              return Attribute(b.getIndexAttr(v));
            }))));
    maps.push_back(map(2, {j}));
  }
  maps.push_back(map(2, {i, j}));
  bool reordered = order.reordered();
  return linalg::GenericOp::create(
             b, loc, scores.getType(), ins, ValueRange{scores}, maps,
             {kPar, kPar},
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               Value row = arith::AddIOp::create(
                   nb, nl, t.queryOffset, linalg::IndexOp::create(nb, nl, 0));
               Value col = arith::AddIOp::create(
                   nb, nl, t.keyOffset,
                   reordered ? args[0]
                             : Value(linalg::IndexOp::create(nb, nl, 1)));
               Value drop = buildKeyMaskPredicate(nb, nl, row, col,
                                                  t.keyLength, t.causal);
               linalg::YieldOp::create(
                   nb, nl,
                   arith::SelectOp::create(nb, nl, drop, negInf, args.back())
                       .getResult());
             })
      .getResult(0);
}

/// The online-softmax update of (acc, max, sum) by the tile's scores.
SmallVector<Value> TileBuilder::update(Value scores) {
  AffineExpr i, j;
  bindDims(ctx, i, j);
  using nb_t = OpBuilder &;
  // m' = max(m, max_j S), first into a temporary: the old m is still
  // needed for the correction factor, and each carried value must end up
  // back in its own buffer (bufferization in place).
  Value maxCopy =
      linalg::CopyOp::create(
          b, loc, ValueRange{t.max},
          ValueRange{tensor::EmptyOp::create(b, loc, {tileQ}, elt)})
          .getResult(0);
  Value maxTmp = generic(scores, maxCopy, {map(2, {i, j}), map(2, {i})},
                         {kPar, kRed},
                         [](nb_t nb, Location nl, ValueRange a) -> Value {
                           return arith::MaximumFOp::create(nb, nl, a[0], a[1]);
                         });
  // P = exp(S - m')
  Value probs = generic(maxTmp, scores, {map(2, {i}), map(2, {i, j})},
                        {kPar, kPar},
                        [](nb_t nb, Location nl, ValueRange a) -> Value {
                          return math::ExpOp::create(
                              nb, nl, arith::SubFOp::create(nb, nl, a[1], a[0]));
                        });
  // corr = exp(m - m'); sum' = sum * corr + sum_j P
  Value corr = generic({t.max, maxTmp},
                       tensor::EmptyOp::create(b, loc, {tileQ}, elt),
                       {map(1, {i}), map(1, {i}), map(1, {i})}, {kPar},
                       [](nb_t nb, Location nl, ValueRange a) -> Value {
                         return math::ExpOp::create(
                             nb, nl, arith::SubFOp::create(nb, nl, a[0], a[1]));
                       });
  auto mul = [](nb_t nb, Location nl, ValueRange a) -> Value {
    return arith::MulFOp::create(nb, nl, a[1], a[0]);
  };
  Value scaledSum =
      generic(corr, t.sum, {map(1, {i}), map(1, {i})}, {kPar}, mul);
  Value newSum = generic(probs, scaledSum, {map(2, {i, j}), map(2, {i})},
                         {kPar, kRed},
                         [](nb_t nb, Location nl, ValueRange a) -> Value {
                           return arith::AddFOp::create(nb, nl, a[1], a[0]);
                         });
  // acc' = acc * corr + P V
  Value scaledAcc =
      generic(corr, t.acc, {map(2, {i}), map(2, {i, j})}, {kPar, kPar}, mul);
  Value newAcc = linalg::MatmulOp::create(b, loc, ValueRange{probs, t.value},
                                          ValueRange{scaledAcc})
                     .getResult(0);
  Value newMax = linalg::CopyOp::create(b, loc, ValueRange{maxTmp},
                                        ValueRange{t.max})
                     .getResult(0);
  return {newAcc, newMax, newSum};
}

SmallVector<Value> TileBuilder::build(TileMask mask) {
  if (mask == TileMask::IfNeeded && !t.causal && !t.keyLength)
    mask = TileMask::None;
  if (mask != TileMask::IfNeeded) {
    Value s = scores();
    if (mask == TileMask::Always)
      s = applyMask(s);
    return update(s);
  }
  // live: some key of the tile is visible to some row; masked: some key is
  // hidden from some row.
  auto slt = [&](Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, y)
        .getResult();
  };
  auto both = [&](Value x, Value y) -> Value {
    return x ? arith::AndIOp::create(b, loc, x, y).getResult() : y;
  };
  auto either = [&](Value x, Value y) -> Value {
    return x ? arith::OrIOp::create(b, loc, x, y).getResult() : y;
  };
  Value keyEnd = arith::AddIOp::create(b, loc, t.keyOffset, index(tileK));
  Value live, masked;
  if (t.keyLength) {
    live = both(live, slt(t.keyOffset, t.keyLength));
    masked = either(masked, slt(t.keyLength, keyEnd));
  }
  if (t.causal) {
    live = both(live,
                slt(t.keyOffset,
                    arith::AddIOp::create(b, loc, t.queryOffset, index(tileQ))));
    masked = either(
        masked,
        slt(arith::AddIOp::create(b, loc, t.queryOffset, index(1)), keyEnd));
  }
  auto ifLive = scf::IfOp::create(
      b, loc, live,
      [&](OpBuilder &, Location) {
        Value s = scores();
        auto ifMasked = scf::IfOp::create(
            b, loc, masked,
            [&](OpBuilder &, Location) {
              scf::YieldOp::create(b, loc, applyMask(s));
            },
            [&](OpBuilder &, Location) { scf::YieldOp::create(b, loc, s); });
        scf::YieldOp::create(b, loc, update(ifMasked.getResult(0)));
      },
      [&](OpBuilder &, Location) {
        scf::YieldOp::create(b, loc, ValueRange{t.acc, t.max, t.sum});
      });
  return SmallVector<Value>(ifLive.getResults());
}
} // namespace

SmallVector<Value> mlir::hkt::buildOnlineAttentionTile(
    OpBuilder &b, Location loc, const OnlineAttentionTileOperands &tile,
    ArrayRef<int64_t> factors, const KeyTileOrder &order, TileMask mask) {
  return TileBuilder(b, loc, tile, factors, order).build(mask);
}

Value mlir::hkt::buildTileScores(OpBuilder &b, Location loc,
                                 const OnlineAttentionTileOperands &tile,
                                 ArrayRef<int64_t> factors,
                                 const KeyTileOrder &order, int64_t tileQ,
                                 int64_t tileK) {
  return TileBuilder(b, loc, tile, factors, order, tileQ, tileK).scores();
}

//===----------------------------------------------------------------------===//
// The backward: one tile
//===----------------------------------------------------------------------===//

namespace {
class BackwardTileBuilder {
public:
  BackwardTileBuilder(OpBuilder &b, Location loc,
                      const OnlineAttentionBackwardTileOperands &t,
                      ArrayRef<int64_t> factors, const KeyTileOrder &order)
      : b(b), loc(loc), ctx(b.getContext()), t(t), factors(factors),
        order(order) {
    auto doutType = cast<RankedTensorType>(t.dout.getType());
    elt = doutType.getElementType();
    tileQ = doutType.getDimSize(0);
    tileK = cast<RankedTensorType>(t.valueT.getType()).getDimSize(1);
  }

  SmallVector<Value> build(TileMask mask);

private:
  AffineMap map(unsigned dims, ArrayRef<AffineExpr> results) {
    return indexingMap(dims, results, ctx);
  }
  Value matmul(Value a, Value bm, Value acc) {
    return linalg::MatmulOp::create(b, loc, ValueRange{a, bm}, ValueRange{acc})
        .getResult(0);
  }
  Value zeros(ArrayRef<int64_t> shape) {
    return filledTensor(b, loc, shape, elt, floatConstant(b, loc, elt, 0.0));
  }
  Value probabilities(Value scores, bool masked);
  Value blockSums(Value fine, int64_t ratio);
  Value stridedSlice(Value src, ArrayRef<OpFoldResult> offsets,
                     ArrayRef<int64_t> sizes, ArrayRef<int64_t> strides);
  Value sumOf(ArrayRef<Value> parts);

  OpBuilder &b;
  Location loc;
  MLIRContext *ctx;
  const OnlineAttentionBackwardTileOperands &t;
  ArrayRef<int64_t> factors;
  const KeyTileOrder &order;
  Type elt;
  int64_t tileQ, tileK;
};

/// P = exp(S - lse), 0 where SPEC 5 masks the key (after the exp: a row
/// whose keys are all masked has lse = -inf).
Value BackwardTileBuilder::probabilities(Value scores, bool masked) {
  AffineExpr i, j;
  bindDims(ctx, i, j);
  SmallVector<Value> ins = {t.lse};
  SmallVector<AffineMap> maps = {map(2, {i})};
  bool reordered = masked && order.reordered();
  if (reordered) {
    // Position j holds the key at keyOffset + table[j].
    auto tableType = RankedTensorType::get({tileK}, b.getIndexType());
    ins.push_back(arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(
            tableType, llvm::map_to_vector(order.originalOffset, [&](int64_t v) {
              return Attribute(b.getIndexAttr(v));
            }))));
    maps.push_back(map(2, {j}));
  }
  maps.push_back(map(2, {i, j}));
  Value zero = floatConstant(b, loc, elt, 0.0);
  return linalg::GenericOp::create(
             b, loc, scores.getType(), ins, ValueRange{scores}, maps,
             {kPar, kPar},
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               Value p = math::ExpOp::create(
                   nb, nl, arith::SubFOp::create(nb, nl, args.back(), args[0]));
               if (masked) {
                 Value row = arith::AddIOp::create(
                     nb, nl, t.queryOffset, linalg::IndexOp::create(nb, nl, 0));
                 Value col = arith::AddIOp::create(
                     nb, nl, t.keyOffset,
                     reordered ? args[1]
                               : Value(linalg::IndexOp::create(nb, nl, 1)));
                 Value drop = buildKeyMaskPredicate(nb, nl, row, col,
                                                    t.keyLength, t.causal);
                 p = arith::SelectOp::create(nb, nl, drop, zero, p);
               }
               linalg::YieldOp::create(nb, nl, p);
             })
      .getResult(0);
}

Value BackwardTileBuilder::stridedSlice(Value src,
                                        ArrayRef<OpFoldResult> offsets,
                                        ArrayRef<int64_t> sizes,
                                        ArrayRef<int64_t> strides) {
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get(sizes, elt), src, offsets,
      getAsIndexOpFoldResult(ctx, sizes), getAsIndexOpFoldResult(ctx, strides));
}

/// The elementwise sum of equally shaped matrices (one 2-D generic).
Value BackwardTileBuilder::sumOf(ArrayRef<Value> parts) {
  if (parts.size() == 1)
    return parts.front();
  auto type = cast<RankedTensorType>(parts.front().getType());
  SmallVector<AffineMap> maps(parts.size() + 1,
                              b.getMultiDimIdentityMap(2));
  return linalg::GenericOp::create(
             b, loc, type, parts, ValueRange{emptyOf(b, loc, type)}, maps,
             {kPar, kPar},
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               Value s = args[0];
               for (Value a : args.drop_front().drop_back())
                 s = arith::AddFOp::create(nb, nl, s, a);
               linalg::YieldOp::create(nb, nl, s);
             })
      .getResult(0);
}

/// The block sums of `fine` over ratio x ratio blocks: what the forward's
/// broadcast of a coarse block spread over the fine one, summed back. Keys
/// reordered (KeyTileOrder): the `ratio` copies of a coarse column are the
/// contiguous column blocks, so both sums read whole rows (vectorisable).
/// Keys in order: one reduction over the 4-D view.
Value BackwardTileBuilder::blockSums(Value fine, int64_t ratio) {
  auto type = cast<RankedTensorType>(fine.getType());
  int64_t rows = type.getDimSize(0), cols = type.getDimSize(1);
  int64_t coarseRows = rows / ratio, coarseCols = cols / ratio;
  if (order.reordered()) {
    SmallVector<Value> colParts;
    for (int64_t y = 0; y < ratio; ++y)
      colParts.push_back(stridedSlice(
          fine, {b.getIndexAttr(0), b.getIndexAttr(y * coarseCols)},
          {rows, coarseCols}, {1, 1}));
    Value colSums = sumOf(colParts);
    SmallVector<Value> rowParts;
    for (int64_t x = 0; x < ratio; ++x)
      rowParts.push_back(stridedSlice(colSums,
                                      {b.getIndexAttr(x), b.getIndexAttr(0)},
                                      {coarseRows, coarseCols}, {ratio, 1}));
    return sumOf(rowParts);
  }
  Value blocks = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get({coarseRows, ratio, coarseCols, ratio}, elt),
      fine, SmallVector<ReassociationIndices>{{0, 1}, {2, 3}});
  AffineExpr a, x, c, y;
  bindDims(ctx, a, x, c, y);
  return linalg::GenericOp::create(
             b, loc, RankedTensorType::get({coarseRows, coarseCols}, elt),
             ValueRange{blocks}, ValueRange{zeros({coarseRows, coarseCols})},
             {map(4, {a, x, c, y}), map(4, {a, c})},
             {kPar, kRed, kPar, kRed},
             [](OpBuilder &nb, Location nl, ValueRange args) {
               linalg::YieldOp::create(
                   nb, nl,
                   arith::AddFOp::create(nb, nl, args[1], args[0]).getResult());
             })
      .getResult(0);
}

SmallVector<Value> BackwardTileBuilder::build(TileMask mask) {
  if (mask == TileMask::IfNeeded && !t.causal && !t.keyLength)
    mask = TileMask::None;
  OnlineAttentionTileOperands forward;
  forward.queries = t.queries;
  forward.keysT = t.keysT;
  Value scores = buildTileScores(b, loc, forward, factors, order, tileQ, tileK);
  Value probs;
  if (mask != TileMask::IfNeeded) {
    probs = probabilities(scores, mask == TileMask::Always);
  } else {
    // Masked: some key of the tile is hidden from some row.
    Value index = arith::ConstantIndexOp::create(b, loc, tileK);
    Value keyEnd = arith::AddIOp::create(b, loc, t.keyOffset, index);
    Value masked;
    auto slt = [&](Value x, Value y) -> Value {
      return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, y);
    };
    if (t.keyLength)
      masked = slt(t.keyLength, keyEnd);
    if (t.causal) {
      Value one = arith::ConstantIndexOp::create(b, loc, 1);
      Value crosses =
          slt(arith::AddIOp::create(b, loc, t.queryOffset, one), keyEnd);
      masked = masked ? arith::OrIOp::create(b, loc, masked, crosses).getResult()
                      : crosses;
    }
    auto ifMasked = scf::IfOp::create(
        b, loc, masked,
        [&](OpBuilder &, Location) {
          scf::YieldOp::create(b, loc, probabilities(scores, true));
        },
        [&](OpBuilder &, Location) {
          scf::YieldOp::create(b, loc, probabilities(scores, false));
        });
    probs = ifMasked.getResult(0);
  }
  AffineExpr i, j;
  bindDims(ctx, i, j);
  // dV^T += dout^T P; dP = dout V^T; dS = P (dP - delta).
  Value dvalueT = matmul(t.doutT, probs, t.dvalueT);
  Value dprobs = matmul(t.dout, t.valueT, zeros({tileQ, tileK}));
  Value dscores =
      linalg::GenericOp::create(
          b, loc, dprobs.getType(), ValueRange{probs, t.delta},
          ValueRange{dprobs}, {map(2, {i, j}), map(2, {i}), map(2, {i, j})},
          {kPar, kPar},
          [](OpBuilder &nb, Location nl, ValueRange a) {
            Value diff = arith::SubFOp::create(nb, nl, a[2], a[1]);
            linalg::YieldOp::create(
                nb, nl, arith::MulFOp::create(nb, nl, a[0], diff).getResult());
          })
          .getResult(0);

  // Block sums per distinct factor: from the next finer one along the
  // chain (keys reordered), else from dS itself.
  DenseMap<int64_t, Value> sums;
  sums[1] = dscores;
  SmallVector<int64_t> distinct(factors);
  llvm::sort(distinct);
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  for (int64_t f : distinct) {
    if (sums.count(f))
      continue;
    if (order.reordered()) {
      ArrayRef<int64_t> chain = order.chainFactors;
      auto it = llvm::find(chain, f);
      int64_t finer = *std::prev(it);
      sums[f] = blockSums(sums.lookup(finer), f / finer);
    } else {
      sums[f] = blockSums(dscores, f);
    }
  }
  SmallVector<Value> results;
  for (auto [l, f] : llvm::enumerate(factors))
    results.push_back(matmul(sums.lookup(f), t.keys[l], t.dqueries[l]));
  for (auto [l, f] : llvm::enumerate(factors))
    results.push_back(matmul(t.queriesT[l], sums.lookup(f), t.dkeysT[l]));
  results.push_back(dvalueT);
  return results;
}
} // namespace

SmallVector<Value> mlir::hkt::buildOnlineAttentionBackwardTile(
    OpBuilder &b, Location loc, const OnlineAttentionBackwardTileOperands &tile,
    ArrayRef<int64_t> factors, const KeyTileOrder &order, TileMask mask) {
  return BackwardTileBuilder(b, loc, tile, factors, order).build(mask);
}
