//===- AggregatedOpInterfaceImpl.cpp - decomposing the attention ops ------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// AggregatedOpInterface of hkt.online_attention, its backward (a static
// one-head tile: the per-tile algorithm of OnlineAttentionTile.cpp) and
// hkt.fused_attention (the scaled queries, hkt.online_attention and the
// normalisation).
//
//===----------------------------------------------------------------------===//

#include "dialect/HKTOps.h"
#include "dialect/OnlineAttentionTile.h"
#include "dialect/Utils/LinalgBuilders.h"
#include "dialect/Utils/TileGeometry.h"

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
// Decomposition
//===----------------------------------------------------------------------===//

bool OnlineAttentionOp::isDecomposableTile() {
  return isStaticOneHeadTile(getOperation(), getFactors(),
                             getAcc().getType().getDimSize(0),
                             getMax().getType().getDimSize(1),
                             getAcc().getType().getDimSize(1),
                             getValue().getType().getDimSize(1));
}

FailureOr<SmallVector<Value>>
OnlineAttentionOp::decomposeOperation(OpBuilder &b) {
  if (!isDecomposableTile())
    return failure();
  RankedTensorType accType = getAcc().getType(), maxType = getMax().getType();
  Location loc = getLoc();
  // 1 x n x d -> n x d, and 1 x 1 x n -> n.
  auto matrix = [&](Value v) -> Value {
    return tensor::CollapseShapeOp::create(
        b, loc, v, SmallVector<ReassociationIndices>{{0, 1}, {2}});
  };
  auto row = [&](Value v) -> Value {
    return tensor::CollapseShapeOp::create(
        b, loc, v, SmallVector<ReassociationIndices>{{0, 1, 2}});
  };
  OnlineAttentionTileOperands tile;
  for (Value q : getQueries())
    tile.queries.push_back(matrix(q));
  for (Value k : getKeys())
    tile.keysT.push_back(transposeMatrix(b, loc, matrix(k)));
  tile.value = matrix(getValue());
  tile.acc = matrix(getAcc());
  tile.max = row(getMax());
  tile.sum = row(getSum());
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  tile.queryOffset = getQueryOffset() ? getQueryOffset() : zero;
  tile.keyOffset = getKeyOffset() ? getKeyOffset() : zero;
  tile.keyLength = tileKeyLength(b, loc, getLengths());
  tile.causal = getCausal();
  SmallVector<Value> results = buildOnlineAttentionTile(
      b, loc, tile, getFactors(), KeyTileOrder(), TileMask::IfNeeded);
  return SmallVector<Value>{
      tensor::ExpandShapeOp::create(
          b, loc, accType, results[0],
          SmallVector<ReassociationIndices>{{0, 1}, {2}}),
      tensor::ExpandShapeOp::create(
          b, loc, maxType, results[1],
          SmallVector<ReassociationIndices>{{0, 1, 2}}),
      tensor::ExpandShapeOp::create(
          b, loc, maxType, results[2],
          SmallVector<ReassociationIndices>{{0, 1, 2}})};
}

//===----------------------------------------------------------------------===//
// The backward: decomposition
//===----------------------------------------------------------------------===//

bool OnlineAttentionBackwardOp::isDecomposableTile() {
  return isStaticOneHeadTile(getOperation(), getFactors(),
                             getDout().getType().getDimSize(0),
                             getLse().getType().getDimSize(1),
                             getDout().getType().getDimSize(1),
                             getValue().getType().getDimSize(1));
}

FailureOr<SmallVector<Value>>
OnlineAttentionBackwardOp::decomposeOperation(OpBuilder &b) {
  if (!isDecomposableTile())
    return failure();
  Location loc = getLoc();
  SmallVector<ReassociationIndices> toMatrix = {{0, 1}, {2}},
                                    toRow = {{0, 1, 2}};
  auto matrix = [&](Value v) -> Value {
    return tensor::CollapseShapeOp::create(b, loc, v, toMatrix);
  };
  auto transposed = [&](Value m) { return transposeMatrix(b, loc, m); };
  OnlineAttentionBackwardTileOperands tile;
  for (auto [q, k, dq, dk] : llvm::zip(getQueries(), getKeys(),
                                       getDqueryInit(), getDkeyInit())) {
    tile.queries.push_back(matrix(q));
    tile.queriesT.push_back(transposed(tile.queries.back()));
    tile.keys.push_back(matrix(k));
    tile.keysT.push_back(transposed(tile.keys.back()));
    tile.dqueries.push_back(matrix(dq));
    tile.dkeysT.push_back(transposed(matrix(dk)));
  }
  tile.valueT = transposed(matrix(getValue()));
  tile.dout = matrix(getDout());
  tile.doutT = transposed(tile.dout);
  tile.lse = tensor::CollapseShapeOp::create(b, loc, getLse(), toRow);
  tile.delta = tensor::CollapseShapeOp::create(b, loc, getDelta(), toRow);
  tile.dvalueT = transposed(matrix(getDvalueInit()));
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  tile.queryOffset = getQueryOffset() ? getQueryOffset() : zero;
  tile.keyOffset = getKeyOffset() ? getKeyOffset() : zero;
  tile.keyLength = tileKeyLength(b, loc, getLengths());
  tile.causal = getCausal();
  SmallVector<Value> r = buildOnlineAttentionBackwardTile(
      b, loc, tile, getFactors(), KeyTileOrder(), TileMask::IfNeeded);
  unsigned levels = getFactors().size();
  SmallVector<Value> results;
  for (unsigned k = 0; k < r.size(); ++k) {
    // dK^T and dV^T back to the keys' layout, into their destinations (in
    // place: a loop carrying them yields the buffer it was given).
    Value m = r[k];
    if (k >= levels)
      m = linalg::TransposeOp::create(b, loc, m,
                                      matrix(getDpsInits()[k]),
                                      ArrayRef<int64_t>{1, 0})
              .getResult()[0];
    results.push_back(tensor::ExpandShapeOp::create(
        b, loc, getResult(k).getType(), m, toMatrix));
  }
  return results;
}

//===----------------------------------------------------------------------===//
// hkt.fused_attention: decomposition into hkt.online_attention
//===----------------------------------------------------------------------===//

SmallVector<Value> mlir::hkt::buildScaledQueries(OpBuilder &b, Location loc,
                                                 ValueRange queries,
                                                 Value weights,
                                                 int64_t headDim) {
  MLIRContext *ctx = b.getContext();
  auto wType = cast<RankedTensorType>(weights.getType());
  Type elt = wType.getElementType();
  int64_t levels = wType.getDimSize(1),
          dim = wType.getDimSize(0) * headDim;
  Value scale = floatConstant(b, loc, elt, 1.0 / std::sqrt(double(headDim)));
  // Per level and column c: weights[c / d, l] / sqrt(d) (L x D, small), so
  // that the product over B x T x D reads its operands along rows and
  // vectorises.
  AffineExpr l, c;
  bindDims(ctx, l, c);
  Value columns = tensorGeneric(
      b, loc, RankedTensorType::get({levels, dim}, elt), ValueRange{weights},
      {indexingMap(2, {c.floorDiv(headDim), l}, ctx), indexingMap(2, {l, c}, ctx)},
      {kPar, kPar}, [&](OpBuilder &nb, Location nl, ValueRange args) {
        return arith::MulFOp::create(nb, nl, args[0], scale).getResult();
      });
  AffineExpr bb, t;
  bindDims(ctx, bb, t, c);
  SmallVector<Value> scaled;
  for (auto [level, q] : llvm::enumerate(queries)) {
    auto qType = cast<RankedTensorType>(q.getType());
    Value column = tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get({dim}, elt), columns,
        ArrayRef<OpFoldResult>{b.getIndexAttr(level), b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(dim)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
    // Shaped like q (its sequence may be dynamic).
    scaled.push_back(
        linalg::GenericOp::create(
            b, loc, qType, ValueRange{q, column},
            ValueRange{emptyLike(b, loc, q)},
            {indexingMap(3, {bb, t, c}, ctx), indexingMap(3, {c}, ctx),
             indexingMap(3, {bb, t, c}, ctx)},
            {kPar, kPar, kPar},
            [&](OpBuilder &nb, Location nl, ValueRange args) {
              linalg::YieldOp::create(
                  nb, nl,
                  arith::MulFOp::create(nb, nl, args[0], args[1]).getResult());
            })
            .getResult(0));
  }
  return scaled;
}

FailureOr<SmallVector<Value>>
FusedAttentionOp::decomposeOperation(OpBuilder &b) {
  Location loc = getLoc();
  MLIRContext *ctx = b.getContext();
  RankedTensorType outType = getInit().getType(),
                   lseType = getLseInit().getType();
  // The sequence may be dynamic; the model width and heads may not.
  if (outType.isDynamicDim(2) || lseType.isDynamicDim(1))
    return failure();
  Type elt = outType.getElementType();
  int64_t dim = outType.getDimSize(2), heads = lseType.getDimSize(1);
  int64_t headDim = dim / heads;
  SmallVector<Value> queries =
      buildScaledQueries(b, loc, getQueries(), getWeights(), headDim);

  // Destinations: acc = 0, max = lowest finite value, sum = 0.
  Value zero = floatConstant(b, loc, elt, 0.0);
  auto filledLike = [&](Value like, Value value) {
    return linalg::FillOp::create(b, loc, value, emptyLike(b, loc, like))
        .getResult(0);
  };
  Value acc = filledLike(getInit(), zero);
  Value max =
      filledLike(getLseInit(), lowestFinite(b, loc, cast<FloatType>(elt)));
  Value sum = filledLike(getLseInit(), zero);
  auto online = OnlineAttentionOp::create(
      b, loc, TypeRange{acc.getType(), max.getType(), sum.getType()}, queries,
      getKeys(), getValue(), getLengths(), /*query_offset=*/Value(),
      /*key_offset=*/Value(), acc, max, sum, getFactorsAttr(), getCausalAttr());

  // result = acc / sum; a row with every key masked has sum 0 and gives 0.
  AffineExpr bb, t, c;
  bindDims(ctx, bb, t, c);
  Value result =
      linalg::GenericOp::create(
          b, loc, outType,
          ValueRange{online.getResultAcc(), online.getResultSum()},
          ValueRange{getInit()},
          {indexingMap(3, {bb, t, c}, ctx),
           indexingMap(3, {bb, c.floorDiv(headDim), t}, ctx),
           indexingMap(3, {bb, t, c}, ctx)},
          {kPar, kPar, kPar},
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            Value zeroV = floatConstant(nb, nl, elt, 0.0);
            Value empty = arith::CmpFOp::create(
                nb, nl, arith::CmpFPredicate::OLE, args[1], zeroV);
            Value div = arith::DivFOp::create(nb, nl, args[0], args[1]);
            linalg::YieldOp::create(
                nb, nl,
                arith::SelectOp::create(nb, nl, empty, zeroV, div).getResult());
          })
          .getResult(0);
  // lse = max + log(sum) (-inf for a row with every key masked), only when
  // something reads it (the backward).
  Value lse = getLseInit();
  if (!getLse().use_empty()) {
    AffineMap id = b.getMultiDimIdentityMap(3);
    lse = linalg::GenericOp::create(
              b, loc, lseType,
              ValueRange{online.getResultMax(), online.getResultSum()},
              ValueRange{getLseInit()}, {id, id, id}, {kPar, kPar, kPar},
              [&](OpBuilder &nb, Location nl, ValueRange args) {
                Value log = math::LogOp::create(nb, nl, args[1]);
                linalg::YieldOp::create(
                    nb, nl,
                    arith::AddFOp::create(nb, nl, args[0], log).getResult());
              })
              .getResult(0);
  }
  return SmallVector<Value>{result, lse};
}
