//===- LowerOnlineAttention.cpp - hkt-cpu-lower-online-attention ----------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// The pass (see Passes.td): hkt.fused_attention decomposed into
// hkt.online_attention and its normalisation, then every online op lowered
// to tiled loops, forward (LowerAttentionForward.cpp) and backward
// (LowerAttentionBackward.cpp).
//
//===----------------------------------------------------------------------===//

#include "dialect/HKTOps.h"
#include "passes/codegen/cpu/AttentionLowering.h"
#include "passes/codegen/cpu/Passes.h"
#include "passes/transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTCPULOWERONLINEATTENTIONPASS
#include "passes/codegen/cpu/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;
using namespace mlir::hkt;

namespace {

struct HktCpuLowerOnlineAttentionPass
    : public mlir::hkt::impl::HktCpuLowerOnlineAttentionPassBase<
          HktCpuLowerOnlineAttentionPass> {
  using HktCpuLowerOnlineAttentionPassBase::HktCpuLowerOnlineAttentionPassBase;
  void runOnOperation() override {
    if (tileQ < 1 || tileK < 1) {
      getOperation()->emitError("tile-q and tile-k must be >= 1");
      return signalPassFailure();
    }
    // hkt.fused_attention -> hkt.online_attention and its normalisation.
    if (failed(decomposeAggregatedOps(getOperation(), [](Operation *op) {
          return isa<FusedAttentionOp>(op);
        })))
      return signalPassFailure();
    SmallVector<OnlineAttentionOp> ops;
    SmallVector<OnlineAttentionBackwardOp> backward;
    getOperation()->walk([&](Operation *op) {
      if (auto forward = dyn_cast<OnlineAttentionOp>(op))
        ops.push_back(forward);
      else if (auto b = dyn_cast<OnlineAttentionBackwardOp>(op))
        backward.push_back(b);
    });
    IRRewriter rewriter(&getContext());
    for (OnlineAttentionOp op : ops)
      if (failed(cpu::lowerOnlineAttention(op, rewriter, tileQ, tileK)))
        return signalPassFailure();
    for (OnlineAttentionBackwardOp op : backward)
      if (failed(cpu::lowerOnlineAttentionBackward(op, rewriter, tileQ, tileK)))
        return signalPassFailure();
  }
};
} // namespace
