//===- LowerToLinalg.cpp - hkt-lower-to-linalg ----------------------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// The reference lowering: every hkt step op becomes linalg.generic ops on
// tensors, following shared/SPEC.md equation by equation. The patterns are
// one file per op family (Rewriters.h); this is the pass that applies them.
//
//===----------------------------------------------------------------------===//

#include "dialect/HKTOps.h"
#include "dialect/Utils/KernelNames.h"
#include "passes/conversion/Passes.h"
#include "passes/conversion/Rewriters.h"
#include "passes/transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTLOWERTOLINALGPASS
#include "passes/conversion/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;
using namespace mlir::hkt;

namespace {

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
    markOrigins(root, [](Operation *op) {
      return isa<HKTDialect>(op->getDialect()) || isa<linalg::SoftmaxOp>(op);
    });
    LogicalResult converted =
        applyPartialConversion(root, target, std::move(patterns));
    // linalg.softmax has no loop lowering of its own: decompose it into
    // generics (max, exp(x - max), sum, divide), upstream's decomposition.
    if (succeeded(converted))
      converted = decomposeAggregatedOps(
          root, [](Operation *op) { return isa<linalg::SoftmaxOp>(op); });
    tagKernels(root);
    if (failed(converted))
      return signalPassFailure();
  }
};
} // namespace

void mlir::hkt::populateHktToLinalgPatterns(RewritePatternSet &patterns) {
  populateHktLevelOpsToLinalgPatterns(patterns);
  populateHktAttentionOpsToLinalgPatterns(patterns);
  populateHktModelOpsToLinalgPatterns(patterns);
}
