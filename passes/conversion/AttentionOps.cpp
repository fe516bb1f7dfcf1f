//===- AttentionOps.cpp - Masking, attention and the hybrid to linalg -----===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// hkt-lower-to-linalg for SPEC's masking (6), the softmax attention (7) and
// the per-head hybrid with the causal convolution (8), each as linalg on
// tensors; the score matrices are materialised (B x H x T x T), which the
// fused path (hkt-fuse) never does.
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

/// SPEC 5: -inf where j > i (causal) or j >= lengths[b].
struct LowerMask : OpRewritePattern<MaskOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MaskOp op, PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    auto elt = cast<FloatType>(op.getType().getElementType());
    Value negInf = negativeInfinity(rw, loc, elt);
    rw.replaceOp(op, buildKeyMaskSelect(rw, loc, op.getInput(), op.getLengths(),
                                        op.getInit(), op.getCausal(), negInf));
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
    acc = zerosLike(rw, loc, acc);
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
    Value vp = padSequence(rw, loc, op.getValue(), kc - 1, 0);

    // Loops (b, i, m, c): the channels innermost.
    AffineExpr b, i, c, m;
    bindDims(ctx, b, i, m, c);
    Value conv =
        linalg::GenericOp::create(
            rw, loc, type, ValueRange{vp, tapsMajor(rw, loc, op.getConvU())},
            ValueRange{zerosLike(rw, loc, op.getInit())},
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

    Value one = floatConstant(rw, loc, elt, 1.0);
    // beta = 1 / (1 + exp(-gamma)) once per channel (D values), so that the
    // mix reads every operand along the channels.
    int64_t dim = type.getDimSize(2);
    auto channels = RankedTensorType::get({dim}, elt);
    AffineExpr ch = getAffineDimExpr(0, ctx);
    Value beta =
        linalg::GenericOp::create(
            rw, loc, channels, ValueRange{op.getGamma()},
            ValueRange{
                tensor::EmptyOp::create(rw, loc, channels.getShape(), elt)},
            {indexingMap(1, {ch.floorDiv(headDim)}, ctx),
             indexingMap(1, {ch}, ctx)},
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
        {kPar, kPar, kPar}, [&](OpBuilder &nb, Location l, ValueRange args) {
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

} // namespace

void mlir::hkt::populateHktAttentionOpsToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<LowerMask, LowerAttend, LowerHybrid>(patterns.getContext());
}
