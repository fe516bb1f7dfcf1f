//===- DeallocAfterLastUse.cpp - hkt-dealloc-after-last-use ---------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// Frees each buffer right after its last use instead of at the end of its
// block, so that a long function's working set is its live buffers', not
// all of them (see the pass description).
//
//===----------------------------------------------------------------------===//

#include "passes/transforms/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTDEALLOCAFTERLASTUSEPASS
#include "passes/transforms/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;

namespace {
/// The last op of `block` that uses `root` or a view of it (through nested
/// regions, at its ancestor in `block`), `dealloc` aside; null if an alias
/// may escape (a non-view op that yields a memref, a pointer or an index of
/// it, a terminator that passes it on, a store of the buffer itself).
Operation *lastUseInBlock(Value root, Operation *dealloc, Block *block) {
  Operation *last = root.getDefiningOp();
  SmallVector<Value> worklist{root};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (user == dealloc)
        continue;
      if (auto view = dyn_cast<ViewLikeOpInterface>(user);
          view && view.getViewSource() == v) {
        llvm::append_range(worklist, user->getResults());
      } else if (isa<memref::ExtractAlignedPointerAsIndexOp>(user) ||
                 user->hasTrait<OpTrait::IsTerminator>() ||
                 llvm::any_of(user->getResultTypes(),
                              llvm::IsaPred<BaseMemRefType>)) {
        return nullptr;
      } else if (auto store = dyn_cast<memref::StoreOp>(user);
                 store && store.getValueToStore() == v) {
        return nullptr;
      }
      Operation *ancestor = block->findAncestorOpInBlock(*user);
      if (!ancestor)
        return nullptr; // used outside the block: leave it
      if (last->isBeforeInBlock(ancestor))
        last = ancestor;
    }
  }
  return last;
}

struct HktDeallocAfterLastUsePass
    : public mlir::hkt::impl::HktDeallocAfterLastUsePassBase<
          HktDeallocAfterLastUsePass> {
  void runOnOperation() override {
    SmallVector<memref::DeallocOp> deallocs;
    getOperation()->walk([&](memref::DeallocOp op) { deallocs.push_back(op); });
    for (memref::DeallocOp dealloc : deallocs) {
      auto alloc = dealloc.getMemref().getDefiningOp<memref::AllocOp>();
      Block *block = dealloc->getBlock();
      if (!alloc || alloc->getBlock() != block)
        continue;
      Operation *last = lastUseInBlock(alloc.getResult(), dealloc, block);
      if (last && last->isBeforeInBlock(dealloc))
        dealloc->moveAfter(last);
    }
  }
};
} // namespace
