//===- GpuMapParallelLoops.cpp - host scf.parallel -> gpu.launch ----------===//
//
// The projections, downsampling, hybrid head and normalisation of the NVVM
// path arrive as linalg loops (convert-linalg-to-parallel-loops): one
// scf.parallel over the op's parallel dimensions, its reductions as scf.for
// inside. Each outermost scf.parallel becomes one gpu.launch with one
// thread per iteration, the iterations linearised with the innermost
// dimension fastest, so that neighbouring threads touch neighbouring
// elements (coalesced). Upstream's gpu-map-parallel-loops maps at most
// three dimensions and leaves the rest sequential inside each thread, which
// for these rank-3 and rank-4 loops leaves most threads idle.
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/nvvm/Passes.h"
#include "passes/codegen/nvvm/TargetInfo.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTNVVMMAPPARALLELLOOPSPASS
#include "passes/codegen/nvvm/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;
using mlir::hkt::NvvmTargetInfo;

namespace {

LogicalResult mapToLaunch(scf::ParallelOp loop, int64_t blockSize) {
  if (loop.getNumResults() != 0)
    return loop.emitOpError(
        "with reductions cannot be mapped to GPU threads yet");
  ImplicitLocOpBuilder b(loop.getLoc(), loop);
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, v);
  };
  // Trip counts and their product.
  SmallVector<Value> counts;
  Value total = c(1);
  for (auto [lb, ub, step] :
       llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    Value span = b.createOrFold<arith::SubIOp>(ub, lb);
    Value n = b.createOrFold<arith::CeilDivUIOp>(span, step);
    counts.push_back(n);
    total = b.createOrFold<arith::MulIOp>(total, n);
  }
  Value blocks = b.createOrFold<arith::CeilDivUIOp>(total, c(blockSize));
  // A grid of zero blocks is a launch error: empty loops launch nothing.
  // (Static loops are never empty here: linalg ops on empty shapes fold.)
  std::optional<int64_t> known = getConstantIntValue(total);
  if (known && *known == 0) {
    loop.erase();
    return success();
  }
  if (!known) {
    Value any =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, total, c(0));
    auto guard = scf::IfOp::create(b, any, /*withElseRegion=*/false);
    b.setInsertionPointToStart(&guard.getThenRegion().front());
  }
  auto launch =
      gpu::LaunchOp::create(b, blocks, c(1), c(1), c(blockSize), c(1), c(1));
  Block &body = launch.getBody().front();
  b.setInsertionPointToStart(&body);
  gpu::TerminatorOp terminator = gpu::TerminatorOp::create(b);
  b.setInsertionPoint(terminator);
  Value id = arith::AddIOp::create(
      b, arith::MulIOp::create(b, launch.getBlockIds().x, c(blockSize)),
      launch.getThreadIds().x);
  Value inside = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, id, total);
  auto ifInside = scf::IfOp::create(b, inside, /*withElseRegion=*/false);
  b.setInsertionPointToStart(&ifInside.getThenRegion().front());
  // Delinearise, innermost dimension fastest.
  IRMapping map;
  Value rest = id;
  for (int64_t k = loop.getNumLoops() - 1; k >= 0; --k) {
    Value index =
        k == 0 ? rest : b.createOrFold<arith::RemUIOp>(rest, counts[k]);
    if (k > 0)
      rest = b.createOrFold<arith::DivUIOp>(rest, counts[k]);
    Value iv = b.createOrFold<arith::AddIOp>(
        loop.getLowerBound()[k],
        b.createOrFold<arith::MulIOp>(index, loop.getStep()[k]));
    map.map(loop.getInductionVars()[k], iv);
  }
  for (Operation &op : loop.getBody()->without_terminator())
    b.clone(op, map);
  loop.erase();
  return success();
}

struct HktNvvmMapParallelLoopsPass
    : public mlir::hkt::impl::HktNvvmMapParallelLoopsPassBase<
          HktNvvmMapParallelLoopsPass> {
  using HktNvvmMapParallelLoopsPassBase::HktNvvmMapParallelLoopsPassBase;
  void runOnOperation() override {
    // Whole warps, at most a block's threads.
    constexpr int64_t warp = NvvmTargetInfo::kWarpSize;
    constexpr int64_t maxThreads = NvvmTargetInfo::kMaxThreadsPerBlock;
    if (blockSize < warp || blockSize > maxThreads || blockSize % warp) {
      getOperation()->emitError("block-size must be a multiple of ")
          << warp << " in [" << warp << ", " << maxThreads << "]";
      return signalPassFailure();
    }
    SmallVector<scf::ParallelOp> outermost;
    getOperation()->walk([&](scf::ParallelOp loop) {
      if (!loop->getParentOfType<scf::ParallelOp>() &&
          !loop->getParentOfType<gpu::LaunchOp>())
        outermost.push_back(loop);
    });
    for (scf::ParallelOp loop : outermost)
      if (failed(mapToLaunch(loop, blockSize)))
        return signalPassFailure();
  }
};
} // namespace
