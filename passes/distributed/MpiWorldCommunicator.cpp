//===- MpiWorldCommunicator.cpp - a 1-D grid's collectives on the world ---===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// hkt-mpi-world-communicator (Passes.td): after convert-shard-to-mpi, the
// collectives of a module whose one grid is 1-D and spans every rank use
// MPI_COMM_WORLD instead of a communicator split anew for each of them.
//
//===----------------------------------------------------------------------===//

#include "passes/distributed/Passes.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTMPIWORLDCOMMUNICATORPASS
#include "passes/distributed/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;

namespace {
struct HktMpiWorldCommunicatorPass
    : hkt::impl::HktMpiWorldCommunicatorPassBase<HktMpiWorldCommunicatorPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<shard::GridOp> grids(module.getOps<shard::GridOp>());
    if (grids.empty())
      return;
    if (grids.size() != 1 || grids.front().getRank() != 1) {
      grids.front().emitError()
          << "hkt-mpi-world-communicator: expected one 1-D grid spanning "
             "every rank, found "
          << grids.size() << " grid(s) of rank " << grids.front().getRank();
      return signalPassFailure();
    }
    shard::GridOp grid = grids.front();
    if (ShapedType::isDynamic(grid.getShape().front())) {
      grid.emitError("hkt-mpi-world-communicator: the grid's size must be "
                     "static (the number of ranks the module runs on)");
      return signalPassFailure();
    }
    // On a 1-D grid of all the ranks, every rank gets the same color and
    // its own rank as key: the split communicator is the world's.
    WalkResult walk = module.walk([&](mpi::CommSplitOp split) {
      if (!split.getComm().getDefiningOp<mpi::CommWorldOp>() ||
          !matchPattern(split.getColor(), m_Constant()) ||
          (split.getRetval() && !split.getRetval().use_empty())) {
        split.emitError("hkt-mpi-world-communicator: expected a split of "
                        "the world communicator with a constant color");
        return WalkResult::interrupt();
      }
      split.getNewcomm().replaceAllUsesWith(split.getComm());
      split.erase();
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    // The collectives are MPI calls now; nothing names the grid any more.
    if (!SymbolTable::symbolKnownUseEmpty(grid, module)) {
      grid.emitError("hkt-mpi-world-communicator: the grid is still used "
                     "(run convert-shard-to-mpi first)");
      return signalPassFailure();
    }
    grid.erase();
  }
};
} // namespace
