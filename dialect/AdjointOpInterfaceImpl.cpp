//===- AdjointOpInterfaceImpl.cpp - vector-Jacobian products of hkt ops --===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// AdjointOpInterface (HKTInterfaces.td): each op builds the gradients of its
// operands from those of its results, following shared/SPEC.md "Backward"
// equation by equation. The adjoints of the hkt step ops are written with hkt
// ops where one fits (the adjoint of level_scores is two hkt.attend, that of
// hkt.attend an hkt.level_scores and an hkt.attend), otherwise with
// linalg.generic on tensors. The sequence length may be dynamic: tensors take
// their sizes from the values they are shaped like.
// The upstream ops' adjoints are external models in
// passes/autodiff/UpstreamAdjoints.cpp.
//
//===----------------------------------------------------------------------===//

#include "dialect/HKTOps.h"
#include "dialect/OnlineAttentionTile.h"
#include "dialect/Utils/LinalgBuilders.h"
#include "dialect/Utils/ModelMath.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Matchers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"

#include <cmath>

using namespace mlir;
using namespace mlir::hkt;

#include "dialect/HKTInterfaces.cpp.inc"

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The tensor generic of LinalgBuilders.h, under a short name.
Value generic(OpBuilder &b, Location loc, RankedTensorType type,
              ValueRange inputs, ArrayRef<AffineMap> maps,
              ArrayRef<utils::IteratorType> iterators, GenericBodyFn body) {
  return tensorGeneric(b, loc, type, inputs, maps, iterators, body);
}

/// A generic whose result is shaped like `like` (zeros when it reduces):
/// for results whose dynamic sizes no input dimension gives (a convolution
/// indexes its input by i + m).
Value genericLike(OpBuilder &b, Location loc, Value like, ValueRange inputs,
                  ArrayRef<AffineMap> maps,
                  ArrayRef<utils::IteratorType> iterators, GenericBodyFn body) {
  bool reduces = llvm::is_contained(iterators, kRed);
  Value init = reduces ? zerosLike(b, loc, like) : emptyLike(b, loc, like);
  return genericInto(b, loc, init, inputs, maps, iterators, body);
}

/// The identity map over `rank` loops.
AffineMap identity(unsigned rank, MLIRContext *ctx) {
  return AffineMap::getMultiDimIdentityMap(rank, ctx);
}

/// `v * factor`, elementwise.
Value scaled(OpBuilder &b, Location loc, Value v, double factor) {
  RankedTensorType type = typeOf(v);
  unsigned rank = type.getRank();
  Value c = floatConstant(b, loc, type.getElementType(), factor);
  return generic(
      b, loc, type, {v},
      {identity(rank, b.getContext()), identity(rank, b.getContext())},
      SmallVector<utils::IteratorType>(rank, kPar),
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        return arith::MulFOp::create(nb, l, a[0], c);
      });
}

/// B x H x I x J -> B x H x J x I.
Value transposeScores(OpBuilder &b, Location loc, Value s) {
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, s);
  Value init =
      tensor::EmptyOp::create(b, loc, {sizes[0], sizes[1], sizes[3], sizes[2]},
                              typeOf(s).getElementType());
  return linalg::TransposeOp::create(b, loc, s, init,
                                     ArrayRef<int64_t>{0, 1, 3, 2})
      .getResult()[0];
}

/// sigmoid(g) in a generic body.
Value sigmoid(OpBuilder &b, Location loc, Value g) {
  Value one = floatConstant(b, loc, g.getType(), 1.0);
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, g));
  return arith::DivFOp::create(b, loc, one,
                               arith::AddFOp::create(b, loc, one, e));
}

} // namespace

//===----------------------------------------------------------------------===//
// hkt step ops (SPEC "Backward")
//===----------------------------------------------------------------------===//

/// out[b,t,c] = bias[c] + sum_m w[c,m] x[b, s t - m, c]:
///   dbias[c] = sum_{b,t} dout[b,t,c]
///   dw[c,m]  = sum_{b,t} dout[b,t,c] x[b, s t - m, c]
///   dx[b,j,c] = sum_m w[c,m] z[b, j + m, c], where z holds dout[b,t,c] at
///               position s t and zeros elsewhere (the transposed strided
///               convolution as a gather).
LogicalResult DownsampleOp::buildAdjoint(OpBuilder &b, ValueRange resultGrads,
                                         SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  MLIRContext *ctx = b.getContext();
  Value dout = resultGrads[0];
  RankedTensorType xType = typeOf(getInput()), wType = typeOf(getWeight());
  Type elt = xType.getElementType();
  int64_t batch = xType.getDimSize(0), t = xType.getDimSize(1),
          dim = xType.getDimSize(2), k = wType.getDimSize(1);
  int64_t s = getStride();
  auto mul = [](OpBuilder &nb, Location l, ValueRange a) -> Value {
    return arith::MulFOp::create(nb, l, a[0], a[1]);
  };

  AffineExpr e0, e1, e2, e3;
  bindDims(ctx, e0, e1, e2, e3);
  // dbias: dims (b, t, c).
  Value dbias = generic(
      b, loc, typeOf(getBias()), {dout},
      {indexingMap(3, {e0, e1, e2}, ctx), indexingMap(3, {e2}, ctx)},
      {kRed, kRed, kPar},
      [](OpBuilder &, Location, ValueRange a) -> Value { return a[0]; });
  // dw: dims (b, t, m, c), summed as K x D (every operand read along c,
  // innermost), then D x K.
  Value xp = padSequence(b, loc, getInput(), k - 1, 0);
  Value dwT = generic(b, loc, RankedTensorType::get({k, dim}, elt), {dout, xp},
                      {indexingMap(4, {e0, e1, e3}, ctx),
                       indexingMap(4, {e0, e1 * s + (k - 1) - e2, e3}, ctx),
                       indexingMap(4, {e2, e3}, ctx)},
                      {kRed, kRed, kPar, kPar}, mul);
  Value dw = transposeMatrix(b, loc, dwT);
  // z: dout spread to every s-th position of a B x (n s) x D zero tensor,
  // n s >= T + k - 1 (T may be dynamic).
  OpFoldResult n;
  if (!ShapedType::isDynamic(t)) {
    n = b.getIndexAttr((t + k - 1 + s - 1) / s);
  } else {
    Value len = tensor::DimOp::create(b, loc, getInput(), 1);
    n = arith::CeilDivUIOp::create(
            b, loc,
            arith::AddIOp::create(
                b, loc, len, arith::ConstantIndexOp::create(b, loc, k - 1)),
            arith::ConstantIndexOp::create(b, loc, s))
            .getResult();
  }
  Value spreadZeros =
      linalg::FillOp::create(
          b, loc, floatConstant(b, loc, elt, 0.0),
          tensor::EmptyOp::create(b, loc,
                                  {b.getIndexAttr(batch), n, b.getIndexAttr(s),
                                   b.getIndexAttr(dim)},
                                  elt)
              .getResult())
          .getResult(0);
  SmallVector<OpFoldResult> offsets(4, b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(batch),
                                     tensor::getMixedSize(b, loc, dout, 1),
                                     b.getIndexAttr(1), b.getIndexAttr(dim)};
  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  Value spread = tensor::InsertSliceOp::create(b, loc, dout, spreadZeros,
                                               offsets, sizes, strides);
  Value z = tensor::CollapseShapeOp::create(
      b, loc, spread, ArrayRef<ReassociationIndices>{{0}, {1, 2}, {3}});
  // dx: dims (b, j, c, m).
  Value dx = genericLike(b, loc, getInput(), {z, getWeight()},
                         {indexingMap(4, {e0, e1 + e3, e2}, ctx),
                          indexingMap(4, {e2, e3}, ctx),
                          indexingMap(4, {e0, e1, e2}, ctx)},
                         {kPar, kPar, kPar, kRed}, mul);
  grads.assign({dx, dw, dbias, Value()});
  return success();
}

/// S = Q K^T / sqrt(d) per head: dQ = dS K / sqrt(d), dK = dS^T Q / sqrt(d),
/// both hkt.attend (out[b,i,h] = sum_j P[b,h,i,j] V[b,j,h]).
LogicalResult LevelScoresOp::buildAdjoint(OpBuilder &b, ValueRange resultGrads,
                                          SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  RankedTensorType qType = typeOf(getQuery()), kType = typeOf(getKey());
  int64_t heads = getType().getDimSize(1);
  int64_t headDim = qType.getDimSize(2) / heads;
  Value ds = scaled(b, loc, resultGrads[0], 1.0 / std::sqrt(double(headDim)));
  Value dq = AttendOp::create(b, loc, qType, ds, getKey(),
                              emptyLike(b, loc, getQuery()));
  Value dk = AttendOp::create(b, loc, kType, transposeScores(b, loc, ds),
                              getQuery(), emptyLike(b, loc, getKey()));
  grads.assign({dq, dk, Value()});
  return success();
}

/// out = in upsampled by f: din[b,h,I,J] = sum of dout over the f x f block
/// of (I, J) (rows and columns past the end count as zero).
LogicalResult UpsampleOp::buildAdjoint(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  MLIRContext *ctx = b.getContext();
  RankedTensorType inType = typeOf(getInput());
  RankedTensorType outType = getType();
  Type elt = outType.getElementType();
  int64_t f = getFactor();
  (void)outType;
  // (The sequence sizes may be dynamic.)
  SmallVector<OpFoldResult> in = tensor::getMixedSizes(b, loc, getInput());
  Value paddedZeros =
      linalg::FillOp::create(
          b, loc, floatConstant(b, loc, elt, 0.0),
          tensor::EmptyOp::create(b, loc,
                                  {in[0], in[1], mulSize(b, loc, in[2], f),
                                   mulSize(b, loc, in[3], f)},
                                  elt)
              .getResult())
          .getResult(0);
  SmallVector<OpFoldResult> offsets(4, b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes =
      tensor::getMixedSizes(b, loc, resultGrads[0]);
  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  Value padded = tensor::InsertSliceOp::create(
      b, loc, resultGrads[0], paddedZeros, offsets, sizes, strides);
  auto inShape = inType.getShape();
  auto blockType = RankedTensorType::get(
      {inShape[0], inShape[1], inShape[2], f, inShape[3], f}, elt);
  Value blocks = tensor::ExpandShapeOp::create(
      b, loc, blockType, padded,
      ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}, {4, 5}},
      SmallVector<OpFoldResult>{in[0], in[1], in[2], b.getIndexAttr(f), in[3],
                                b.getIndexAttr(f)});
  AffineExpr bb, h, i, fi, j, fj;
  bindDims(ctx, bb, h, i, fi, j, fj);
  Value din = generic(
      b, loc, inType, {blocks},
      {identity(6, ctx), indexingMap(6, {bb, h, i, j}, ctx)},
      {kPar, kPar, kPar, kRed, kPar, kRed},
      [](OpBuilder &, Location, ValueRange a) -> Value { return a[0]; });
  grads.assign({din, Value()});
  return success();
}

/// out = sum_l lambda[h,l] s_l with lambda = softmax(theta[h, :]):
///   ds_l = lambda[h,l] dout
///   dlambda[h,l] = sum_{b,i,j} dout s_l
///   dtheta[h,l] = lambda[h,l] (dlambda[h,l] - sum_k lambda[h,k] dlambda[h,k])
LogicalResult ConvexFuseOp::buildAdjoint(OpBuilder &b, ValueRange resultGrads,
                                         SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  MLIRContext *ctx = b.getContext();
  Value dout = resultGrads[0];
  RankedTensorType thetaType = typeOf(getTheta());
  RankedTensorType type = getType();
  Type elt = type.getElementType();
  int64_t heads = thetaType.getDimSize(0), levels = thetaType.getDimSize(1);
  Value lambda =
      linalg::SoftmaxOp::create(b, loc, thetaType, getTheta(),
                                emptyOf(b, loc, thetaType), /*dimension=*/1)
          .getResult()[0];
  auto mul = [](OpBuilder &nb, Location l, ValueRange a) -> Value {
    return arith::MulFOp::create(nb, l, a[0], a[1]);
  };
  AffineExpr bb, h, i, j;
  bindDims(ctx, bb, h, i, j);
  AffineMap all = identity(4, ctx);
  Value dlambda = zerosOf(b, loc, thetaType);
  auto headsType = RankedTensorType::get({heads}, elt);
  for (int64_t l = 0; l < levels; ++l) {
    AffineExpr level = getAffineConstantExpr(l, ctx);
    grads.push_back(generic(b, loc, type, {lambda, dout},
                            {indexingMap(4, {h, level}, ctx), all, all},
                            {kPar, kPar, kPar, kPar}, mul));
    Value column = generic(b, loc, headsType, {dout, getScores()[l]},
                           {all, all, indexingMap(4, {h}, ctx)},
                           {kRed, kPar, kRed, kRed}, mul);
    SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0), b.getIndexAttr(l)};
    SmallVector<OpFoldResult> sizes = {b.getIndexAttr(heads),
                                       b.getIndexAttr(1)};
    SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
    dlambda = tensor::InsertSliceOp::create(b, loc, column, dlambda, offsets,
                                            sizes, strides);
  }
  AffineExpr hh, ll;
  bindDims(ctx, hh, ll);
  AffineMap hl = identity(2, ctx);
  Value weighted =
      generic(b, loc, headsType, {lambda, dlambda},
              {hl, hl, indexingMap(2, {hh}, ctx)}, {kPar, kRed}, mul);
  Value dtheta = generic(b, loc, thetaType, {lambda, dlambda, weighted},
                         {hl, hl, indexingMap(2, {hh}, ctx), hl}, {kPar, kPar},
                         [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                           Value centred =
                               arith::SubFOp::create(nb, l, a[1], a[2]);
                           return arith::MulFOp::create(nb, l, a[0], centred);
                         });
  grads.push_back(dtheta);
  grads.push_back(Value());
  return success();
}

/// Masked scores get no gradient: din = dout where kept, 0 where masked.
LogicalResult MaskOp::buildAdjoint(OpBuilder &b, ValueRange resultGrads,
                                   SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  RankedTensorType type = getType();
  Value zero = floatConstant(b, loc, type.getElementType(), 0.0);
  Value din =
      buildKeyMaskSelect(b, loc, resultGrads[0], getLengths(),
                         emptyLike(b, loc, resultGrads[0]), getCausal(), zero);
  grads.push_back(din);
  if (getLengths())
    grads.push_back(Value());
  grads.push_back(Value());
  return success();
}

/// out[b,i,h] = sum_j P[b,h,i,j] V[b,j,h]: dP = dout V^T per head (an
/// hkt.level_scores, times sqrt(d) to undo its scale), dV = P^T dout (an
/// hkt.attend).
LogicalResult AttendOp::buildAdjoint(OpBuilder &b, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  RankedTensorType pType = typeOf(getProbs()), vType = typeOf(getValue());
  int64_t heads = pType.getDimSize(1);
  int64_t headDim = vType.getDimSize(2) / heads;
  Value dout = resultGrads[0];
  Value dp = LevelScoresOp::create(b, loc, pType, dout, getValue(),
                                   emptyLike(b, loc, getProbs()));
  dp = scaled(b, loc, dp, std::sqrt(double(headDim)));
  Value dv =
      AttendOp::create(b, loc, vType, transposeScores(b, loc, getProbs()), dout,
                       emptyLike(b, loc, getValue()));
  grads.assign({dp, dv, Value()});
  return success();
}

/// SPEC Backward through the fused attention, FlashAttention-2 style: the
/// probabilities are recomputed tile by tile from the saved lse by
/// hkt.online_attention_backward, which sees the scaled queries
/// sq_l = q_l * lambda[h, l] / sqrt(d):
///   delta[b,h,i] = sum_{c in h} dout[b,i,c] out[b,i,c] - dlse[b,h,i]
///   dq_l = dsq_l * lambda[h, l] / sqrt(d)
///   dlambda[h, l] = sum_{b,t,c in h} dsq_l[b,t,c] q_l[b,t,c] / sqrt(d)
LogicalResult FusedAttentionOp::buildAdjoint(OpBuilder &b,
                                             ValueRange resultGrads,
                                             SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  MLIRContext *ctx = b.getContext();
  RankedTensorType lseType = getLseInit().getType();
  Type elt = lseType.getElementType();
  int64_t heads = lseType.getDimSize(1);
  int64_t headDim = getInit().getType().getDimSize(2) / heads;
  Value dout = resultGrads[0], dlse = resultGrads[1];
  auto mul = [](OpBuilder &nb, Location l, ValueRange a) -> Value {
    return arith::MulFOp::create(nb, l, a[0], a[1]);
  };
  AffineExpr e0, e1, e2;
  bindDims(ctx, e0, e1, e2);
  AffineMap bic = indexingMap(3, {e0, e1, e2}, ctx);
  Value delta = tensorGeneric(
      b, loc, lseType, {dout, getResult()},
      {bic, bic, indexingMap(3, {e0, e2.floorDiv(headDim), e1}, ctx)},
      {kPar, kPar, kRed}, mul);
  // A zero lse gradient (the usual case: nothing but the backward reads the
  // lse) changes nothing.
  bool zeroLse = false;
  if (auto fill = dlse.getDefiningOp<linalg::FillOp>())
    zeroLse = matchPattern(fill.getInputs()[0], m_AnyZeroFloat());
  if (!zeroLse) {
    AffineMap id = b.getMultiDimIdentityMap(3);
    delta = tensorGeneric(b, loc, lseType, {delta, dlse}, {id, id, id},
                          {kPar, kPar, kPar},
                          [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                            return arith::SubFOp::create(nb, l, a[0], a[1]);
                          });
  }

  SmallVector<Value> scaledQueries =
      buildScaledQueries(b, loc, getQueries(), getWeights(), headDim);
  SmallVector<Value> dqInit, dkInit;
  for (Value q : getQueries())
    dqInit.push_back(zerosLike(b, loc, q));
  for (Value k : getKeys())
    dkInit.push_back(zerosLike(b, loc, k));
  auto backward = OnlineAttentionBackwardOp::create(
      b, loc, getQueries().getTypes(), getKeys().getTypes(),
      getValue().getType(), scaledQueries, getKeys(), getValue(), dout,
      getLse(), delta, getLengths(), /*query_offset=*/Value(),
      /*key_offset=*/Value(), dqInit, dkInit, zerosLike(b, loc, getValue()),
      getFactorsAttr(), getCausalAttr());

  ValueRange dScaled = backward.getDqueries();
  SmallVector<Value> dqueries =
      buildScaledQueries(b, loc, dScaled, getWeights(), headDim);
  // dlambda, one column per level.
  RankedTensorType wType = typeOf(getWeights());
  Value dweights = zerosOf(b, loc, wType);
  Value scale = floatConstant(b, loc, elt, 1.0 / std::sqrt(double(headDim)));
  for (auto [l, dsq, q] : llvm::enumerate(dScaled, getQueries()))
    dweights =
        linalg::GenericOp::create(
            b, loc, wType, ValueRange{dsq, q}, ValueRange{dweights},
            {bic, bic,
             indexingMap(3,
                         {e2.floorDiv(headDim), getAffineConstantExpr(l, ctx)},
                         ctx)},
            {kRed, kRed, kRed},
            [&](OpBuilder &nb, Location nl, ValueRange a) {
              Value p = arith::MulFOp::create(nb, nl, a[0], a[1]);
              p = arith::MulFOp::create(nb, nl, p, scale);
              linalg::YieldOp::create(
                  nb, nl, arith::AddFOp::create(nb, nl, a[2], p).getResult());
            })
            .getResult(0);

  grads.assign(dqueries.begin(), dqueries.end());
  llvm::append_range(grads, backward.getDkeys());
  grads.push_back(backward.getDvalue());
  grads.push_back(dweights);
  if (getLengths())
    grads.push_back(Value());
  grads.append({Value(), Value()});
  return success();
}

/// out = beta attn + (1 - beta) C, C[b,i,c] = sum_m u[c,m] V[b,i-m,c]:
///   dattn = beta dout, dC = (1 - beta) dout
///   dgamma[h] = beta (1 - beta) sum_{b,i,c in h} dout (attn - C)
///   du[c,m] = sum_{b,i} dC[b,i,c] V[b,i-m,c]
///   dV[b,j,c] = sum_m u[c,m] dC[b,j+m,c]
LogicalResult HybridOp::buildAdjoint(OpBuilder &b, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  MLIRContext *ctx = b.getContext();
  RankedTensorType type = getType();
  RankedTensorType uType = typeOf(getConvU()), gType = typeOf(getGamma());
  Type elt = type.getElementType();
  int64_t kc = uType.getDimSize(1), heads = gType.getDimSize(0);
  int64_t headDim = type.getDimSize(2) / heads;
  Value dout = resultGrads[0];
  Value one = floatConstant(b, loc, elt, 1.0);
  auto mul = [](OpBuilder &nb, Location l, ValueRange a) -> Value {
    return arith::MulFOp::create(nb, l, a[0], a[1]);
  };

  AffineExpr e0, e1, e2, e3;
  bindDims(ctx, e0, e1, e2, e3);
  AffineMap bic = indexingMap(3, {e0, e1, e2}, ctx);
  AffineMap head = indexingMap(3, {e2.floorDiv(headDim)}, ctx);
  // The convolution branch, recomputed: dims (b, i, c, m).
  Value vp = padSequence(b, loc, getValue(), kc - 1, 0);
  Value conv = genericLike(b, loc, getValue(), {vp, getConvU()},
                           {indexingMap(4, {e0, e1 + (kc - 1) - e3, e2}, ctx),
                            indexingMap(4, {e2, e3}, ctx),
                            indexingMap(4, {e0, e1, e2}, ctx)},
                           {kPar, kPar, kPar, kRed}, mul);
  Value dattn = generic(
      b, loc, type, {dout, getGamma()}, {bic, head, bic}, {kPar, kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        return arith::MulFOp::create(nb, l, a[0], sigmoid(nb, l, a[1]));
      });
  Value dconv = generic(
      b, loc, type, {dout, getGamma()}, {bic, head, bic}, {kPar, kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value rest = arith::SubFOp::create(nb, l, one, sigmoid(nb, l, a[1]));
        return arith::MulFOp::create(nb, l, a[0], rest);
      });
  // dgamma: dims (b, i, h, e) over the heads split out of D, reduced onto h.
  auto split = [&](Value v) {
    auto splitType = RankedTensorType::get(
        {type.getDimSize(0), type.getDimSize(1), heads, headDim}, elt);
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, v);
    return tensor::ExpandShapeOp::create(
        b, loc, splitType, v, ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}},
        SmallVector<OpFoldResult>{sizes[0], sizes[1], b.getIndexAttr(heads),
                                  b.getIndexAttr(headDim)});
  };
  AffineMap all4 = identity(4, ctx);
  AffineMap h4 = indexingMap(4, {e2}, ctx);
  Value dgamma = generic(
      b, loc, gType, {split(dout), split(getAttn()), split(conv), getGamma()},
      {all4, all4, all4, h4, h4}, {kRed, kRed, kPar, kRed},
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value beta = sigmoid(nb, l, a[3]);
        Value slope = arith::MulFOp::create(
            nb, l, beta, arith::SubFOp::create(nb, l, one, beta));
        Value diff = arith::SubFOp::create(nb, l, a[1], a[2]);
        return arith::MulFOp::create(nb, l, slope,
                                     arith::MulFOp::create(nb, l, a[0], diff));
      });
  // du: dims (b, i, m, c), summed as K x D (read along c), then D x K.
  Value duT = generic(
      b, loc, RankedTensorType::get({kc, type.getDimSize(2)}, elt), {dconv, vp},
      {indexingMap(4, {e0, e1, e3}, ctx),
       indexingMap(4, {e0, e1 + (kc - 1) - e2, e3}, ctx),
       indexingMap(4, {e2, e3}, ctx)},
      {kRed, kRed, kPar, kPar}, mul);
  // (The weight gradients are summed K x D, column index innermost, then
  // transposed to D x K.)
  Value du = transposeMatrix(b, loc, duT);
  // dV (convolution branch): dims (b, j, c, m) over dC padded on the right.
  Value dcp = padSequence(b, loc, dconv, 0, kc - 1);
  Value dv = genericLike(b, loc, getValue(), {dcp, getConvU()},
                         {indexingMap(4, {e0, e1 + e3, e2}, ctx),
                          indexingMap(4, {e2, e3}, ctx),
                          indexingMap(4, {e0, e1, e2}, ctx)},
                         {kPar, kPar, kPar, kRed}, mul);
  grads.assign({dattn, dv, du, dgamma, Value()});
  return success();
}

//===----------------------------------------------------------------------===//
// Model ops
//===----------------------------------------------------------------------===//

/// out[b,t,c] = table[tok[b,t], c] + pos[t,c]:
///   dtable[v,c] = sum_{b,t : tok[b,t] = v} dout[b,t,c]
///   dpos[t,c] = sum_b dout[b,t,c] for t < T, 0 for the unused positions.
LogicalResult EmbedOp::buildAdjoint(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  MLIRContext *ctx = b.getContext();
  Value dout = resultGrads[0];
  RankedTensorType tableType = typeOf(getTable()), posType = typeOf(getPos());
  Type elt = tableType.getElementType();
  Type tokElt = typeOf(getTokens()).getElementType();
  int64_t t = typeOf(getTokens()).getDimSize(1), d = tableType.getDimSize(1);
  Value zero = floatConstant(b, loc, elt, 0.0);
  AffineExpr v, c, bb, p;
  bindDims(ctx, v, c, bb, p);
  Value dtable = generic(
      b, loc, tableType, {getTokens(), dout},
      {indexingMap(4, {bb, p}, ctx), indexingMap(4, {bb, p, c}, ctx),
       indexingMap(4, {v, c}, ctx)},
      {kPar, kPar, kRed, kRed}, [&](OpBuilder &nb, Location l, ValueRange a) {
        Value row = arith::IndexCastOp::create(
            nb, l, tokElt, linalg::IndexOp::create(nb, l, 0));
        Value hit =
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, a[0], row);
        return arith::SelectOp::create(nb, l, hit, a[1], zero).getResult();
      });
  AffineExpr pp, cc, b2;
  bindDims(ctx, pp, cc, b2);
  auto usedType = RankedTensorType::get({t, d}, elt);
  Value used = generic(
      b, loc, usedType, {dout},
      {indexingMap(3, {b2, pp, cc}, ctx), indexingMap(3, {pp, cc}, ctx)},
      {kPar, kPar, kRed},
      [](OpBuilder &, Location, ValueRange a) { return a[0]; });
  SmallVector<OpFoldResult> offsets(2, b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes = {tensor::getMixedSize(b, loc, dout, 1),
                                     b.getIndexAttr(d)};
  SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
  Value dpos = tensor::InsertSliceOp::create(
      b, loc, used, zerosOf(b, loc, posType), offsets, sizes, strides);
  grads.assign({Value(), dtable, dpos, Value()});
  return success();
}

/// y = xhat w + bias, xhat = (x - mu) rstd:
///   dbias = sum dout, dw = sum dout xhat (over the leading dimensions)
///   dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dout w.
LogicalResult LayerNormOp::buildAdjoint(OpBuilder &b, ValueRange resultGrads,
                                        SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  MLIRContext *ctx = b.getContext();
  Value dout = resultGrads[0];
  RankedTensorType type = getType(), wType = typeOf(getWeight());
  unsigned rank = type.getRank();
  Type elt = type.getElementType();
  double invD = 1.0 / static_cast<double>(type.getShape().back());
  RowStats stats =
      layerNormStats(b, loc, getInput(), getEpsilon().convertToDouble());
  AffineMap all = identity(rank, ctx);
  AffineMap row = all.dropResult(rank - 1);
  AffineMap col = indexingMap(rank, {getAffineDimExpr(rank - 1, ctx)}, ctx);
  SmallVector<utils::IteratorType> par(rank, kPar), toCol(rank, kRed),
      toRow(rank, kPar);
  toCol.back() = kPar;
  toRow.back() = kRed;
  Value xhat = generic(
      b, loc, type, {getInput(), stats.mean, stats.rstd}, {all, row, row, all},
      par, [](OpBuilder &nb, Location l, ValueRange a) {
        Value c = arith::SubFOp::create(nb, l, a[0], a[1]);
        return arith::MulFOp::create(nb, l, c, a[2]).getResult();
      });
  Value dbias =
      generic(b, loc, wType, {dout}, {all, col}, toCol,
              [](OpBuilder &, Location, ValueRange a) { return a[0]; });
  Value dw =
      generic(b, loc, wType, {dout, xhat}, {all, all, col}, toCol,
              [](OpBuilder &nb, Location l, ValueRange a) {
                return arith::MulFOp::create(nb, l, a[0], a[1]).getResult();
              });
  Value g =
      generic(b, loc, type, {dout, getWeight()}, {all, col, all}, par,
              [](OpBuilder &nb, Location l, ValueRange a) {
                return arith::MulFOp::create(nb, l, a[0], a[1]).getResult();
              });
  RankedTensorType rowType = cast<RankedTensorType>(stats.mean.getType());
  Value inv = floatConstant(b, loc, elt, invD);
  Value meanG =
      generic(b, loc, rowType, {g}, {all, row}, toRow,
              [&](OpBuilder &nb, Location l, ValueRange a) {
                return arith::MulFOp::create(nb, l, a[0], inv).getResult();
              });
  Value meanGX =
      generic(b, loc, rowType, {g, xhat}, {all, all, row}, toRow,
              [&](OpBuilder &nb, Location l, ValueRange a) {
                Value p = arith::MulFOp::create(nb, l, a[0], a[1]);
                return arith::MulFOp::create(nb, l, p, inv).getResult();
              });
  Value dx = generic(b, loc, type, {g, xhat, meanG, meanGX, stats.rstd},
                     {all, all, row, row, row, all}, par,
                     [](OpBuilder &nb, Location l, ValueRange a) {
                       Value t = arith::SubFOp::create(nb, l, a[0], a[2]);
                       t = arith::SubFOp::create(
                           nb, l, t, arith::MulFOp::create(nb, l, a[1], a[3]));
                       return arith::MulFOp::create(nb, l, t, a[4]).getResult();
                     });
  grads.assign({dx, dw, dbias, Value()});
  return success();
}

LogicalResult GeluOp::buildAdjoint(OpBuilder &b, ValueRange resultGrads,
                                   SmallVectorImpl<Value> &grads) {
  RankedTensorType type = getType();
  unsigned rank = type.getRank();
  AffineMap all = identity(rank, b.getContext());
  Value dx = generic(
      b, getLoc(), type, {resultGrads[0], getInput()}, {all, all, all},
      SmallVector<utils::IteratorType>(rank, kPar),
      [](OpBuilder &nb, Location l, ValueRange a) {
        return arith::MulFOp::create(nb, l, a[0], geluDerivative(nb, l, a[1]))
            .getResult();
      });
  grads.assign({dx, Value()});
  return success();
}

/// dx[b,t,c] = dout[b,c] / len[b] for t < len[b], else 0.
LogicalResult MeanPoolOp::buildAdjoint(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  MLIRContext *ctx = b.getContext();
  RankedTensorType xType = typeOf(getInput());
  Type elt = xType.getElementType();
  Value zero = floatConstant(b, loc, elt, 0.0);
  AffineExpr bb, t, c;
  bindDims(ctx, bb, t, c);
  (void)xType;
  Value dx = genericLike(
      b, loc, getInput(), {resultGrads[0], getLengths()},
      {indexingMap(3, {bb, c}, ctx), indexingMap(3, {bb}, ctx),
       indexingMap(3, {bb, t, c}, ctx)},
      {kPar, kPar, kPar}, [&](OpBuilder &nb, Location l, ValueRange a) {
        Value pos = linalg::IndexOp::create(nb, l, 1);
        Value len = arith::IndexCastOp::create(nb, l, nb.getIndexType(), a[1]);
        Value valid =
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt, pos, len);
        Value share = arith::DivFOp::create(
            nb, l, a[0], arith::SIToFPOp::create(nb, l, elt, a[1]));
        return arith::SelectOp::create(nb, l, valid, share, zero).getResult();
      });
  grads.assign({dx, Value(), Value()});
  return success();
}

/// dlogits[b,k] = dloss (softmax(logits)[b,k] - [k = labels[b]]) / B.
LogicalResult CrossEntropyOp::buildAdjoint(OpBuilder &b, ValueRange resultGrads,
                                           SmallVectorImpl<Value> &grads) {
  Location loc = getLoc();
  MLIRContext *ctx = b.getContext();
  RankedTensorType type = typeOf(getLogits());
  Type elt = type.getElementType();
  Type labelElt = typeOf(getLabels()).getElementType();
  double invB = 1.0 / static_cast<double>(type.getDimSize(0));
  Value lse = rowLogSumExp(b, loc, getLogits());
  AffineExpr bb, k;
  bindDims(ctx, bb, k);
  Value one = floatConstant(b, loc, elt, 1.0),
        zero = floatConstant(b, loc, elt, 0.0);
  Value scale = floatConstant(b, loc, elt, invB);
  Value dlogits = generic(
      b, loc, type, {getLogits(), lse, getLabels(), resultGrads[0]},
      {indexingMap(2, {bb, k}, ctx), indexingMap(2, {bb}, ctx),
       indexingMap(2, {bb}, ctx), AffineMap::get(2, 0, {}, ctx),
       indexingMap(2, {bb, k}, ctx)},
      {kPar, kPar}, [&](OpBuilder &nb, Location l, ValueRange a) {
        Value p = math::ExpOp::create(nb, l,
                                      arith::SubFOp::create(nb, l, a[0], a[1]));
        Value col = arith::IndexCastOp::create(
            nb, l, labelElt, linalg::IndexOp::create(nb, l, 1));
        Value hit =
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, a[2], col);
        Value target = arith::SelectOp::create(nb, l, hit, one, zero);
        Value diff = arith::SubFOp::create(nb, l, p, target);
        return arith::MulFOp::create(
                   nb, l, arith::MulFOp::create(nb, l, diff, scale), a[3])
            .getResult();
      });
  grads.assign({dlogits, Value(), Value()});
  return success();
}
