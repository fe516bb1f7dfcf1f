//===- Decompose.cpp - hkt-decompose --------------------------------------===//
//
// A thin walker: the decomposition itself lives on the op
// (AttentionOp::decomposeOperation, AggregatedOpInterface).
//
//===----------------------------------------------------------------------===//

#include "dialect/HKTOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTDECOMPOSEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;
using namespace mlir::hkt;

namespace {
struct HktDecomposePass
    : public mlir::hkt::impl::HktDecomposePassBase<HktDecomposePass> {
  void runOnOperation() override {
    SmallVector<AttentionOp> ops;
    getOperation()->walk([&](AttentionOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (AttentionOp op : ops) {
      rewriter.setInsertionPoint(op);
      FailureOr<SmallVector<Value>> values = op.decomposeOperation(rewriter);
      if (failed(values))
        return signalPassFailure();
      rewriter.replaceOp(op, *values);
    }
  }
};
} // namespace
