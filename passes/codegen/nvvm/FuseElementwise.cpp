//===- FuseElementwise.cpp - element-wise chains -> one generic -----------===//
//
// Upstream's element-wise fusion of linalg.generic producers into their
// consumers, on tensors before bufferization, so that each chain becomes
// one GPU kernel instead of one per op (Passes.td says what is fused and
// what is left alone, and why).
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/nvvm/Passes.h"

#include "dialect/HKTDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTNVVMFUSEELEMENTWISEPASS
#include "passes/codegen/nvvm/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;

namespace {

/// Fuses one single-use linalg.generic producer into `consumer`.
struct FuseGenericProducer : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp consumer,
                                PatternRewriter &rewriter) const override {
    for (OpOperand &operand : consumer->getOpOperands()) {
      auto producer = operand.get().getDefiningOp<linalg::GenericOp>();
      if (!producer || !producer->hasOneUse() ||
          !linalg::areElementwiseOpsFusable(&operand))
        continue;
      StringAttr tag = consumer->getAttrOfType<StringAttr>(hkt::kKernelAttr);
      if (!tag)
        tag = producer->getAttrOfType<StringAttr>(hkt::kKernelAttr);
      FailureOr<linalg::ElementwiseOpFusionResult> fused =
          linalg::fuseElementwiseOps(rewriter, &operand);
      if (failed(fused))
        continue;
      if (tag)
        fused->fusedOp->setAttr(hkt::kKernelAttr, tag);
      // The consumer's results; the producer's only use was the consumer.
      for (auto [original, replacement] : fused->replacements)
        if (original.getDefiningOp() == consumer.getOperation())
          rewriter.replaceAllUsesWith(original, replacement);
      rewriter.eraseOp(consumer);
      rewriter.eraseOp(producer);
      return success();
    }
    return failure();
  }
};

struct HktNvvmFuseElementwisePass
    : public mlir::hkt::impl::HktNvvmFuseElementwisePassBase<
          HktNvvmFuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseGenericProducer>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
