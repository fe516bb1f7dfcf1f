//===- Adjoints.cpp - vector-Jacobian products of hkt and upstream ops ----===//
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
// linalg.generic on tensors; every tensor they build has a static shape.
//
//===----------------------------------------------------------------------===//

#include "dialect/Adjoints.h"
#include "dialect/HKTOps.h"
#include "dialect/LinalgBuilders.h"

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

Value zerosOf(OpBuilder &b, Location loc, RankedTensorType type) {
  Type elt = type.getElementType();
  return filledTensor(b, loc, type.getShape(), elt,
                      floatConstant(b, loc, elt, 0.0));
}

Value emptyOf(OpBuilder &b, Location loc, RankedTensorType type) {
  return tensor::EmptyOp::create(b, loc, type.getShape(),
                                 type.getElementType());
}

using BodyFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

/// A linalg.generic with one result of `type`: `maps` holds one map per input
/// and then the output's. With reductions the output starts at zero and the
/// body's value is added to it; otherwise the body's value is the result.
Value generic(OpBuilder &b, Location loc, RankedTensorType type,
              ValueRange inputs, ArrayRef<AffineMap> maps,
              ArrayRef<utils::IteratorType> iterators, BodyFn body) {
  bool reduces = llvm::is_contained(iterators, kRed);
  Value init = reduces ? zerosOf(b, loc, type) : emptyOf(b, loc, type);
  return linalg::GenericOp::create(
             b, loc, type, inputs, ValueRange{init}, maps, iterators,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Value v = body(nb, l, args.drop_back());
               if (reduces)
                 v = arith::AddFOp::create(nb, l, args.back(), v);
               linalg::YieldOp::create(nb, l, v);
             })
      .getResult(0);
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
  return generic(b, loc, type, {v},
                 {identity(rank, b.getContext()), identity(rank, b.getContext())},
                 SmallVector<utils::IteratorType>(rank, kPar),
                 [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                   return arith::MulFOp::create(nb, l, a[0], c);
                 });
}

/// B x H x I x J -> B x H x J x I.
Value transposeScores(OpBuilder &b, Location loc, Value s) {
  RankedTensorType type = typeOf(s);
  auto shape = type.getShape();
  auto out = RankedTensorType::get({shape[0], shape[1], shape[3], shape[2]},
                                   type.getElementType());
  return linalg::TransposeOp::create(b, loc, s, emptyOf(b, loc, out),
                                     ArrayRef<int64_t>{0, 1, 3, 2})
      .getResult()[0];
}

/// `x` (B x T x D) inside zeros of B x (before + T + after) x D.
Value padSequence(OpBuilder &b, Location loc, Value x, int64_t before,
                  int64_t after) {
  if (before == 0 && after == 0)
    return x;
  RankedTensorType type = typeOf(x);
  SmallVector<int64_t> shape(type.getShape());
  shape[1] += before + after;
  Value padded =
      zerosOf(b, loc, RankedTensorType::get(shape, type.getElementType()));
  SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0), b.getIndexAttr(before),
                                       b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes;
  for (int64_t d : type.getShape())
    sizes.push_back(b.getIndexAttr(d));
  SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
  return tensor::InsertSliceOp::create(b, loc, x, padded, offsets, sizes,
                                       strides);
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
  RankedTensorType outType = getType();
  Type elt = xType.getElementType();
  int64_t batch = xType.getDimSize(0), t = xType.getDimSize(1),
          dim = xType.getDimSize(2), k = wType.getDimSize(1);
  int64_t tn = outType.getDimSize(1), s = getStride();
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
  // dw: dims (c, m, b, t).
  Value xp = padSequence(b, loc, getInput(), k - 1, 0);
  Value dw = generic(b, loc, wType, {dout, xp},
                     {indexingMap(4, {e2, e3, e0}, ctx),
                      indexingMap(4, {e2, e3 * s + (k - 1) - e1, e0}, ctx),
                      indexingMap(4, {e0, e1}, ctx)},
                     {kPar, kPar, kRed, kRed}, mul);
  // z: dout spread to every s-th position of a B x (n s) x D zero tensor,
  // n s >= T + k - 1.
  int64_t n = (t + k - 1 + s - 1) / s;
  auto spreadType = RankedTensorType::get({batch, n, s, dim}, elt);
  SmallVector<OpFoldResult> offsets(4, b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(batch), b.getIndexAttr(tn),
                                     b.getIndexAttr(1), b.getIndexAttr(dim)};
  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  Value spread = tensor::InsertSliceOp::create(
      b, loc, dout, zerosOf(b, loc, spreadType), offsets, sizes, strides);
  Value z = tensor::CollapseShapeOp::create(
      b, loc, spread, ArrayRef<ReassociationIndices>{{0}, {1, 2}, {3}});
  // dx: dims (b, j, c, m).
  Value dx = generic(b, loc, xType, {z, getWeight()},
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
  Value dq =
      AttendOp::create(b, loc, qType, ds, getKey(), emptyOf(b, loc, qType));
  Value dk = AttendOp::create(b, loc, kType, transposeScores(b, loc, ds),
                              getQuery(), emptyOf(b, loc, kType));
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
  auto in = inType.getShape(), out = outType.getShape();
  auto paddedType =
      RankedTensorType::get({in[0], in[1], in[2] * f, in[3] * f}, elt);
  SmallVector<OpFoldResult> offsets(4, b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes;
  for (int64_t d : out)
    sizes.push_back(b.getIndexAttr(d));
  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  Value padded = tensor::InsertSliceOp::create(
      b, loc, resultGrads[0], zerosOf(b, loc, paddedType), offsets, sizes,
      strides);
  auto blockType =
      RankedTensorType::get({in[0], in[1], in[2], f, in[3], f}, elt);
  Value blocks = tensor::ExpandShapeOp::create(
      b, loc, blockType, padded,
      ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}, {4, 5}});
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
    SmallVector<OpFoldResult> sizes = {b.getIndexAttr(heads), b.getIndexAttr(1)};
    SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
    dlambda = tensor::InsertSliceOp::create(b, loc, column, dlambda, offsets,
                                            sizes, strides);
  }
  AffineExpr hh, ll;
  bindDims(ctx, hh, ll);
  AffineMap hl = identity(2, ctx);
  Value weighted = generic(b, loc, headsType, {lambda, dlambda},
                           {hl, hl, indexingMap(2, {hh}, ctx)}, {kPar, kRed},
                           mul);
  Value dtheta = generic(
      b, loc, thetaType, {lambda, dlambda, weighted},
      {hl, hl, indexingMap(2, {hh}, ctx), hl}, {kPar, kPar},
      [](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value centred = arith::SubFOp::create(nb, l, a[1], a[2]);
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
  MLIRContext *ctx = b.getContext();
  RankedTensorType type = getType();
  AffineExpr bb;
  bindDims(ctx, bb);
  SmallVector<Value> inputs = {resultGrads[0]};
  SmallVector<AffineMap> maps = {identity(4, ctx)};
  if (Value lengths = getLengths()) {
    inputs.push_back(lengths);
    maps.push_back(indexingMap(4, {bb}, ctx));
  }
  maps.push_back(identity(4, ctx));
  bool causal = getCausal(), hasLengths = static_cast<bool>(getLengths());
  Value zero = floatConstant(b, loc, type.getElementType(), 0.0);
  Value din = generic(
      b, loc, type, inputs, maps, {kPar, kPar, kPar, kPar},
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value row = linalg::IndexOp::create(nb, l, 2);
        Value col = linalg::IndexOp::create(nb, l, 3);
        Value len;
        if (hasLengths)
          len = arith::IndexCastOp::create(nb, l, nb.getIndexType(), a[1]);
        Value drop = buildKeyMaskPredicate(nb, l, row, col, len, causal);
        return arith::SelectOp::create(nb, l, drop, zero, a[0]);
      });
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
                                   emptyOf(b, loc, pType));
  dp = scaled(b, loc, dp, std::sqrt(double(headDim)));
  Value dv = AttendOp::create(b, loc, vType, transposeScores(b, loc, getProbs()),
                              dout, emptyOf(b, loc, vType));
  grads.assign({dp, dv, Value()});
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
  Value conv = generic(b, loc, type, {vp, getConvU()},
                       {indexingMap(4, {e0, e1 + (kc - 1) - e3, e2}, ctx),
                        indexingMap(4, {e2, e3}, ctx),
                        indexingMap(4, {e0, e1, e2}, ctx)},
                       {kPar, kPar, kPar, kRed}, mul);
  Value dattn = generic(b, loc, type, {dout, getGamma()}, {bic, head, bic},
                        {kPar, kPar, kPar},
                        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                          return arith::MulFOp::create(nb, l, a[0],
                                                       sigmoid(nb, l, a[1]));
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
    return tensor::ExpandShapeOp::create(
        b, loc, splitType, v, ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});
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
        return arith::MulFOp::create(
            nb, l, slope, arith::MulFOp::create(nb, l, a[0], diff));
      });
  // du: dims (c, m, b, i).
  Value du = generic(b, loc, uType, {dconv, vp},
                     {indexingMap(4, {e2, e3, e0}, ctx),
                      indexingMap(4, {e2, e3 + (kc - 1) - e1, e0}, ctx),
                      indexingMap(4, {e0, e1}, ctx)},
                     {kPar, kPar, kRed, kRed}, mul);
  // dV (convolution branch): dims (b, j, c, m) over dC padded on the right.
  Value dcp = padSequence(b, loc, dconv, 0, kc - 1);
  Value dv = generic(b, loc, type, {dcp, getConvU()},
                     {indexingMap(4, {e0, e1 + e3, e2}, ctx),
                      indexingMap(4, {e2, e3}, ctx),
                      indexingMap(4, {e0, e1, e2}, ctx)},
                     {kPar, kPar, kPar, kRed}, mul);
  grads.assign({dattn, dv, du, dgamma, Value()});
  return success();
}

//===----------------------------------------------------------------------===//
// Upstream ops (external models)
//===----------------------------------------------------------------------===//

namespace {

/// C += A B (2-D, default maps): dA = dC B^T, dB = A^T dC, dC_init = dC.
struct MatmulAdjoint
    : AdjointOpInterface::ExternalModel<MatmulAdjoint, linalg::MatmulOp> {
  LogicalResult buildAdjoint(Operation *op, OpBuilder &b,
                             ValueRange resultGrads,
                             SmallVectorImpl<Value> &grads) const {
    auto mm = cast<linalg::MatmulOp>(op);
    if (mm.hasUserDefinedMaps() || mm.getNumDpsInputs() != 2 ||
        !mm.hasPureTensorSemantics())
      return op->emitOpError("adjoint: only the default 2-D matmul on tensors");
    Location loc = op->getLoc();
    MLIRContext *ctx = b.getContext();
    Value a = mm.getInputs()[0], w = mm.getInputs()[1], dc = resultGrads[0];
    auto mul = [](OpBuilder &nb, Location l, ValueRange v) -> Value {
      return arith::MulFOp::create(nb, l, v[0], v[1]);
    };
    AffineExpr i, k, j;
    bindDims(ctx, i, k, j);
    // dA: dims (m, k, n); dB: dims (k, n, m) written as (i, k, j) = (k, n, m).
    Value da = generic(b, loc, typeOf(a), {dc, w},
                       {indexingMap(3, {i, j}, ctx), indexingMap(3, {k, j}, ctx),
                        indexingMap(3, {i, k}, ctx)},
                       {kPar, kPar, kRed}, mul);
    Value dw = generic(b, loc, typeOf(w), {a, dc},
                       {indexingMap(3, {j, i}, ctx), indexingMap(3, {j, k}, ctx),
                        indexingMap(3, {i, k}, ctx)},
                       {kPar, kPar, kRed}, mul);
    grads.assign({da, dw, dc});
    return success();
  }
};

/// p = softmax(x) along `dimension`: dx = p (dp - sum_dim(dp p)).
struct SoftmaxAdjoint
    : AdjointOpInterface::ExternalModel<SoftmaxAdjoint, linalg::SoftmaxOp> {
  LogicalResult buildAdjoint(Operation *op, OpBuilder &b,
                             ValueRange resultGrads,
                             SmallVectorImpl<Value> &grads) const {
    auto softmax = cast<linalg::SoftmaxOp>(op);
    Location loc = op->getLoc();
    MLIRContext *ctx = b.getContext();
    Value p = softmax.getResult()[0], dp = resultGrads[0];
    RankedTensorType type = typeOf(p);
    unsigned rank = type.getRank();
    int64_t dim = softmax.getDimension();
    SmallVector<int64_t> rowShape;
    SmallVector<AffineExpr> rowExprs;
    SmallVector<utils::IteratorType> iterators;
    for (unsigned d = 0; d < rank; ++d) {
      iterators.push_back(d == dim ? kRed : kPar);
      if (d != dim) {
        rowShape.push_back(type.getDimSize(d));
        rowExprs.push_back(getAffineDimExpr(d, ctx));
      }
    }
    auto rowType = RankedTensorType::get(rowShape, type.getElementType());
    AffineMap all = identity(rank, ctx);
    AffineMap row = indexingMap(rank, rowExprs, ctx);
    Value dot = generic(b, loc, rowType, {dp, p}, {all, all, row}, iterators,
                        [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                          return arith::MulFOp::create(nb, l, a[0], a[1]);
                        });
    Value dx = generic(
        b, loc, type, {p, dp, dot}, {all, all, row, all},
        SmallVector<utils::IteratorType>(rank, kPar),
        [](OpBuilder &nb, Location l, ValueRange a) -> Value {
          Value centred = arith::SubFOp::create(nb, l, a[1], a[2]);
          return arith::MulFOp::create(nb, l, a[0], centred);
        });
    grads.assign({dx, Value()});
    return success();
  }
};

/// The fill value is a scalar and the destination is overwritten: nothing.
struct FillAdjoint
    : AdjointOpInterface::ExternalModel<FillAdjoint, linalg::FillOp> {
  LogicalResult buildAdjoint(Operation *op, OpBuilder &, ValueRange,
                             SmallVectorImpl<Value> &grads) const {
    grads.assign(op->getNumOperands(), Value());
    return success();
  }
};

/// out = a + c: both get dout; the destination is overwritten.
struct AddAdjoint : AdjointOpInterface::ExternalModel<AddAdjoint, linalg::AddOp> {
  LogicalResult buildAdjoint(Operation *op, OpBuilder &, ValueRange resultGrads,
                             SmallVectorImpl<Value> &grads) const {
    grads.assign({resultGrads[0], resultGrads[0], Value()});
    return success();
  }
};

/// The inverse permutation of dout.
struct TransposeAdjoint
    : AdjointOpInterface::ExternalModel<TransposeAdjoint, linalg::TransposeOp> {
  LogicalResult buildAdjoint(Operation *op, OpBuilder &b,
                             ValueRange resultGrads,
                             SmallVectorImpl<Value> &grads) const {
    auto transpose = cast<linalg::TransposeOp>(op);
    ArrayRef<int64_t> perm = transpose.getPermutation();
    SmallVector<int64_t> inverse(perm.size());
    for (auto [i, p] : llvm::enumerate(perm))
      inverse[p] = i;
    Location loc = op->getLoc();
    RankedTensorType inType = typeOf(transpose.getInput());
    Value din = linalg::TransposeOp::create(b, loc, resultGrads[0],
                                            emptyOf(b, loc, inType), inverse)
                    .getResult()[0];
    grads.assign({din, Value()});
    return success();
  }
};

/// The slice's gradient in zeros of the source's shape.
struct ExtractSliceAdjoint
    : AdjointOpInterface::ExternalModel<ExtractSliceAdjoint,
                                        tensor::ExtractSliceOp> {
  LogicalResult buildAdjoint(Operation *op, OpBuilder &b,
                             ValueRange resultGrads,
                             SmallVectorImpl<Value> &grads) const {
    auto slice = cast<tensor::ExtractSliceOp>(op);
    Location loc = op->getLoc();
    Value dsrc = tensor::InsertSliceOp::create(
        b, loc, resultGrads[0], zerosOf(b, loc, slice.getSourceType()),
        slice.getMixedOffsets(), slice.getMixedSizes(),
        slice.getMixedStrides());
    grads.assign(op->getNumOperands(), Value());
    grads[0] = dsrc;
    return success();
  }
};

/// dsource = the slice of dout; ddest = dout with the slice zeroed.
struct InsertSliceAdjoint
    : AdjointOpInterface::ExternalModel<InsertSliceAdjoint,
                                        tensor::InsertSliceOp> {
  LogicalResult buildAdjoint(Operation *op, OpBuilder &b,
                             ValueRange resultGrads,
                             SmallVectorImpl<Value> &grads) const {
    auto insert = cast<tensor::InsertSliceOp>(op);
    Location loc = op->getLoc();
    Value dout = resultGrads[0];
    Value dsrc = tensor::ExtractSliceOp::create(
        b, loc, insert.getSourceType(), dout, insert.getMixedOffsets(),
        insert.getMixedSizes(), insert.getMixedStrides());
    Value ddest = tensor::InsertSliceOp::create(
        b, loc, zerosOf(b, loc, insert.getSourceType()), dout,
        insert.getMixedOffsets(), insert.getMixedSizes(),
        insert.getMixedStrides());
    grads.assign(op->getNumOperands(), Value());
    grads[0] = dsrc;
    grads[1] = ddest;
    return success();
  }
};

/// Reshapes: the inverse reshape of dout.
struct ExpandShapeAdjoint
    : AdjointOpInterface::ExternalModel<ExpandShapeAdjoint,
                                        tensor::ExpandShapeOp> {
  LogicalResult buildAdjoint(Operation *op, OpBuilder &b,
                             ValueRange resultGrads,
                             SmallVectorImpl<Value> &grads) const {
    auto expand = cast<tensor::ExpandShapeOp>(op);
    Value dsrc = tensor::CollapseShapeOp::create(
        b, op->getLoc(), expand.getSrcType(), resultGrads[0],
        expand.getReassociationIndices());
    grads.assign(op->getNumOperands(), Value());
    grads[0] = dsrc;
    return success();
  }
};

struct CollapseShapeAdjoint
    : AdjointOpInterface::ExternalModel<CollapseShapeAdjoint,
                                        tensor::CollapseShapeOp> {
  LogicalResult buildAdjoint(Operation *op, OpBuilder &b,
                             ValueRange resultGrads,
                             SmallVectorImpl<Value> &grads) const {
    auto collapse = cast<tensor::CollapseShapeOp>(op);
    if (!collapse.getSrcType().hasStaticShape())
      return op->emitOpError("adjoint: needs a static source shape");
    Value dsrc = tensor::ExpandShapeOp::create(
        b, op->getLoc(), collapse.getSrcType(), resultGrads[0],
        collapse.getReassociationIndices());
    grads.assign({dsrc});
    return success();
  }
};

/// No tensor operands: nothing to propagate.
struct EmptyAdjoint
    : AdjointOpInterface::ExternalModel<EmptyAdjoint, tensor::EmptyOp> {
  LogicalResult buildAdjoint(Operation *op, OpBuilder &, ValueRange,
                             SmallVectorImpl<Value> &grads) const {
    grads.assign(op->getNumOperands(), Value());
    return success();
  }
};

} // namespace

void mlir::hkt::registerAdjointExternalModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, linalg::LinalgDialect *) {
    linalg::MatmulOp::attachInterface<MatmulAdjoint>(*ctx);
    linalg::SoftmaxOp::attachInterface<SoftmaxAdjoint>(*ctx);
    linalg::FillOp::attachInterface<FillAdjoint>(*ctx);
    linalg::AddOp::attachInterface<AddAdjoint>(*ctx);
    linalg::TransposeOp::attachInterface<TransposeAdjoint>(*ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, tensor::TensorDialect *) {
    tensor::ExtractSliceOp::attachInterface<ExtractSliceAdjoint>(*ctx);
    tensor::InsertSliceOp::attachInterface<InsertSliceAdjoint>(*ctx);
    tensor::ExpandShapeOp::attachInterface<ExpandShapeAdjoint>(*ctx);
    tensor::CollapseShapeOp::attachInterface<CollapseShapeAdjoint>(*ctx);
    tensor::EmptyOp::attachInterface<EmptyAdjoint>(*ctx);
  });
}
