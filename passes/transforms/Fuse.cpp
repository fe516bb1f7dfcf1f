//===- Fuse.cpp - hkt-fuse ------------------------------------------------===//
//
// The step-op chain of SPEC 3-6 -> hkt.online_attention (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "dialect/HKTOps.h"
#include "dialect/Utils/LinalgBuilders.h"
#include "passes/transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTFUSEPASS
#include "passes/transforms/Passes.h.inc"
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
    auto probsType = cast<RankedTensorType>(attend.getProbs().getType());
    auto outType = attend.getType();
    Type elt = outType.getElementType();
    // The online form tiles the sequences: they may be dynamic, the batch,
    // the heads and the model width may not (the reference path takes
    // those).
    auto valueType = cast<RankedTensorType>(attend.getValue().getType());
    if (probsType.isDynamicDim(0) || probsType.isDynamicDim(1) ||
        outType.isDynamicDim(2) || valueType.isDynamicDim(2))
      return rw.notifyMatchFailure(attend,
                                   "needs a static batch, heads and width");

    // lambda = softmax(theta) over levels.
    auto thetaType = cast<RankedTensorType>(chain->theta.getType());
    Value lambda =
        linalg::SoftmaxOp::create(
            rw, loc, thetaType, chain->theta,
            tensor::EmptyOp::create(rw, loc, thetaType.getShape(), elt), 1)
            .getResult()[0];
    SmallVector<OpFoldResult> probSizes =
        tensor::getMixedSizes(rw, loc, attend.getProbs());
    Value lseInit = tensor::EmptyOp::create(
        rw, loc, ArrayRef<OpFoldResult>(probSizes).take_front(3), elt);
    auto fused = FusedAttentionOp::create(
        rw, loc, TypeRange{outType, lseInit.getType()}, chain->queries,
        chain->keys, attend.getValue(), lambda, chain->lengths,
        attend.getInit(), lseInit, rw.getDenseI64ArrayAttr(chain->factors),
        chain->causal);
    Value normalised = fused.getResult();
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
