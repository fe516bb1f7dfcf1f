//===- GpuEmulateOnCpu.cpp - run the NVVM path's kernels on CPU threads ---===//
//
// A testing target (hkt-compile --target gpu-emulation): every gpu.launch of
// the NVVM path, as hkt-nvvm-host-staging leaves it, becomes a sequential
// loop over its blocks, each block one OpenMP team with one thread per GPU
// thread (omp.parallel num_threads(block size)), gpu.barrier an
// omp.barrier (a kernel with neither barriers nor warp-level ops, whose
// threads are independent, one scf.parallel over blocks and threads), workgroup
// memory one stack buffer per launch, the device buffers host buffers. The
// kernels' IR is the one the GPU runs, barriers and shared memory included, so
// the numerical tests check it against the float64 reference on machines
// without a GPU; only the NVVM code generation itself is left out.
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/nvvm/Passes.h"
#include "passes/codegen/nvvm/TargetInfo.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTNVVMEMULATEONCPUPASS
#include "passes/codegen/nvvm/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;
using mlir::hkt::NvvmTargetInfo;

namespace {

constexpr StringLiteral kThreadNum = "omp_get_thread_num";

/// The bits of an f32 the tensor cores read as tf32: sign, exponent and
/// the top mantissa bits (of f32's 23).
constexpr uint32_t kTf32Mask = ~0u << (23 - NvvmTargetInfo::kTf32MantissaBits);
static_assert(kTf32Mask == 0xFFFFE000u, "tf32 keeps 10 mantissa bits");

/// Emits, op by op, the lane-0 form of a team's warp-level matrix ops:
/// each fragment a private buffer holding the whole block.
class MatrixOpEmulator {
public:
  explicit MatrixOpEmulator(omp::ParallelOp team)
      : entry(team.getRegion().front()) {}
  /// Emits `op`'s emulation at `b` (inside the lane-0 guard).
  LogicalResult emulate(Operation *op, OpBuilder &b);

private:
  using LoopBody = function_ref<void(OpBuilder &, Value, Value)>;
  static void loops(OpBuilder &b, Location loc, int64_t rows, int64_t cols,
                    LoopBody body);
  static SmallVector<Value> element(OpBuilder &b, Location loc,
                                    ValueRange indices, Value i, Value j);
  static LogicalResult checkLead(Operation *op, Value memref, uint64_t lead);
  static Value toTf32(OpBuilder &b, Location loc, Value x);
  Value privateBuffer(Location loc, gpu::MMAMatrixType type);
  LogicalResult emulateLoad(gpu::SubgroupMmaLoadMatrixOp load, OpBuilder &b);
  void emulateConstant(gpu::SubgroupMmaConstantMatrixOp constant, OpBuilder &b);
  void emulateCompute(gpu::SubgroupMmaComputeOp compute, OpBuilder &b);
  LogicalResult emulateStore(gpu::SubgroupMmaStoreMatrixOp store, OpBuilder &b);

  Block &entry;
  /// The private buffer of each fragment value.
  DenseMap<Value, Value> fragment;
};

/// body(i, j) for i < rows, j < cols.
void MatrixOpEmulator::loops(OpBuilder &b, Location loc, int64_t rows,
                             int64_t cols, LoopBody body) {
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  auto outer = scf::ForOp::create(
      b, loc, c0, arith::ConstantIndexOp::create(b, loc, rows), c1);
  OpBuilder ib = OpBuilder::atBlockTerminator(outer.getBody());
  auto inner = scf::ForOp::create(
      ib, loc, c0, arith::ConstantIndexOp::create(ib, loc, cols), c1);
  OpBuilder bb = OpBuilder::atBlockTerminator(inner.getBody());
  body(bb, outer.getInductionVar(), inner.getInductionVar());
}

/// The indices of memref[indices..., r + i, c + j], rows of `leadDimension`
/// elements.
SmallVector<Value> MatrixOpEmulator::element(OpBuilder &b, Location loc,
                                             ValueRange indices, Value i,
                                             Value j) {
  SmallVector<Value> at(indices.begin(), indices.end());
  at[at.size() - 2] = arith::AddIOp::create(b, loc, at[at.size() - 2], i);
  at.back() = arith::AddIOp::create(b, loc, at.back(), j);
  return at;
}

LogicalResult MatrixOpEmulator::checkLead(Operation *op, Value memref,
                                          uint64_t lead) {
  auto type = cast<MemRefType>(memref.getType());
  if (type.getRank() < 2 || type.isDynamicDim(type.getRank() - 1) ||
      uint64_t(type.getShape().back()) != lead ||
      !type.getLayout().isIdentity())
    return op->emitOpError("is emulated only with leadDimension equal to "
                           "the row length of an identity-layout memref"),
           failure();
  return success();
}

/// `x` as the tensor cores read a tf32 operand: the low mantissa bits
/// dropped.
Value MatrixOpEmulator::toTf32(OpBuilder &b, Location loc, Value x) {
  Value bits = arith::BitcastOp::create(b, loc, b.getI32Type(), x);
  Value mask =
      arith::ConstantIntOp::create(b, loc, b.getI32Type(), int64_t(kTf32Mask));
  return arith::BitcastOp::create(b, loc, b.getF32Type(),
                                  arith::AndIOp::create(b, loc, bits, mask));
}

/// A fragment's buffer, on the team's stack: private to each thread.
Value MatrixOpEmulator::privateBuffer(Location loc, gpu::MMAMatrixType type) {
  OpBuilder ab = OpBuilder::atBlockBegin(&entry);
  return memref::AllocaOp::create(
      ab, loc, MemRefType::get(type.getShape(), type.getElementType()));
}

LogicalResult MatrixOpEmulator::emulate(Operation *op, OpBuilder &b) {
  if (auto load = dyn_cast<gpu::SubgroupMmaLoadMatrixOp>(op))
    return emulateLoad(load, b);
  if (auto constant = dyn_cast<gpu::SubgroupMmaConstantMatrixOp>(op)) {
    emulateConstant(constant, b);
    return success();
  }
  if (auto compute = dyn_cast<gpu::SubgroupMmaComputeOp>(op)) {
    emulateCompute(compute, b);
    return success();
  }
  return emulateStore(cast<gpu::SubgroupMmaStoreMatrixOp>(op), b);
}

/// A load copies the block (its transpose for a transposed load).
LogicalResult MatrixOpEmulator::emulateLoad(gpu::SubgroupMmaLoadMatrixOp load,
                                            OpBuilder &b) {
  Location loc = load.getLoc();
  if (failed(checkLead(load, load.getSrcMemref(),
                       load.getLeadDimension().getZExtValue())))
    return failure();
  auto type = cast<gpu::MMAMatrixType>(load.getRes().getType());
  Value buf = privateBuffer(loc, type);
  bool transpose = load.getTranspose().value_or(false);
  loops(b, loc, type.getShape()[0], type.getShape()[1],
        [&](OpBuilder &ib, Value i, Value j) {
          Value x = memref::LoadOp::create(
              ib, loc, load.getSrcMemref(),
              transpose ? element(ib, loc, load.getIndices(), j, i)
                        : element(ib, loc, load.getIndices(), i, j));
          memref::StoreOp::create(ib, loc, x, buf, ValueRange{i, j});
        });
  fragment[load.getRes()] = buf;
  return success();
}

void MatrixOpEmulator::emulateConstant(
    gpu::SubgroupMmaConstantMatrixOp constant, OpBuilder &b) {
  Location loc = constant.getLoc();
  auto type = cast<gpu::MMAMatrixType>(constant.getRes().getType());
  Value buf = privateBuffer(loc, type);
  loops(b, loc, type.getShape()[0], type.getShape()[1],
        [&](OpBuilder &ib, Value i, Value j) {
          memref::StoreOp::create(ib, loc, constant.getValue(), buf,
                                  ValueRange{i, j});
        });
  fragment[constant.getRes()] = buf;
}

/// A compute multiplies the blocks, its operands rounded to tf32.
void MatrixOpEmulator::emulateCompute(gpu::SubgroupMmaComputeOp compute,
                                      OpBuilder &b) {
  Location loc = compute.getLoc();
  auto aType = cast<gpu::MMAMatrixType>(compute.getOpA().getType());
  auto type = cast<gpu::MMAMatrixType>(compute.getRes().getType());
  Value buf = privateBuffer(loc, type);
  Value a = fragment.lookup(compute.getOpA());
  Value bm = fragment.lookup(compute.getOpB());
  Value cm = fragment.lookup(compute.getOpC());
  int64_t depth = aType.getShape()[1];
  loops(b, loc, type.getShape()[0], type.getShape()[1],
        [&](OpBuilder &ib, Value i, Value j) {
          auto tf32 = [&](Value x) { return toTf32(ib, loc, x); };
          Value acc = memref::LoadOp::create(ib, loc, cm, ValueRange{i, j});
          for (int64_t k = 0; k < depth; ++k) {
            Value kk = arith::ConstantIndexOp::create(ib, loc, k);
            Value x = memref::LoadOp::create(ib, loc, a, ValueRange{i, kk});
            Value y = memref::LoadOp::create(ib, loc, bm, ValueRange{kk, j});
            acc = math::FmaOp::create(ib, loc, tf32(x), tf32(y), acc);
          }
          memref::StoreOp::create(ib, loc, acc, buf, ValueRange{i, j});
        });
  fragment[compute.getRes()] = buf;
}

/// A store writes the block.
LogicalResult
MatrixOpEmulator::emulateStore(gpu::SubgroupMmaStoreMatrixOp store,
                               OpBuilder &b) {
  Location loc = store.getLoc();
  if (failed(checkLead(store, store.getDstMemref(),
                       store.getLeadDimension().getZExtValue())))
    return failure();
  if (store.getTranspose().value_or(false))
    return store.emitOpError("transposed stores are not emulated");
  auto type = cast<gpu::MMAMatrixType>(store.getSrc().getType());
  Value src = fragment.lookup(store.getSrc());
  loops(b, loc, type.getShape()[0], type.getShape()[1],
        [&](OpBuilder &ib, Value i, Value j) {
          Value x = memref::LoadOp::create(ib, loc, src, ValueRange{i, j});
          memref::StoreOp::create(ib, loc, x, store.getDstMemref(),
                                  element(ib, loc, store.getIndices(), i, j));
        });
  return success();
}

/// The warp-level matrix ops of the tensor-core kernel, run by lane 0 of
/// each warp on whole fragments (private buffers): a load copies the
/// 16 x k block, a compute multiplies the blocks (operands rounded to tf32
/// as the tensor cores read them: the low 13 mantissa bits dropped), a store
/// writes the block. One lane, because the lanes of an emulated warp do not
/// run in lockstep: a lane storing an accumulator back in place would race
/// with another still loading it. Exact as to which elements meet; the
/// summation order within a fragment is the emulator's.
LogicalResult lowerMatrixOps(omp::ParallelOp team, Value laneZero) {
  SmallVector<Operation *> ops;
  team.walk([&](Operation *op) {
    if (isa<gpu::SubgroupMmaLoadMatrixOp, gpu::SubgroupMmaComputeOp,
            gpu::SubgroupMmaStoreMatrixOp, gpu::SubgroupMmaConstantMatrixOp>(
            op))
      ops.push_back(op);
  });
  MatrixOpEmulator emulator(team);
  for (Operation *op : ops) {
    OpBuilder outer(op);
    auto ifLane =
        scf::IfOp::create(outer, op->getLoc(), laneZero, /*withElse=*/false);
    OpBuilder b = OpBuilder::atBlockTerminator(&ifLane.getThenRegion().front());
    if (failed(emulator.emulate(op, b)))
      return failure();
  }
  for (Operation *op : llvm::reverse(ops))
    op->erase();
  return success();
}

LogicalResult emulate(gpu::LaunchOp launch, func::FuncOp threadNum) {
  ImplicitLocOpBuilder b(launch.getLoc(), launch);
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, v);
  };
  IRMapping map;
  Block &body = launch.getBody().front();
  // Workgroup memory: one buffer per launch, reused by its blocks in turn.
  for (BlockArgument arg : launch.getWorkgroupAttributions()) {
    auto type = cast<MemRefType>(arg.getType());
    map.map(arg,
            memref::AllocaOp::create(
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
  // A kernel without barriers or warp-level ops does not need its threads
  // to run at once: one parallel loop over every block and thread (OpenMP
  // work-sharing later), instead of a team per block.
  bool independent =
      launch.getWorkgroupAttributions().empty() &&
      !launch
           .walk([](Operation *op) {
             return isa<gpu::BarrierOp, gpu::SubgroupMmaLoadMatrixOp,
                        gpu::SubgroupMmaComputeOp,
                        gpu::SubgroupMmaStoreMatrixOp,
                        gpu::SubgroupMmaConstantMatrixOp>(op)
                        ? WalkResult::interrupt()
                        : WalkResult::advance();
           })
           .wasInterrupted();
  if (independent) {
    auto all = scf::ParallelOp::create(
        b, ValueRange{c(0), c(0), c(0), c(0), c(0), c(0)},
        ValueRange{grid.z, grid.y, grid.x, block.z, block.y, block.x},
        ValueRange{c(1), c(1), c(1), c(1), c(1), c(1)});
    b.setInsertionPointToStart(all.getBody());
    ValueRange ivs = all.getInductionVars();
    map.map(launch.getBlockIds().z, ivs[0]);
    map.map(launch.getBlockIds().y, ivs[1]);
    map.map(launch.getBlockIds().x, ivs[2]);
    map.map(launch.getThreadIds().z, ivs[3]);
    map.map(launch.getThreadIds().y, ivs[4]);
    map.map(launch.getThreadIds().x, ivs[5]);
    for (Operation &op : body.without_terminator())
      b.clone(op, map);
    launch.erase();
    return success();
  }
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
  Value laneZero = arith::CmpIOp::create(
      b, arith::CmpIPredicate::eq,
      arith::RemUIOp::create(b, tid, c(NvvmTargetInfo::kWarpSize)), c(0));
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
  return lowerMatrixOps(team, laneZero);
}

struct HktNvvmEmulateOnCpuPass
    : public mlir::hkt::impl::HktNvvmEmulateOnCpuPassBase<
          HktNvvmEmulateOnCpuPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::LaunchOp> launches;
    module.walk([&](gpu::LaunchOp launch) { launches.push_back(launch); });
    if (launches.empty())
      return;
    auto threadNum = module.lookupSymbol<func::FuncOp>(kThreadNum);
    if (!threadNum) {
      OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
      threadNum = func::FuncOp::create(b, module.getLoc(), kThreadNum,
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
      if (failed(emulate(launch, threadNum)))
        return signalPassFailure();
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
