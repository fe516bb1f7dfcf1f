//===- LowerToLinalg.cpp - hkt-lower-to-linalg ----------------------------===//
//
// The reference lowering: every hkt step op becomes linalg.generic ops on
// tensors, following shared/SPEC.md equation by equation. Score matrices are
// materialised (B x H x T x T); the fused path (hkt-fuse) never does that.
//
// Causal left padding is explicit: the sequence is copied into a zero tensor
// k-1 positions to the right, so `x[s*t - m]` becomes the affine access
// `xp[s*t + (k-1) - m]`, with no bounds checks in the loop body.
//
//===----------------------------------------------------------------------===//

#include "dialect/HKTOps.h"
#include "dialect/Utils/LinalgBuilders.h"
#include "passes/conversion/Passes.h"
#include "passes/transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cmath>

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTLOWERTOLINALGPASS
#include "passes/conversion/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;
using namespace mlir::hkt;

namespace {

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

Value constantFloat(OpBuilder &b, Location loc, Type type, double value) {
  return floatConstant(b, loc, type, value);
}

/// A tensor of `type` filled with zeros (the accumulator of a contraction).
Value zeros(OpBuilder &b, Location loc, RankedTensorType type) {
  return zerosOf(b, loc, type);
}

/// `x` (B x T x D) shifted right by `pad` zero rows: B x (T + pad) x D.
Value padSequenceLeft(OpBuilder &b, Location loc, Value x, int64_t pad) {
  return padSequence(b, loc, x, pad, 0);
}

/// B x T x D -> B x T x H x d (head h owns columns [h*d, (h+1)*d)).
Value splitHeads(OpBuilder &b, Location loc, Value x, int64_t heads) {
  RankedTensorType type = tensorType(x);
  auto shape = type.getShape();
  auto split = RankedTensorType::get(
      {shape[0], shape[1], heads, shape[2] / heads}, type.getElementType());
  return tensor::ExpandShapeOp::create(b, loc, split, x,
                                       {{0}, {1}, {2, 3}});
}

Value mergeHeads(OpBuilder &b, Location loc, Value x) {
  return tensor::CollapseShapeOp::create(b, loc, x,
                                         {{0}, {1}, {2, 3}});
}

/// A C x K tap weight as K x C, so that a convolution whose channel loop is
/// innermost reads every operand along it (then hkt-cpu-codegen vectorises
/// it by rows).
Value tapsMajor(OpBuilder &b, Location loc, Value w) {
  RankedTensorType t = tensorType(w);
  auto type = RankedTensorType::get({t.getDimSize(1), t.getDimSize(0)},
                                    t.getElementType());
  Value init = tensor::EmptyOp::create(b, loc, type.getShape(),
                                       type.getElementType());
  return linalg::TransposeOp::create(b, loc, w, init,
                                     ArrayRef<int64_t>{1, 0})
      .getResult()[0];
}

/// SPEC 1: out[b,t,c] = bias[c] + sum_m w[c,m] * x[b, s*t - m, c].
struct LowerDownsample : OpRewritePattern<DownsampleOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(DownsampleOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rw.getContext();
    int64_t k = tensorType(op.getWeight()).getDimSize(1);
    int64_t s = op.getStride();
    Value xp = padSequenceLeft(rw, loc, op.getInput(), k - 1);

    AffineExpr b, t, c, m;
    bindDims(ctx, b, t, c);
    Type resultType = op.getType();
    // Start from the bias broadcast over (b, t), then accumulate the taps.
    Value biased =
        linalg::GenericOp::create(
            rw, loc, resultType, ValueRange{op.getBias()},
            ValueRange{op.getInit()},
            {indexingMap(3, {c}, ctx), indexingMap(3, {b, t, c}, ctx)}, {kPar, kPar, kPar},
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
    Value scale = constantFloat(rw, loc, elt, 1.0 / std::sqrt(double(headDim)));

    AffineExpr b, h, i, j, e;
    bindDims(ctx, b, h, i, j, e);
    auto scores = linalg::GenericOp::create(
        rw, loc, outType, ValueRange{q, k}, ValueRange{zeros(rw, loc, outType)},
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
    Value lambdaInit = tensor::EmptyOp::create(
        rw, loc, thetaType.getShape(), thetaType.getElementType());
    Value lambda = linalg::SoftmaxOp::create(rw, loc, thetaType, op.getTheta(),
                                             lambdaInit, /*dimension=*/1)
                       .getResult()[0];

    AffineExpr b, h, i, j;
    bindDims(ctx, b, h, i, j);
    SmallVector<Value> inputs(op.getScores());
    SmallVector<AffineMap> maps(inputs.size(), indexingMap(4, {b, h, i, j}, ctx));
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

/// SPEC 5: -inf where j > i (causal) or j >= lengths[b].
struct LowerMask : OpRewritePattern<MaskOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MaskOp op, PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rw.getContext();
    auto elt = cast<FloatType>(op.getType().getElementType());
    Value negInf = negativeInfinity(rw, loc, elt);
    AffineExpr b, h, i, j;
    bindDims(ctx, b, h, i, j);
    SmallVector<Value> inputs = {op.getInput()};
    SmallVector<AffineMap> maps = {indexingMap(4, {b, h, i, j}, ctx)};
    if (Value lengths = op.getLengths()) {
      inputs.push_back(lengths);
      maps.push_back(indexingMap(4, {b}, ctx));
    }
    maps.push_back(indexingMap(4, {b, h, i, j}, ctx));
    bool causal = op.getCausal();
    bool hasLengths = static_cast<bool>(op.getLengths());
    auto masked = linalg::GenericOp::create(
        rw, loc, op.getType(), inputs, ValueRange{op.getInit()}, maps,
        {kPar, kPar, kPar, kPar},
        [&](OpBuilder &nb, Location l, ValueRange args) {
          Value row = linalg::IndexOp::create(nb, l, 2);
          Value col = linalg::IndexOp::create(nb, l, 3);
          Value len;
          if (hasLengths)
            len = arith::IndexCastOp::create(nb, l, nb.getIndexType(), args[1]);
          Value drop = buildKeyMaskPredicate(nb, l, row, col, len, causal);
          linalg::YieldOp::create(
              nb, l,
              arith::SelectOp::create(nb, l, drop, negInf, args[0])
                  .getResult());
        });
    rw.replaceOp(op, masked.getResults());
    return success();
  }
};

/// SPEC 6: out[b,i,h] = sum_j P[b,h,i,j] V[b,j,h].
struct LowerAttend : OpRewritePattern<AttendOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttendOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rw.getContext();
    int64_t heads = tensorType(op.getProbs()).getDimSize(1);
    Value v = splitHeads(rw, loc, op.getValue(), heads);
    Value acc = splitHeads(rw, loc, op.getInit(), heads);
    acc = zeros(rw, loc, tensorType(acc));
    AffineExpr b, h, i, j, e;
    bindDims(ctx, b, h, i, j, e);
    auto attend = linalg::GenericOp::create(
        rw, loc, acc.getType(), ValueRange{op.getProbs(), v}, ValueRange{acc},
        {indexingMap(5, {b, h, i, j}, ctx), indexingMap(5, {b, j, h, e}, ctx),
         indexingMap(5, {b, i, h, e}, ctx)},
        {kPar, kPar, kPar, kRed, kPar},
        [](OpBuilder &nb, Location l, ValueRange args) {
          Value prod = arith::MulFOp::create(nb, l, args[0], args[1]);
          linalg::YieldOp::create(
              nb, l, arith::AddFOp::create(nb, l, args[2], prod).getResult());
        });
    rw.replaceOp(op, mergeHeads(rw, loc, attend.getResult(0)));
    return success();
  }
};

/// SPEC 7: out = beta[h] attn + (1 - beta[h]) causal_conv(V, u).
struct LowerHybrid : OpRewritePattern<HybridOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(HybridOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rw.getContext();
    RankedTensorType type = op.getType();
    Type elt = type.getElementType();
    int64_t kc = tensorType(op.getConvU()).getDimSize(1);
    int64_t heads = tensorType(op.getGamma()).getDimSize(0);
    int64_t headDim = type.getDimSize(2) / heads;
    Value vp = padSequenceLeft(rw, loc, op.getValue(), kc - 1);

    // Loops (b, i, m, c): the channels innermost.
    AffineExpr b, i, c, m;
    bindDims(ctx, b, i, m, c);
    Value conv =
        linalg::GenericOp::create(
            rw, loc, type, ValueRange{vp, tapsMajor(rw, loc, op.getConvU())},
            ValueRange{zeros(rw, loc, type)},
            {indexingMap(4, {b, i + (kc - 1) - m, c}, ctx),
             indexingMap(4, {m, c}, ctx), indexingMap(4, {b, i, c}, ctx)},
            {kPar, kPar, kRed, kPar},
            [](OpBuilder &nb, Location l, ValueRange args) {
              Value prod = arith::MulFOp::create(nb, l, args[0], args[1]);
              linalg::YieldOp::create(
                  nb, l,
                  arith::AddFOp::create(nb, l, args[2], prod).getResult());
            })
            .getResult(0);

    Value one = constantFloat(rw, loc, elt, 1.0);
    // beta = 1 / (1 + exp(-gamma)) once per channel (D values), so that the
    // mix reads every operand along the channels.
    int64_t dim = type.getDimSize(2);
    auto channels = RankedTensorType::get({dim}, elt);
    AffineExpr ch = getAffineDimExpr(0, ctx);
    Value beta =
        linalg::GenericOp::create(
            rw, loc, channels, ValueRange{op.getGamma()},
            ValueRange{tensor::EmptyOp::create(rw, loc, channels.getShape(), elt)},
            {indexingMap(1, {ch.floorDiv(headDim)}, ctx), indexingMap(1, {ch}, ctx)},
            {kPar},
            [&](OpBuilder &nb, Location l, ValueRange args) {
              Value negGamma = arith::NegFOp::create(nb, l, args[0]);
              Value denom = arith::AddFOp::create(
                  nb, l, one, math::ExpOp::create(nb, l, negGamma));
              linalg::YieldOp::create(
                  nb, l, arith::DivFOp::create(nb, l, one, denom).getResult());
            })
            .getResult(0);
    bindDims(ctx, b, i, c);
    auto mix = linalg::GenericOp::create(
        rw, loc, type, ValueRange{op.getAttn(), conv, beta},
        ValueRange{op.getInit()},
        {indexingMap(3, {b, i, c}, ctx), indexingMap(3, {b, i, c}, ctx),
         indexingMap(3, {c}, ctx), indexingMap(3, {b, i, c}, ctx)},
        {kPar, kPar, kPar},
        [&](OpBuilder &nb, Location l, ValueRange args) {
          // out = conv + beta * (attn - conv).
          Value beta = args[2];
          Value diff = arith::SubFOp::create(nb, l, args[0], args[1]);
          Value mixed = arith::AddFOp::create(
              nb, l, args[1], arith::MulFOp::create(nb, l, beta, diff));
          linalg::YieldOp::create(nb, l, mixed);
        });
    rw.replaceOp(op, mix.getResults());
    return success();
  }
};

struct HktLowerToLinalgPass
    : public mlir::hkt::impl::HktLowerToLinalgPassBase<HktLowerToLinalgPass> {
  void runOnOperation() override {
    Operation *root = getOperation();
    WalkResult leftover = root->walk([](AttentionOp op) {
      op.emitOpError("must be decomposed before lowering to linalg "
                     "(run hkt-decompose first)");
      return WalkResult::interrupt();
    });
    if (leftover.wasInterrupted())
      return signalPassFailure();
    // The fused ops have no reference lowering: they are what the fused
    // pipeline tiles (hkt-cpu-lower-online-attention).
    leftover = root->walk([](Operation *op) {
      if (!isa<FusedAttentionOp, OnlineAttentionOp, OnlineAttentionBackwardOp>(
              op))
        return WalkResult::advance();
      op->emitOpError("is lowered by hkt-cpu-lower-online-attention (the fused "
                      "pipeline), not by the reference lowering; a tile of "
                      "one batch row and head is decomposed by hkt-decompose");
      return WalkResult::interrupt();
    });
    if (leftover.wasInterrupted())
      return signalPassFailure();

    ConversionTarget target(getContext());
    target.addIllegalDialect<HKTDialect>();
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect,
                           math::MathDialect, tensor::TensorDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    RewritePatternSet patterns(&getContext());
    populateHktToLinalgPatterns(patterns);
    if (failed(applyPartialConversion(root, target, std::move(patterns))))
      return signalPassFailure();

    // linalg.softmax has no loop lowering of its own: decompose it into
    // generics (max, exp(x - max), sum, divide), upstream's decomposition.
    if (failed(decomposeAggregatedOps(root, [](Operation *op) {
          return isa<linalg::SoftmaxOp>(op);
        })))
      return signalPassFailure();
  }
};
} // namespace

void mlir::hkt::populateHktToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerDownsample, LowerLevelScores, LowerUpsample,
               LowerConvexFuse, LowerMask, LowerAttend, LowerHybrid>(
      patterns.getContext());
  populateHktModelToLinalgPatterns(patterns);
}
