//===- LevelOps.cpp - The multi-scale level ops to linalg -----------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// hkt-lower-to-linalg for SPEC's level equations: the learned causal
// downsampling (1), the level scores (3), the upsampling of coarse scores (4)
// and their convex fusion (5), each as linalg.generic on tensors.
//
// Causal left padding is explicit: the sequence is copied into a zero tensor
// k-1 positions to the right, so `x[s*t - m]` becomes the affine access
// `xp[s*t + (k-1) - m]`, with no bounds checks in the loop body.
//
//===----------------------------------------------------------------------===//

#include "dialect/HKTOps.h"
#include "dialect/Utils/LinalgBuilders.h"
#include "passes/conversion/LinalgLoweringUtils.h"
#include "passes/conversion/Rewriters.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::hkt;
using namespace mlir::hkt::conversion;

namespace {

/// SPEC 1: out[b,t,c] = bias[c] + sum_m w[c,m] * x[b, s*t - m, c].
struct LowerDownsample : OpRewritePattern<DownsampleOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(DownsampleOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rw.getContext();
    int64_t k = tensorType(op.getWeight()).getDimSize(1);
    int64_t s = op.getStride();
    Value xp = padSequence(rw, loc, op.getInput(), k - 1, 0);

    AffineExpr b, t, c, m;
    bindDims(ctx, b, t, c);
    Type resultType = op.getType();
    // Start from the bias broadcast over (b, t), then accumulate the taps.
    Value biased =
        linalg::GenericOp::create(
            rw, loc, resultType, ValueRange{op.getBias()},
            ValueRange{op.getInit()},
            {indexingMap(3, {c}, ctx), indexingMap(3, {b, t, c}, ctx)},
            {kPar, kPar, kPar},
            [](OpBuilder &nb, Location l, ValueRange args) {
              linalg::YieldOp::create(nb, l, args[0]);
            })
            .getResult(0);
    // Loops (b, t, m, c): the channels innermost.
    bindDims(ctx, b, t, m, c);
    auto conv = linalg::GenericOp::create(
        rw, loc, resultType, ValueRange{xp, tapsMajor(rw, loc, op.getWeight())},
        ValueRange{biased},
        {indexingMap(4, {b, t * s + (k - 1) - m, c}, ctx),
         indexingMap(4, {m, c}, ctx), indexingMap(4, {b, t, c}, ctx)},
        {kPar, kPar, kRed, kPar},
        [](OpBuilder &nb, Location l, ValueRange args) {
          Value prod = arith::MulFOp::create(nb, l, args[0], args[1]);
          Value sum = arith::AddFOp::create(nb, l, args[2], prod);
          linalg::YieldOp::create(nb, l, sum);
        });
    rw.replaceOp(op, conv.getResults());
    return success();
  }
};

/// SPEC 3: out[b,h,q,p] = (Q[b,q,h] . K[b,p,h]) / sqrt(d).
struct LowerLevelScores : OpRewritePattern<LevelScoresOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LevelScoresOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rw.getContext();
    RankedTensorType outType = op.getType();
    int64_t heads = outType.getDimSize(1);
    int64_t headDim = tensorType(op.getQuery()).getDimSize(2) / heads;
    Type elt = outType.getElementType();
    Value q = splitHeads(rw, loc, op.getQuery(), heads);
    Value k = splitHeads(rw, loc, op.getKey(), heads);
    Value scale = floatConstant(rw, loc, elt, 1.0 / std::sqrt(double(headDim)));

    AffineExpr b, h, i, j, e;
    bindDims(ctx, b, h, i, j, e);
    auto scores = linalg::GenericOp::create(
        rw, loc, outType, ValueRange{q, k},
        ValueRange{zerosLike(rw, loc, op.getInit())},
        {indexingMap(5, {b, i, h, e}, ctx), indexingMap(5, {b, j, h, e}, ctx),
         indexingMap(5, {b, h, i, j}, ctx)},
        {kPar, kPar, kPar, kPar, kRed},
        [&](OpBuilder &nb, Location l, ValueRange args) {
          Value prod = arith::MulFOp::create(nb, l, args[0], args[1]);
          Value scaled = arith::MulFOp::create(nb, l, prod, scale);
          linalg::YieldOp::create(
              nb, l, arith::AddFOp::create(nb, l, args[2], scaled).getResult());
        });
    rw.replaceOp(op, scores.getResults());
    return success();
  }
};

/// SPEC 4: out[b,h,i,j] = in[b,h,floor(i/f),floor(j/f)].
struct LowerUpsample : OpRewritePattern<UpsampleOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(UpsampleOp op,
                                PatternRewriter &rw) const override {
    MLIRContext *ctx = rw.getContext();
    int64_t f = op.getFactor();
    AffineExpr b, h, i, j;
    bindDims(ctx, b, h, i, j);
    auto up = linalg::GenericOp::create(
        rw, op.getLoc(), op.getType(), ValueRange{op.getInput()},
        ValueRange{op.getInit()},
        {indexingMap(4, {b, h, i.floorDiv(f), j.floorDiv(f)}, ctx),
         indexingMap(4, {b, h, i, j}, ctx)},
        {kPar, kPar, kPar, kPar},
        [](OpBuilder &nb, Location l, ValueRange args) {
          linalg::YieldOp::create(nb, l, args[0]);
        });
    rw.replaceOp(op, up.getResults());
    return success();
  }
};

/// SPEC 4: lambda = softmax(theta) over levels; out = sum_l lambda[h,l] S_l.
struct LowerConvexFuse : OpRewritePattern<ConvexFuseOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConvexFuseOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rw.getContext();
    RankedTensorType thetaType = tensorType(op.getTheta());
    Value lambdaInit = tensor::EmptyOp::create(rw, loc, thetaType.getShape(),
                                               thetaType.getElementType());
    Value lambda = linalg::SoftmaxOp::create(rw, loc, thetaType, op.getTheta(),
                                             lambdaInit, /*dimension=*/1)
                       .getResult()[0];

    AffineExpr b, h, i, j;
    bindDims(ctx, b, h, i, j);
    SmallVector<Value> inputs(op.getScores());
    SmallVector<AffineMap> maps(inputs.size(),
                                indexingMap(4, {b, h, i, j}, ctx));
    int64_t levels = inputs.size();
    for (int64_t l = 0; l < levels; ++l) {
      inputs.push_back(lambda);
      maps.push_back(indexingMap(4, {h, getAffineConstantExpr(l, ctx)}, ctx));
    }
    maps.push_back(indexingMap(4, {b, h, i, j}, ctx));
    auto fused = linalg::GenericOp::create(
        rw, loc, op.getType(), inputs, ValueRange{op.getInit()}, maps,
        {kPar, kPar, kPar, kPar},
        [&](OpBuilder &nb, Location l, ValueRange args) {
          Value sum;
          for (int64_t lv = 0; lv < levels; ++lv) {
            Value term =
                arith::MulFOp::create(nb, l, args[levels + lv], args[lv]);
            sum = sum ? arith::AddFOp::create(nb, l, sum, term).getResult()
                      : term;
          }
          linalg::YieldOp::create(nb, l, sum);
        });
    rw.replaceOp(op, fused.getResults());
    return success();
  }
};

} // namespace

void mlir::hkt::populateHktLevelOpsToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns
      .add<LowerDownsample, LowerLevelScores, LowerUpsample, LowerConvexFuse>(
          patterns.getContext());
}
