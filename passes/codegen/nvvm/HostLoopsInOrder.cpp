//===- HostLoopsInOrder.cpp - host scf.forall -> scf.for over tensors -----===//
//
// The GPU path's host code launches kernels in stream order; a model entry's
// scf.forall over its rows (one OpenMP task per row on the CPU) becomes
// nested scf.for loops whose iteration arguments are the forall's shared
// outputs, each tensor.parallel_insert_slice a tensor.insert_slice into the
// running value (Passes.td says why this is the same result).
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/nvvm/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTNVVMHOSTLOOPSINORDERPASS
#include "passes/codegen/nvvm/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;

namespace {

/// `forall`'s body at the induction variables `ivs` (mapped in `map`) into
/// the values `outs` of its shared outputs; returns their new values.
SmallVector<Value> inlineIteration(RewriterBase &rewriter, Location loc,
                                   scf::ForallOp forall, IRMapping &map,
                                   SmallVector<Value> outs) {
  for (auto [arg, value] : llvm::zip(forall.getRegionIterArgs(), outs))
    map.map(arg, value);
  for (Operation &op : forall.getBody()->without_terminator())
    rewriter.clone(op, map);
  for (Operation &op : forall.getTerminator().getYieldingOps()) {
    auto insert = cast<tensor::ParallelInsertSliceOp>(op);
    auto dest = cast<BlockArgument>(insert.getDest());
    unsigned k = dest.getArgNumber() - forall.getRank();
    auto mapped = [&](ArrayRef<OpFoldResult> values) {
      SmallVector<OpFoldResult> result;
      for (OpFoldResult v : values)
        result.push_back(isa<Value>(v) ? map.lookupOrDefault(cast<Value>(v))
                                       : v);
      return result;
    };
    outs[k] = tensor::InsertSliceOp::create(
        rewriter, loc, map.lookupOrDefault(insert.getSource()), outs[k],
        mapped(insert.getMixedOffsets()), mapped(insert.getMixedSizes()),
        mapped(insert.getMixedStrides()));
  }
  return outs;
}

/// Loops `dim`.. of `forall` as nested scf.for around its body, the shared
/// outputs' values `outs` carried through; returns their final values.
SmallVector<Value> buildLoops(RewriterBase &rewriter, Location loc,
                              scf::ForallOp forall, unsigned dim,
                              IRMapping &map, ValueRange outs) {
  if (dim == forall.getRank())
    return inlineIteration(rewriter, loc, forall, map, llvm::to_vector(outs));
  auto value = [&](OpFoldResult v) {
    return getValueOrCreateConstantIndexOp(rewriter, loc, v);
  };
  auto loop = scf::ForOp::create(
      rewriter, loc, value(forall.getMixedLowerBound()[dim]),
      value(forall.getMixedUpperBound()[dim]),
      value(forall.getMixedStep()[dim]), outs,
      [&](OpBuilder &, Location, Value iv, ValueRange iterArgs) {
        map.map(forall.getInductionVars()[dim], iv);
        SmallVector<Value> next =
            buildLoops(rewriter, loc, forall, dim + 1, map, iterArgs);
        scf::YieldOp::create(rewriter, loc, next);
      });
  return SmallVector<Value>(loop.getResults());
}

struct HktNvvmHostLoopsInOrderPass
    : public mlir::hkt::impl::HktNvvmHostLoopsInOrderPassBase<
          HktNvvmHostLoopsInOrderPass> {
  void runOnOperation() override {
    // Outermost first (post-order would visit inner loops of a body that is
    // about to be cloned); an inner forall is cloned with its parent and
    // converted on a later sweep.
    bool changed = true;
    while (changed) {
      changed = false;
      SmallVector<scf::ForallOp> outermost;
      getOperation()->walk<WalkOrder::PreOrder>([&](Operation *op) {
        if (isa<gpu::LaunchOp>(op))
          return WalkResult::skip();
        if (auto forall = dyn_cast<scf::ForallOp>(op)) {
          outermost.push_back(forall);
          return WalkResult::skip();
        }
        return WalkResult::advance();
      });
      IRRewriter rewriter(&getContext());
      for (scf::ForallOp forall : outermost) {
        if (forall.getMapping()) {
          forall.emitOpError("with a device mapping cannot run on the host");
          return signalPassFailure();
        }
        rewriter.setInsertionPoint(forall);
        IRMapping map;
        SmallVector<Value> results = buildLoops(
            rewriter, forall.getLoc(), forall, 0, map, forall.getOutputs());
        rewriter.replaceOp(forall, results);
        changed = true;
      }
    }
  }
};
} // namespace
