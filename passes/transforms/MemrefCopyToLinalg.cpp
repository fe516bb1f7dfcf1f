//===- MemrefCopyToLinalg.cpp - hkt-memref-copy-to-linalg -----------------===//
//
// Strided memref.copy -> linalg.copy, so a compiled module needs no runtime
// library beyond libc and libm (see the pass description).
//
//===----------------------------------------------------------------------===//

#include "passes/transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTMEMREFCOPYTOLINALGPASS
#include "passes/transforms/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;

namespace {
struct StridedCopyToLinalg : OpRewritePattern<memref::CopyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(memref::CopyOp op,
                                PatternRewriter &rewriter) const override {
    auto contiguous = [](Value v) {
      auto type = dyn_cast<MemRefType>(v.getType());
      return type && type.getLayout().isIdentity();
    };
    if (contiguous(op.getSource()) && contiguous(op.getTarget()))
      return failure();
    rewriter.replaceOpWithNewOp<linalg::CopyOp>(op, op.getSource(),
                                                op.getTarget());
    return success();
  }
};

struct HktMemrefCopyToLinalgPass
    : public mlir::hkt::impl::HktMemrefCopyToLinalgPassBase<
          HktMemrefCopyToLinalgPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<StridedCopyToLinalg>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
