//===- ModelOps.cpp - The classifier model's ops to linalg ----------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// The reference lowering of the classifier model's ops (SPEC "The classifier
// model"): embedding, LayerNorm, GELU, the masked mean-pool, the mean
// cross-entropy and the token lengths, each as linalg.generic on tensors.
// Part of hkt-lower-to-linalg (Rewriters.h).
//
//===----------------------------------------------------------------------===//

#include "dialect/HKTOps.h"
#include "dialect/Utils/LinalgBuilders.h"
#include "dialect/Utils/ModelMath.h"
#include "passes/conversion/LinalgLoweringUtils.h"
#include "passes/conversion/Rewriters.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::hkt;
using namespace mlir::hkt::conversion;

namespace {

/// out[b,t,c] = table[tokens[b,t], c] + pos[t,c].
struct LowerEmbed : OpRewritePattern<EmbedOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(EmbedOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rw.getContext();
    AffineExpr b, t, c;
    bindDims(ctx, b, t, c);
    Value table = op.getTable();
    // The first T of the P positions (T may be dynamic).
    RankedTensorType type = op.getType();
    Value pos = op.getPos();
    if (tensorType(pos).getDimSize(0) != type.getDimSize(1)) {
      SmallVector<OpFoldResult> sizes = {
          tensor::getMixedSize(rw, loc, op.getTokens(), 1),
          rw.getIndexAttr(type.getDimSize(2))};
      pos = tensor::ExtractSliceOp::create(
          rw, loc,
          RankedTensorType::get({type.getDimSize(1), type.getDimSize(2)},
                                type.getElementType()),
          pos, SmallVector<OpFoldResult>(2, rw.getIndexAttr(0)), sizes,
          SmallVector<OpFoldResult>(2, rw.getIndexAttr(1)));
    }
    Value out = tensorGeneric(
        rw, loc, type, {op.getTokens(), pos},
        {indexingMap(3, {b, t}, ctx), indexingMap(3, {t, c}, ctx),
         indexingMap(3, {b, t, c}, ctx)},
        {kPar, kPar, kPar}, [&](OpBuilder &nb, Location l, ValueRange a) {
          Value row =
              arith::IndexCastOp::create(nb, l, nb.getIndexType(), a[0]);
          Value col = linalg::IndexOp::create(nb, l, 2);
          Value e =
              tensor::ExtractOp::create(nb, l, table, ValueRange{row, col});
          return arith::AddFOp::create(nb, l, e, a[1]).getResult();
        });
    rw.replaceOp(op, out);
    return success();
  }
};

struct LowerLayerNorm : OpRewritePattern<LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LayerNormOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    RowStats stats = layerNormStats(rw, loc, op.getInput(),
                                    op.getEpsilon().convertToDouble());
    RankedTensorType type = op.getType();
    unsigned rank = type.getRank();
    MLIRContext *ctx = rw.getContext();
    AffineMap all = AffineMap::getMultiDimIdentityMap(rank, ctx);
    AffineMap row = all.dropResult(rank - 1);
    AffineMap col = indexingMap(rank, {getAffineDimExpr(rank - 1, ctx)}, ctx);
    Value out = tensorGeneric(
        rw, loc, type,
        {op.getInput(), stats.mean, stats.rstd, op.getWeight(), op.getBias()},
        {all, row, row, col, col, all},
        SmallVector<utils::IteratorType>(rank, kPar),
        [](OpBuilder &nb, Location l, ValueRange a) {
          Value centred = arith::SubFOp::create(nb, l, a[0], a[1]);
          Value xhat = arith::MulFOp::create(nb, l, centred, a[2]);
          Value scaledV = arith::MulFOp::create(nb, l, xhat, a[3]);
          return arith::AddFOp::create(nb, l, scaledV, a[4]).getResult();
        });
    rw.replaceOp(op, out);
    return success();
  }
};

struct LowerGelu : OpRewritePattern<GeluOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GeluOp op, PatternRewriter &rw) const override {
    RankedTensorType type = op.getType();
    unsigned rank = type.getRank();
    AffineMap all = AffineMap::getMultiDimIdentityMap(rank, rw.getContext());
    Value out =
        tensorGeneric(rw, op.getLoc(), type, {op.getInput()}, {all, all},
                      SmallVector<utils::IteratorType>(rank, kPar),
                      [](OpBuilder &nb, Location l, ValueRange a) {
                        return geluValue(nb, l, a[0]);
                      });
    rw.replaceOp(op, out);
    return success();
  }
};

/// out[b,c] = sum_{t < len[b]} x[b,t,c] / len[b].
struct LowerMeanPool : OpRewritePattern<MeanPoolOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MeanPoolOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rw.getContext();
    AffineExpr b, c, t;
    bindDims(ctx, b, c, t);
    RankedTensorType type = op.getType();
    Value zero = floatConstant(rw, loc, type.getElementType(), 0.0);
    Value sum = tensorGeneric(
        rw, loc, type, {op.getInput(), op.getLengths()},
        {indexingMap(3, {b, t, c}, ctx), indexingMap(3, {b}, ctx),
         indexingMap(3, {b, c}, ctx)},
        {kPar, kPar, kRed}, [&](OpBuilder &nb, Location l, ValueRange a) {
          Value pos = linalg::IndexOp::create(nb, l, 2);
          Value len =
              arith::IndexCastOp::create(nb, l, nb.getIndexType(), a[1]);
          Value valid =
              arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt, pos, len);
          return arith::SelectOp::create(nb, l, valid, a[0], zero).getResult();
        });
    Value out = tensorGeneric(
        rw, loc, type, {sum, op.getLengths()},
        {indexingMap(2, {b, c}, ctx), indexingMap(2, {b}, ctx),
         indexingMap(2, {b, c}, ctx)},
        {kPar, kPar}, [&](OpBuilder &nb, Location l, ValueRange a) {
          Value len =
              arith::SIToFPOp::create(nb, l, type.getElementType(), a[1]);
          return arith::DivFOp::create(nb, l, a[0], len).getResult();
        });
    rw.replaceOp(op, out);
    return success();
  }
};

/// out = mean_b (logsumexp_k logits[b,k] - logits[b, labels[b]]).
struct LowerCrossEntropy : OpRewritePattern<CrossEntropyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CrossEntropyOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rw.getContext();
    RankedTensorType logitsType = tensorType(op.getLogits());
    int64_t batch = logitsType.getDimSize(0);
    Value lse = rowLogSumExp(rw, loc, op.getLogits());
    Value logits = op.getLogits();
    AffineExpr b;
    bindDims(ctx, b);
    double scale = 1.0 / static_cast<double>(batch);
    Type elt = logitsType.getElementType();
    Value out = tensorGeneric(
        rw, loc, op.getType(), {lse, op.getLabels()},
        {indexingMap(1, {b}, ctx), indexingMap(1, {b}, ctx),
         AffineMap::get(1, 0, {}, ctx)},
        {kRed}, [&](OpBuilder &nb, Location l, ValueRange a) {
          Value row = linalg::IndexOp::create(nb, l, 0);
          Value label =
              arith::IndexCastOp::create(nb, l, nb.getIndexType(), a[1]);
          Value picked =
              tensor::ExtractOp::create(nb, l, logits, ValueRange{row, label});
          Value nll = arith::SubFOp::create(nb, l, a[0], picked);
          return arith::MulFOp::create(nb, l, nll,
                                       floatConstant(nb, l, elt, scale))
              .getResult();
        });
    rw.replaceOp(op, out);
    return success();
  }
};

/// out[b] = min_t (tokens[b,t] == 0 ? t : T).
struct LowerTokenLengths : OpRewritePattern<TokenLengthsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TokenLengthsOp op,
                                PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rw.getContext();
    RankedTensorType tokType = tensorType(op.getTokens());
    RankedTensorType type = op.getType();
    Type outElt = type.getElementType(), tokElt = tokType.getElementType();
    // T as the length of a row without padding (read at run time when
    // dynamic).
    int64_t t = tokType.getDimSize(1);
    Value full = ShapedType::isDynamic(t)
                     ? arith::IndexCastOp::create(
                           rw, loc, outElt,
                           tensor::DimOp::create(rw, loc, op.getTokens(), 1))
                           .getResult()
                     : arith::ConstantOp::create(rw, loc, outElt,
                                                 rw.getIntegerAttr(outElt, t))
                           .getResult();
    Value init =
        linalg::FillOp::create(rw, loc, full, op.getInit()).getResult(0);
    AffineExpr b, p;
    bindDims(ctx, b, p);
    auto generic = linalg::GenericOp::create(
        rw, loc, type, ValueRange{op.getTokens()}, ValueRange{init},
        {indexingMap(2, {b, p}, ctx), indexingMap(2, {b}, ctx)}, {kPar, kRed},
        [&](OpBuilder &nb, Location l, ValueRange a) {
          Value zero = arith::ConstantOp::create(nb, l, tokElt,
                                                 nb.getIntegerAttr(tokElt, 0));
          Value pad = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                            a[0], zero);
          Value pos = arith::IndexCastOp::create(
              nb, l, outElt, linalg::IndexOp::create(nb, l, 1));
          Value cand = arith::SelectOp::create(nb, l, pad, pos, full);
          linalg::YieldOp::create(
              nb, l, arith::MinSIOp::create(nb, l, a[1], cand).getResult());
        });
    rw.replaceOp(op, generic.getResults());
    return success();
  }
};

} // namespace

void mlir::hkt::populateHktModelOpsToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<LowerEmbed, LowerLayerNorm, LowerGelu, LowerMeanPool,
               LowerCrossEntropy, LowerTokenLengths>(patterns.getContext());
}
