//===- GpuEmulateOnCpu.cpp - run the NVVM path's kernels on CPU threads ---===//
//
// A testing target (hkt-compile --target gpu-emulation): every gpu.launch of
// the NVVM path, as hkt-gpu-host-staging leaves it, becomes a sequential
// loop over its blocks, each block one OpenMP team with one thread per GPU
// thread (omp.parallel num_threads(block size)), gpu.barrier an
// omp.barrier, workgroup memory one stack buffer per launch, the device
// buffers host buffers. The kernels' IR is the one the GPU runs, barriers
// and shared memory included, so the numerical tests check it against the
// float64 reference on machines without a GPU; only the NVVM code
// generation itself is left out.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTGPUEMULATEONCPUPASS
#include "passes/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;

namespace {

constexpr StringLiteral kThreadNum = "omp_get_thread_num";

void emulate(gpu::LaunchOp launch, func::FuncOp threadNum) {
  ImplicitLocOpBuilder b(launch.getLoc(), launch);
  auto c = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, v); };
  IRMapping map;
  Block &body = launch.getBody().front();
  // Workgroup memory: one buffer per launch, reused by its blocks in turn.
  for (BlockArgument arg : launch.getWorkgroupAttributions()) {
    auto type = cast<MemRefType>(arg.getType());
    map.map(arg, memref::AllocaOp::create(
                     b, MemRefType::get(type.getShape(), type.getElementType())));
  }
  gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
  gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
  map.map(launch.getGridSize().x, grid.x);
  map.map(launch.getGridSize().y, grid.y);
  map.map(launch.getGridSize().z, grid.z);
  map.map(launch.getBlockSize().x, block.x);
  map.map(launch.getBlockSize().y, block.y);
  map.map(launch.getBlockSize().z, block.z);
  auto loopZ = scf::ForOp::create(b, c(0), grid.z, c(1));
  b.setInsertionPointToStart(loopZ.getBody());
  auto loopY = scf::ForOp::create(b, c(0), grid.y, c(1));
  b.setInsertionPointToStart(loopY.getBody());
  auto loopX = scf::ForOp::create(b, c(0), grid.x, c(1));
  b.setInsertionPointToStart(loopX.getBody());
  map.map(launch.getBlockIds().x, loopX.getInductionVar());
  map.map(launch.getBlockIds().y, loopY.getInductionVar());
  map.map(launch.getBlockIds().z, loopZ.getInductionVar());
  Value threads = arith::MulIOp::create(
      b, arith::MulIOp::create(b, block.x, block.y), block.z);
  Value threads32 = arith::IndexCastOp::create(b, b.getI32Type(), threads);
  auto team = omp::ParallelOp::create(
      b, ValueRange(), ValueRange(), Value(), threads32, ValueRange(), nullptr,
      nullptr, nullptr, nullptr, ValueRange(), nullptr, nullptr);
  Block *teamBody = b.createBlock(&team.getRegion());
  b.setInsertionPointToStart(teamBody);
  omp::TerminatorOp terminator = omp::TerminatorOp::create(b);
  b.setInsertionPoint(terminator);
  Value tid = arith::IndexCastOp::create(
      b, b.getIndexType(), func::CallOp::create(b, threadNum, {}).getResult(0));
  Value tx = arith::RemUIOp::create(b, tid, block.x);
  Value rest = arith::DivUIOp::create(b, tid, block.x);
  map.map(launch.getThreadIds().x, tx);
  map.map(launch.getThreadIds().y, arith::RemUIOp::create(b, rest, block.y));
  map.map(launch.getThreadIds().z, arith::DivUIOp::create(b, rest, block.y));
  for (Operation &op : body.without_terminator())
    b.clone(op, map);
  SmallVector<gpu::BarrierOp> barriers;
  team.walk([&](gpu::BarrierOp barrier) { barriers.push_back(barrier); });
  for (gpu::BarrierOp barrier : barriers) {
    OpBuilder rb(barrier);
    omp::BarrierOp::create(rb, barrier.getLoc());
    barrier.erase();
  }
  launch.erase();
}

struct HktGpuEmulateOnCpuPass
    : public mlir::hkt::impl::HktGpuEmulateOnCpuPassBase<HktGpuEmulateOnCpuPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::LaunchOp> launches;
    module.walk([&](gpu::LaunchOp launch) { launches.push_back(launch); });
    if (launches.empty())
      return;
    auto threadNum = module.lookupSymbol<func::FuncOp>(kThreadNum);
    if (!threadNum) {
      OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
      threadNum = func::FuncOp::create(
          b, module.getLoc(), kThreadNum,
          b.getFunctionType({}, {b.getI32Type()}));
      threadNum.setPrivate();
    }
    for (gpu::LaunchOp launch : launches) {
      if (launch.getAsyncToken() || !launch.getAsyncDependencies().empty() ||
          launch.getClusterSizeX()) {
        launch.emitOpError("asynchronous or clustered launches are not "
                           "emulated");
        return signalPassFailure();
      }
      emulate(launch, threadNum);
    }
    // Device buffers are host buffers here.
    SmallVector<Operation *> deviceOps;
    module.walk([&](Operation *op) {
      if (isa<gpu::AllocOp, gpu::DeallocOp, gpu::MemcpyOp>(op))
        deviceOps.push_back(op);
    });
    for (Operation *op : deviceOps) {
      OpBuilder b(op);
      if (auto alloc = dyn_cast<gpu::AllocOp>(op)) {
        auto buffer = memref::AllocOp::create(b, op->getLoc(), alloc.getType(),
                                              alloc.getDynamicSizes());
        alloc.getMemref().replaceAllUsesWith(buffer.getResult());
      } else if (auto dealloc = dyn_cast<gpu::DeallocOp>(op)) {
        memref::DeallocOp::create(b, op->getLoc(), dealloc.getMemref());
      } else {
        auto copy = cast<gpu::MemcpyOp>(op);
        memref::CopyOp::create(b, op->getLoc(), copy.getSrc(), copy.getDst());
      }
      if (op->getNumResults() && !op->use_empty()) {
        op->emitOpError("asynchronous device operations are not emulated");
        return signalPassFailure();
      }
      op->erase();
    }
  }
};
} // namespace
