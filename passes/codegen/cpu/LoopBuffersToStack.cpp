//===- LoopBuffersToStack.cpp - hkt-cpu-loop-buffers-to-stack -------------===//
//
// A buffer allocated and freed in every iteration of a sequential loop that
// runs inside a parallel loop (the attention's score tile and row
// statistics, once per key tile) becomes one stack buffer per parallel
// iteration: no malloc / free per key tile, and the same cache-hot memory
// each time (see the pass description).
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/cpu/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTCPULOOPBUFFERSTOSTACKPASS
#include "passes/codegen/cpu/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;

namespace {

/// Stack bytes given to one parallel body at most: its iterations run on
/// OpenMP workers, whose stacks are a few MiB.
constexpr int64_t kMaxStackBytes = 256 * 1024;

/// The parallel loop whose body `op` is in, with a sequential loop between
/// them; null where there is none.
Operation *parallelAroundLoop(Operation *op) {
  bool inLoop = false;
  for (Operation *p = op->getParentOp(); p; p = p->getParentOp()) {
    if (isa<scf::ParallelOp, scf::ForallOp>(p))
      return inLoop ? p : nullptr;
    if (isa<scf::ForOp, scf::WhileOp>(p))
      inLoop = true;
    if (isa<FunctionOpInterface>(p))
      return nullptr;
  }
  return nullptr;
}

struct HktCpuLoopBuffersToStackPass
    : hkt::impl::HktCpuLoopBuffersToStackPassBase<
          HktCpuLoopBuffersToStackPass> {
  void runOnOperation() override {
    SmallVector<memref::AllocOp> allocs;
    getOperation()->walk([&](memref::AllocOp op) { allocs.push_back(op); });
    DenseMap<Block *, int64_t> stackBytes;
    for (memref::AllocOp alloc : allocs) {
      MemRefType type = alloc.getType();
      if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
          !type.getElementType().isIntOrIndexOrFloat() ||
          type.getElementType().isIndex() ||
          !alloc.getSymbolOperands().empty())
        continue;
      Operation *parallel = parallelAroundLoop(alloc);
      if (!parallel)
        continue;
      // Freed once, in its own block: it lives within one iteration of the
      // loops around it, so every iteration may take the same memory.
      SmallVector<memref::DeallocOp> deallocs;
      for (Operation *user : alloc->getUsers())
        if (auto dealloc = dyn_cast<memref::DeallocOp>(user))
          deallocs.push_back(dealloc);
      if (deallocs.size() != 1 ||
          deallocs.front()->getBlock() != alloc->getBlock())
        continue;
      int64_t bytes = type.getNumElements() *
                      llvm::divideCeil(type.getElementTypeBitWidth(), 8);
      Block *body = &parallel->getRegion(0).front();
      if (stackBytes[body] + bytes > kMaxStackBytes)
        continue;
      stackBytes[body] += bytes;
      // At the start of the parallel body: scf-to-openmp gives each of its
      // iterations an alloca scope, which frees it.
      OpBuilder b(body, body->begin());
      auto alloca = memref::AllocaOp::create(b, alloc.getLoc(), type,
                                             alloc.getAlignmentAttr());
      alloc.replaceAllUsesWith(alloca.getResult());
      deallocs.front().erase();
      alloc.erase();
    }
  }
};

} // namespace
