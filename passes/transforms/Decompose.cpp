//===- Decompose.cpp - hkt-decompose --------------------------------------===//
//
// A thin walker: the decompositions live on the ops
// (AttentionOp / OnlineAttentionOp::decomposeOperation, AggregatedOpInterface).
//
//===----------------------------------------------------------------------===//

#include "dialect/HKTOps.h"
#include "passes/transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTDECOMPOSEPASS
#include "passes/transforms/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;
using namespace mlir::hkt;

LogicalResult mlir::hkt::decomposeAggregatedOps(
    Operation *root, llvm::function_ref<bool(Operation *)> select) {
  SmallVector<linalg::AggregatedOpInterface> ops;
  root->walk([&](linalg::AggregatedOpInterface op) {
    if (select(op))
      ops.push_back(op);
  });
  IRRewriter rewriter(root->getContext());
  for (linalg::AggregatedOpInterface op : ops) {
    rewriter.setInsertionPoint(op);
    FailureOr<SmallVector<Value>> values = op.decomposeOperation(rewriter);
    if (failed(values))
      return failure();
    rewriter.replaceOp(op, *values);
  }
  return success();
}

namespace {
struct HktDecomposePass
    : public mlir::hkt::impl::HktDecomposePassBase<HktDecomposePass> {
  void runOnOperation() override {
    if (failed(decomposeAggregatedOps(getOperation(), [](Operation *op) {
          if (auto tile = dyn_cast<OnlineAttentionOp>(op))
            return tile.isDecomposableTile();
          if (auto tile = dyn_cast<OnlineAttentionBackwardOp>(op))
            return tile.isDecomposableTile();
          return isa<AttentionOp, FusedAttentionOp>(op);
        })))
      signalPassFailure();
  }
};
} // namespace
