//===- Fuse.cpp - hkt-fuse ------------------------------------------------===//
//
// The step-op chain of SPEC 3-6 -> hkt.online_attention (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "dialect/HKTOps.h"
#include "dialect/LinalgBuilders.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTFUSEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;
using namespace mlir::hkt;

namespace {

/// The pieces of a matched chain.
struct Chain {
  SmallVector<Value> queries, keys;
  SmallVector<int64_t> factors;
  Value theta, lengths;
  bool causal = false;
};

template <typename OpTy> OpTy singleUseProducer(Value v) {
  auto op = v.getDefiningOp<OpTy>();
  return op && v.hasOneUse() ? op : OpTy();
}

FailureOr<Chain> matchChain(AttendOp attend) {
  Chain chain;
  auto softmax = singleUseProducer<linalg::SoftmaxOp>(attend.getProbs());
  if (!softmax || softmax.getDimension() != 3)
    return failure();
  auto mask = singleUseProducer<MaskOp>(softmax.getInput());
  if (!mask)
    return failure();
  auto fuse = singleUseProducer<ConvexFuseOp>(mask.getInput());
  if (!fuse)
    return failure();
  for (Value score : fuse.getScores()) {
    int64_t factor = 1;
    if (auto up = singleUseProducer<UpsampleOp>(score)) {
      factor = up.getFactor();
      score = up.getInput();
    }
    auto level = singleUseProducer<LevelScoresOp>(score);
    if (!level)
      return failure();
    chain.queries.push_back(level.getQuery());
    chain.keys.push_back(level.getKey());
    chain.factors.push_back(factor);
  }
  // The online form indexes level l by floor(i / f_l) from a full-resolution
  // level 0.
  if (chain.factors.front() != 1)
    return failure();
  chain.theta = fuse.getTheta();
  chain.lengths = mask.getLengths();
  chain.causal = mask.getCausal();
  return chain;
}

struct FuseAttentionChain : OpRewritePattern<AttendOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttendOp attend,
                                PatternRewriter &rw) const override {
    FailureOr<Chain> chain = matchChain(attend);
    if (failed(chain))
      return rw.notifyMatchFailure(attend, "not the SPEC 3-6 chain");
    Location loc = attend.getLoc();
    MLIRContext *ctx = rw.getContext();
    auto probsType = cast<RankedTensorType>(attend.getProbs().getType());
    auto outType = attend.getType();
    Type elt = outType.getElementType();
    int64_t batch = probsType.getDimSize(0), heads = probsType.getDimSize(1),
            tq = probsType.getDimSize(2);
    int64_t dim = outType.getDimSize(2), headDim = dim / heads;
    // The online form and its lowering are static today (dynamic sequence
    // lengths are a later addition); such chains stay on the reference path.
    if (!probsType.hasStaticShape() || !outType.hasStaticShape() ||
        !cast<RankedTensorType>(attend.getValue().getType()).hasStaticShape())
      return rw.notifyMatchFailure(attend, "needs static shapes");

    // lambda = softmax(theta) over levels.
    auto thetaType = cast<RankedTensorType>(chain->theta.getType());
    Value lambda =
        linalg::SoftmaxOp::create(
            rw, loc, thetaType, chain->theta,
            tensor::EmptyOp::create(rw, loc, thetaType.getShape(), elt), 1)
            .getResult()[0];

    // query_l * lambda[h, l] / sqrt(d), head h = column floordiv d.
    AffineExpr b, t, c;
    bindDims(ctx, b, t, c);
    Value scale =
        arith::ConstantOp::create(rw, loc, elt,
                                  rw.getFloatAttr(elt, 1.0 / std::sqrt(double(headDim))));
    SmallVector<Value> queries;
    for (auto [l, q] : llvm::enumerate(chain->queries)) {
      auto qType = cast<RankedTensorType>(q.getType());
      Value init = tensor::EmptyOp::create(rw, loc, qType.getShape(), elt);
      queries.push_back(
          linalg::GenericOp::create(
              rw, loc, qType, ValueRange{q, lambda}, ValueRange{init},
              {indexingMap(3, {b, t, c}, ctx),
               indexingMap(3, {c.floorDiv(headDim), getAffineConstantExpr(l, ctx)},
                   ctx),
               indexingMap(3, {b, t, c}, ctx)},
              {kPar, kPar, kPar},
              [&](OpBuilder &nb, Location nl, ValueRange args) {
                Value w = arith::MulFOp::create(nb, nl, args[1], scale);
                linalg::YieldOp::create(
                    nb, nl,
                    arith::MulFOp::create(nb, nl, args[0], w).getResult());
              })
              .getResult(0));
    }

    // Destinations: acc = 0, max = lowest finite value, sum = 0.
    auto floatType = cast<FloatType>(elt);
    Value zero = floatConstant(rw, loc, elt, 0.0);
    Value acc = filledTensor(rw, loc, {batch, tq, dim}, elt, zero);
    Value max = filledTensor(rw, loc, {batch, heads, tq}, elt,
                             lowestFinite(rw, loc, floatType));
    Value sum = filledTensor(rw, loc, {batch, heads, tq}, elt, zero);
    auto online = OnlineAttentionOp::create(
        rw, loc, TypeRange{acc.getType(), max.getType(), sum.getType()},
        queries, chain->keys, attend.getValue(), chain->lengths,
        /*query_offset=*/Value(), /*key_offset=*/Value(), acc, max, sum,
        rw.getDenseI64ArrayAttr(chain->factors), chain->causal);

    // attn = acc / sum; a row with every key masked has sum 0 and gives 0.
    Value normalised =
        linalg::GenericOp::create(
            rw, loc, outType,
            ValueRange{online.getResultAcc(), online.getResultSum()},
            ValueRange{attend.getInit()},
            {indexingMap(3, {b, t, c}, ctx), indexingMap(3, {b, c.floorDiv(headDim), t}, ctx),
             indexingMap(3, {b, t, c}, ctx)},
            {kPar, kPar, kPar},
            [&](OpBuilder &nb, Location nl, ValueRange args) {
              Value zeroV = floatConstant(nb, nl, elt, 0.0);
              Value empty = arith::CmpFOp::create(
                  nb, nl, arith::CmpFPredicate::OLE, args[1], zeroV);
              Value div = arith::DivFOp::create(nb, nl, args[0], args[1]);
              linalg::YieldOp::create(
                  nb, nl,
                  arith::SelectOp::create(nb, nl, empty, zeroV, div)
                      .getResult());
            })
            .getResult(0);
    rw.replaceOp(attend, normalised);
    return success();
  }
};

struct HktFusePass : public mlir::hkt::impl::HktFusePassBase<HktFusePass> {
  void runOnOperation() override {
    // hkt.attention is the same chain, once decomposed.
    if (failed(decomposeAggregatedOps(getOperation(), [](Operation *op) {
          return isa<AttentionOp>(op);
        })))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    populateHktFusePatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace

void mlir::hkt::populateHktFusePatterns(RewritePatternSet &patterns) {
  patterns.add<FuseAttentionChain>(patterns.getContext());
}
