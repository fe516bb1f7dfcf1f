//===- HoistVectorAccumulators.cpp - hkt-cpu-hoist-vector-accumulators --------===//
//
// Keeps a matmul's accumulator in registers across its K loop: a
// vector.transfer_read / vector.transfer_write pair on the same loop-invariant
// location becomes a loop-carried vector (see the pass description).
//
// Upstream's hoistRedundantVectorTransfers does the same rewrite but refuses
// whenever the accumulator's buffer is, or has, a view anywhere in the
// function (its stand-in for alias analysis); every projection of the layer
// writes into a buffer that is later reshaped, so it never fired there. Here
// aliasing is decided on the buffers the views come from.
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/cpu/BufferAliasing.h"
#include "passes/codegen/cpu/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTCPUHOISTVECTORACCUMULATORSPASS
#include "passes/codegen/cpu/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;
using mlir::hkt::mayAlias;

namespace {

/// No op of `loop` but `read` and `write` may touch memory `base` may share.
bool onlyAccess(scf::ForOp loop, Value base, Operation *read,
                Operation *write) {
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (&op == read || &op == write)
      continue;
    std::optional<SmallVector<MemoryEffects::EffectInstance>> effects =
        getEffectsRecursively(&op);
    if (!effects)
      return false; // unknown effects
    for (const MemoryEffects::EffectInstance &e : *effects) {
      if (isa<MemoryEffects::Allocate>(e.getEffect()))
        continue;
      Value v = e.getValue();
      if (!v || (isa<MemRefType>(v.getType()) && mayAlias(v, base)))
        return false;
    }
  }
  return true;
}

/// The write that stores back what `read` loaded: same buffer, indices,
/// type and map, after it in the loop body, unmasked.
vector::TransferWriteOp matchingWrite(vector::TransferReadOp read) {
  for (Operation *user : read.getBase().getUsers()) {
    auto write = dyn_cast<vector::TransferWriteOp>(user);
    if (!write || write->getBlock() != read->getBlock() ||
        !read->isBeforeInBlock(write) || write.getMask() ||
        write.getIndices() != read.getIndices() ||
        write.getVectorType() != read.getVectorType() ||
        write.getPermutationMap() != read.getPermutationMap() ||
        write.getInBounds() != read.getInBounds())
      continue;
    return write;
  }
  return {};
}

/// Hoists one pair out of `loop`; returns the new loop, or null if none.
scf::ForOp hoistOnePair(RewriterBase &rw, scf::ForOp loop) {
  for (auto read : loop.getBody()->getOps<vector::TransferReadOp>()) {
    if (read.getMask() || !loop.isDefinedOutsideOfLoop(read.getBase()) ||
        !loop.isDefinedOutsideOfLoop(read.getPadding()) ||
        !llvm::all_of(read.getIndices(), [&](Value i) {
          return loop.isDefinedOutsideOfLoop(i);
        }))
      continue;
    vector::TransferWriteOp write = matchingWrite(read);
    if (!write || !onlyAccess(loop, read.getBase(), read, write))
      continue;
    // read before the loop, its value carried, the write after it.
    rw.moveOpBefore(read, loop);
    FailureOr<LoopLikeOpInterface> carried =
        cast<LoopLikeOpInterface>(loop.getOperation())
            .replaceWithAdditionalYields(
                rw, read.getResult(), /*replaceInitOperandUsesInLoop=*/true,
                [&](OpBuilder &, Location, ArrayRef<BlockArgument>) {
                  return SmallVector<Value>{write.getValueToStore()};
                });
    if (failed(carried))
      return {};
    auto newLoop = cast<scf::ForOp>(carried->getOperation());
    rw.moveOpAfter(write, newLoop);
    rw.modifyOpInPlace(write, [&] {
      write.getValueToStoreMutable().assign(newLoop.getResults().back());
    });
    return newLoop;
  }
  return {};
}

struct HktCpuHoistVectorAccumulatorsPass
    : public mlir::hkt::impl::HktCpuHoistVectorAccumulatorsPassBase<
          HktCpuHoistVectorAccumulatorsPass> {
  void runOnOperation() override {
    mlir::hkt::hoistVectorAccumulators(getOperation());
  }
};
} // namespace

int64_t mlir::hkt::hoistVectorAccumulators(Operation *root) {
  IRRewriter rw(root->getContext());
  int64_t hoisted = 0;
  // Innermost loops first (post-order): a pair hoisted out of a K loop is
  // then looked at again in the loop around it.
  SmallVector<scf::ForOp> loops;
  root->walk([&](scf::ForOp loop) { loops.push_back(loop); });
  for (scf::ForOp loop : loops) {
    moveLoopInvariantCode(cast<LoopLikeOpInterface>(loop.getOperation()));
    while (scf::ForOp newLoop = hoistOnePair(rw, loop)) {
      loop = newLoop;
      ++hoisted;
    }
  }
  return hoisted;
}
