//===- EmulateOnCpu.cpp - run the NVVM path's kernels on the CPU ----------===//
//
// A testing target (hkt-compile --target gpu-emulation): every gpu.launch of
// the NVVM path, as hkt-nvvm-host-staging leaves it, becomes a private host
// function of its own (named for the kernel) called where it was launched;
// in it the blocks run in parallel, each block's threads as loops between
// barriers (ThreadLoops.cpp), or with os-threads one OpenMP team of one
// thread per GPU thread (gpu.barrier an omp.barrier). A kernel with neither
// barriers nor warp-level ops, whose threads are independent, is one
// scf.parallel over blocks and threads. The device buffers are host
// buffers. The kernels' IR is the one the GPU runs, barriers, shared memory
// and warp-level ops per lane included, so the numerical tests check it
// against the float64 reference on machines without a GPU; only the NVVM
// code generation itself is left out.
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/nvvm/KernelEquivalence.h"
#include "passes/codegen/nvvm/Passes.h"
#include "passes/codegen/nvvm/TargetInfo.h"
#include "passes/codegen/nvvm/ThreadLoops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/TypeSwitch.h"

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
  auto buf = memref::AllocaOp::create(
      ab, loc, MemRefType::get(type.getShape(), type.getElementType()));
  // Only lane 0 touches it (lowerMatrixOps): thread loops keep one per warp.
  buf->setAttr(hkt::kPerWarpAttr, ab.getUnitAttr());
  return buf;
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


/// 32-bit words a lane puts in the exchange buffer for one warp-level op:
/// mma.sync m16n8k16 has the most (four A, two B, four C registers).
constexpr int64_t kExchangeWords = 10;

/// Emits, per lane, the warp-level ops of the bf16 tensor-core kernels
/// (nvgpu.ldmatrix, nvvm.mma.sync m16n8k16 bf16, gpu.shuffle xor) as the
/// hardware does them: each lane puts its registers (or its row address) in
/// the team's exchange buffer, the team meets at a barrier, and each lane
/// builds its own result from the other lanes' words by the PTX ISA's
/// fragment maps. A fragment-layout bug therefore gives wrong numbers here
/// as on the GPU. The buffer has two slots, used in turn, so one barrier
/// per op suffices: a lane writes a slot again only after the next op's
/// barrier, which every lane reaches after reading it. Every lane of the
/// block must reach every warp-level op, as the kernels ensure.
class WarpOpEmulator {
public:
  WarpOpEmulator(omp::ParallelOp team, Value exchange, Value tid)
      : team(team), exchange(exchange), tid(tid) {}
  LogicalResult run();

private:
  /// Writes `words` (i32) to this lane's row of the current slot, meets the
  /// team, and returns the slot (the builder after the barrier).
  Value publish(OpBuilder &b, Location loc, ValueRange words);
  /// Word `w` of lane `srcLane` of this warp in `slot`.
  Value word(OpBuilder &b, Location loc, Value slot, Value srcLane, Value w);
  Value word(OpBuilder &b, Location loc, Value slot, Value srcLane, int64_t w) {
    return word(b, loc, slot, srcLane, cidx(b, loc, w));
  }
  static Value cidx(OpBuilder &b, Location loc, int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  }
  LogicalResult emulateLdMatrix(nvgpu::LdMatrixOp op);
  LogicalResult emulateMma(NVVM::MmaOp op);
  LogicalResult emulateShuffle(gpu::ShuffleOp op);

  omp::ParallelOp team;
  Value exchange, tid, lane, warpBase, toggle;
};

Value WarpOpEmulator::publish(OpBuilder &b, Location loc, ValueRange words) {
  Value slot = memref::LoadOp::create(b, loc, toggle);
  memref::StoreOp::create(
      b, loc, arith::SubIOp::create(b, loc, cidx(b, loc, 1), slot), toggle);
  for (auto [w, x] : llvm::enumerate(words))
    memref::StoreOp::create(b, loc, x, exchange,
                            ValueRange{slot, tid, cidx(b, loc, w)});
  omp::BarrierOp::create(b, loc);
  return slot;
}

Value WarpOpEmulator::word(OpBuilder &b, Location loc, Value slot,
                           Value srcLane, Value w) {
  Value thread = arith::AddIOp::create(b, loc, warpBase, srcLane);
  return memref::LoadOp::create(b, loc, exchange, ValueRange{slot, thread, w});
}

/// ldmatrix: lane i gives the row address of row i % 8 of matrix i / 8;
/// lane l receives, of each matrix, the pair at row l / 4, columns
/// 2 (l % 4) and + 1, or with .trans the pair at column l / 4 of rows
/// 2 (l % 4) and + 1 (PTX ISA, "Warp-level matrix load instruction:
/// ldmatrix").
LogicalResult WarpOpEmulator::emulateLdMatrix(nvgpu::LdMatrixOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto i32 = b.getI32Type();
  SmallVector<Value> words;
  for (Value index : op.getIndices())
    words.push_back(arith::IndexCastOp::create(b, loc, i32, index));
  Value slot = publish(b, loc, words);
  int64_t rank = op.getIndices().size();
  auto c = [&](int64_t v) { return cidx(b, loc, v); };
  Value group = arith::DivUIOp::create(b, loc, lane, c(4));
  Value quad2 =
      arith::MulIOp::create(b, loc, arith::RemUIOp::create(b, loc, lane, c(4)),
                            c(2));
  auto address = [&](Value srcLane) {
    SmallVector<Value> at;
    for (int64_t r = 0; r < rank; ++r)
      at.push_back(arith::IndexCastOp::create(
          b, loc, b.getIndexType(), word(b, loc, slot, srcLane, r)));
    return at;
  };
  SmallVector<Value> elements;
  for (int64_t m = 0; m < int64_t(op.getNumTiles()); ++m) {
    Value first = c(m * NvvmTargetInfo::kLdMatrixRows);
    for (int64_t e = 0; e < 2; ++e) {
      SmallVector<Value> at;
      if (!op.getTranspose()) {
        at = address(arith::AddIOp::create(b, loc, first, group));
        at.back() = arith::AddIOp::create(
            b, loc, at.back(), arith::AddIOp::create(b, loc, quad2, c(e)));
      } else {
        at = address(arith::AddIOp::create(
            b, loc, first, arith::AddIOp::create(b, loc, quad2, c(e))));
        at.back() = arith::AddIOp::create(b, loc, at.back(), group);
      }
      // As 16-bit integers: x86 codegen would round-trip bf16 vector
      // elements through f32 (calls to __truncsfbf2).
      Value x = memref::LoadOp::create(b, loc, op.getSrcMemref(), at);
      elements.push_back(arith::BitcastOp::create(b, loc, b.getI16Type(), x));
    }
  }
  auto bits = VectorType::get(op.getType().getShape(), b.getI16Type());
  Value matrices = vector::FromElementsOp::create(b, loc, bits, elements);
  op.replaceAllUsesWith(
      vector::BitCastOp::create(b, loc, op.getType(), matrices).getResult());
  op.erase();
  return success();
}

/// mma.sync m16n8k16, bf16 A (row) and B (col), f32 C and D: lane l =
/// 4 g + q holds A rows g and g + 8, columns 2q, 2q + 1 and those + 8
/// (a0: g, a1: g + 8, a2: g, +8 columns, a3: g + 8, +8 columns), B rows
/// 2q, 2q + 1 (b0) and + 8 (b1) of column g, and D elements (g, 2q),
/// (g, 2q + 1), (g + 8, 2q), (g + 8, 2q + 1); the low half of a register is
/// the lower column or row (PTX ISA, "Matrix Fragments for mma.m16n8k16
/// with floating point type"). Products of bf16 are exact in f32; the sums
/// run over k in order, rounded to f32 at each step.
LogicalResult WarpOpEmulator::emulateMma(NVVM::MmaOp op) {
  auto shape = op.getShape();
  if (shape.getM() != 16 || shape.getN() != 8 || shape.getK() != 16 ||
      op.getMultiplicandAPtxType() != NVVM::MMATypes::bf16 ||
      op.getMultiplicandBPtxType() != NVVM::MMATypes::bf16 ||
      op.getLayoutA() != NVVM::MMALayout::row ||
      op.getLayoutB() != NVVM::MMALayout::col || op.getOperandC().size() != 4)
    return op.emitOpError("is emulated only as m16n8k16, bf16 row x col, "
                          "f32 accumulators");
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto i32 = b.getI32Type();
  auto f32 = b.getF32Type();
  SmallVector<Value> words(op.getOperandA());
  llvm::append_range(words, op.getOperandB());
  for (Value x : op.getOperandC())
    words.push_back(arith::BitcastOp::create(b, loc, i32, x));
  Value slot = publish(b, loc, words);
  auto c = [&](int64_t v) { return cidx(b, loc, v); };
  Value group = arith::DivUIOp::create(b, loc, lane, c(4));
  Value quad2 =
      arith::MulIOp::create(b, loc, arith::RemUIOp::create(b, loc, lane, c(4)),
                            c(2));
  // bf16 half `half` (0: low) of a 32-bit word, as f32.
  auto bf16 = [&](OpBuilder &ib, Value w, Value half) {
    Value lo = arith::ShLIOp::create(
        ib, loc, w, arith::ConstantIntOp::create(ib, loc, i32, 16));
    Value hi = arith::AndIOp::create(
        ib, loc, w,
        arith::ConstantIntOp::create(ib, loc, i32, int64_t(0xFFFF0000u)));
    Value isHigh = arith::CmpIOp::create(ib, loc, arith::CmpIPredicate::eq,
                                         half, cidx(ib, loc, 1));
    return arith::BitcastOp::create(
        ib, loc, f32, arith::SelectOp::create(ib, loc, isHigh, hi, lo));
  };
  auto loop = scf::ForOp::create(b, loc, c(0), c(16), c(1),
                                 ValueRange(op.getOperandC()));
  {
    OpBuilder ib = OpBuilder::atBlockBegin(loop.getBody());
    Value k = loop.getInductionVar();
    auto ic = [&](int64_t v) { return cidx(ib, loc, v); };
    Value pairLane = arith::DivUIOp::create(
        ib, loc, arith::RemUIOp::create(ib, loc, k, ic(8)), ic(2));
    Value half = arith::RemUIOp::create(ib, loc, k, ic(2));
    Value upperK = arith::DivUIOp::create(ib, loc, k, ic(8));
    SmallVector<Value> next;
    for (int64_t e = 0; e < 4; ++e) {
      // A[g + 8 (e / 2)][k]: lane 4 g + (k % 8) / 2, register e / 2 + 2 (k / 8).
      Value aLane = arith::AddIOp::create(
          ib, loc, arith::MulIOp::create(ib, loc, group, ic(4)), pairLane);
      Value aReg = arith::AddIOp::create(
          ib, loc, ic(e / 2), arith::MulIOp::create(ib, loc, upperK, ic(2)));
      // B[k][2q + e % 2]: lane 4 (2q + e % 2) + (k % 8) / 2, register 4 + k / 8.
      Value col = arith::AddIOp::create(ib, loc, quad2, ic(e % 2));
      Value bLane = arith::AddIOp::create(
          ib, loc, arith::MulIOp::create(ib, loc, col, ic(4)), pairLane);
      Value bReg = arith::AddIOp::create(ib, loc, ic(4), upperK);
      Value x = bf16(ib, word(ib, loc, slot, aLane, aReg), half);
      Value y = bf16(ib, word(ib, loc, slot, bLane, bReg), half);
      next.push_back(math::FmaOp::create(ib, loc, x, y,
                                         loop.getRegionIterArgs()[e]));
    }
    scf::YieldOp::create(ib, loc, next);
  }
  Value result = LLVM::PoisonOp::create(b, loc, op.getRes().getType());
  for (int64_t e = 0; e < 4; ++e)
    result = LLVM::InsertValueOp::create(b, loc, result, loop.getResult(e),
                                         ArrayRef<int64_t>{e});
  op.getRes().replaceAllUsesWith(result);
  op.erase();
  return success();
}

/// shuffle xor over the whole warp: lane l receives lane l ^ offset's
/// value.
LogicalResult WarpOpEmulator::emulateShuffle(gpu::ShuffleOp op) {
  APInt width;
  if (op.getMode() != gpu::ShuffleMode::XOR ||
      !matchPattern(op.getWidth(), m_ConstantInt(&width)) ||
      width != NvvmTargetInfo::kWarpSize ||
      !op.getValue().getType().isIntOrFloat() ||
      op.getValue().getType().getIntOrFloatBitWidth() != 32)
    return op.emitOpError("is emulated only as a 32-bit xor shuffle over "
                          "the whole warp");
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto i32 = b.getI32Type();
  Value x = op.getValue();
  if (!x.getType().isInteger(32))
    x = arith::BitcastOp::create(b, loc, i32, x);
  Value slot = publish(b, loc, {x});
  Value offset =
      arith::IndexCastOp::create(b, loc, b.getIndexType(), op.getOffset());
  Value src = arith::XOrIOp::create(b, loc, lane, offset);
  Value y = word(b, loc, slot, src, 0);
  if (y.getType() != op.getValue().getType())
    y = arith::BitcastOp::create(b, loc, op.getValue().getType(), y);
  op.getShuffleResult().replaceAllUsesWith(y);
  op.getValid().replaceAllUsesWith(
      arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
  op.erase();
  return success();
}

LogicalResult WarpOpEmulator::run() {
  SmallVector<Operation *> ops;
  WalkResult unlowered = team.walk([&](Operation *op) {
    if (isa<nvgpu::MmaSyncOp>(op)) {
      op->emitOpError("is emulated as nvvm.mma.sync: run "
                      "hkt-nvvm-lower-bf16-mma first");
      return WalkResult::interrupt();
    }
    if (isa<nvgpu::LdMatrixOp, NVVM::MmaOp, gpu::ShuffleOp>(op))
      ops.push_back(op);
    return WalkResult::advance();
  });
  if (unlowered.wasInterrupted())
    return failure();
  if (ops.empty())
    return success();
  Block &entry = team.getRegion().front();
  OpBuilder b = OpBuilder::atBlockBegin(&entry);
  Location loc = team.getLoc();
  // After tid's definition, which the team's body starts with.
  b.setInsertionPointAfterValue(tid);
  lane = arith::RemUIOp::create(b, loc, tid,
                                cidx(b, loc, NvvmTargetInfo::kWarpSize));
  warpBase = arith::SubIOp::create(b, loc, tid, lane);
  toggle = memref::AllocaOp::create(b, loc, MemRefType::get({}, b.getIndexType()));
  memref::StoreOp::create(b, loc, cidx(b, loc, 0), toggle);
  for (Operation *op : ops) {
    LogicalResult done =
        TypeSwitch<Operation *, LogicalResult>(op)
            .Case([&](nvgpu::LdMatrixOp x) { return emulateLdMatrix(x); })
            .Case([&](NVVM::MmaOp x) { return emulateMma(x); })
            .Case([&](gpu::ShuffleOp x) { return emulateShuffle(x); });
    if (failed(done))
      return failure();
  }
  return success();
}

/// True if `launch` has a warp-level op the WarpOpEmulator emulates.
bool hasWarpOps(gpu::LaunchOp launch) {
  return launch
      .walk([](Operation *op) {
        return isa<nvgpu::LdMatrixOp, nvgpu::MmaSyncOp, NVVM::MmaOp,
                   gpu::ShuffleOp>(op)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

/// True if `launch` has an op whose threads must run at once: a barrier or
/// a warp-level op.
bool hasCollectiveOps(gpu::LaunchOp launch) {
  return launch
      .walk([](Operation *op) {
        return isa<gpu::BarrierOp, gpu::SubgroupMmaLoadMatrixOp,
                   gpu::SubgroupMmaComputeOp, gpu::SubgroupMmaStoreMatrixOp,
                   gpu::SubgroupMmaConstantMatrixOp, nvgpu::LdMatrixOp,
                   nvgpu::MmaSyncOp, NVVM::MmaOp, gpu::ShuffleOp>(op)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

LogicalResult emulate(gpu::LaunchOp launch, func::FuncOp threadNum,
                      bool osThreads) {
  ImplicitLocOpBuilder b(launch.getLoc(), launch);
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, v);
  };
  IRMapping map;
  Block &body = launch.getBody().front();
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
      launch.getWorkgroupAttributions().empty() && !hasCollectiveOps(launch);
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
  Value threads = arith::MulIOp::create(
      b, arith::MulIOp::create(b, block.x, block.y), block.z);
  // The blocks: with thread loops, in parallel (OpenMP work-sharing later),
  // each with its own heap buffers (freed at the end of the block); with
  // OS threads, one after another, one stack buffer each for all blocks.
  Block *scope = nullptr;
  SmallVector<Value> freed;
  auto perBlock = [&](MemRefType type, ValueRange sizes) -> Value {
    if (osThreads)
      return memref::AllocaOp::create(b, type, sizes);
    Value buf = memref::AllocOp::create(b, type, sizes);
    freed.push_back(buf);
    return buf;
  };
  auto placeBlocks = [&] {
    if (!osThreads) {
      auto blocks = scf::ParallelOp::create(b, ValueRange{c(0), c(0), c(0)},
                                            ValueRange{grid.z, grid.y, grid.x},
                                            ValueRange{c(1), c(1), c(1)});
      scope = blocks.getBody();
      b.setInsertionPointToStart(scope);
      ValueRange ivs = blocks.getInductionVars();
      map.map(launch.getBlockIds().z, ivs[0]);
      map.map(launch.getBlockIds().y, ivs[1]);
      map.map(launch.getBlockIds().x, ivs[2]);
      return;
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
  };
  if (!osThreads)
    placeBlocks();
  // Workgroup memory.
  for (BlockArgument arg : launch.getWorkgroupAttributions()) {
    auto type = cast<MemRefType>(arg.getType());
    map.map(arg,
            perBlock(MemRefType::get(type.getShape(), type.getElementType()),
                     ValueRange{}));
  }
  // The warp-level ops' exchange buffer: two slots of words per thread.
  Value exchange;
  if (hasWarpOps(launch))
    exchange =
        perBlock(MemRefType::get({2, ShapedType::kDynamic, kExchangeWords},
                                 b.getI32Type()),
                 ValueRange{threads});
  if (osThreads)
    placeBlocks();
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
  if (exchange && failed(WarpOpEmulator(team, exchange, tid).run()))
    return failure();
  if (failed(lowerMatrixOps(team, laneZero)))
    return failure();
  if (osThreads)
    return success();
  OpBuilder frees(scope->getTerminator());
  for (Value buf : freed)
    memref::DeallocOp::create(frees, buf.getLoc(), buf);
  StringRef kernel = team->getParentOfType<func::FuncOp>().getName();
  if (failed(hkt::formThreadLoops(team, tid, threads, scope, kernel)))
    return failure();
  threads32.getDefiningOp()->erase(); // the team's size, unused now
  return success();
}

/// cp.async as the thread's own synchronous copy: the dst elements from
/// src, zero past srcElements. The data lands before the wait instead of
/// by it; the kernels' barriers after the waits still order every thread's
/// copies before their readers, as on the GPU. Groups and waits go.
void emulateAsyncCopies(gpu::LaunchOp launch) {
  SmallVector<Operation *> waits, groups, copies;
  launch.walk([&](Operation *op) {
    if (isa<nvgpu::DeviceAsyncWaitOp>(op))
      waits.push_back(op);
    else if (isa<nvgpu::DeviceAsyncCreateGroupOp>(op))
      groups.push_back(op);
    else if (isa<nvgpu::DeviceAsyncCopyOp>(op))
      copies.push_back(op);
  });
  for (Operation *op : waits)
    op->erase();
  for (Operation *op : groups)
    op->erase();
  for (Operation *op : copies) {
    auto copy = cast<nvgpu::DeviceAsyncCopyOp>(op);
    ImplicitLocOpBuilder b(copy.getLoc(), copy);
    int64_t n = copy.getDstElements().getZExtValue();
    Value count = copy.getSrcElements();
    Type element = cast<MemRefType>(copy.getDst().getType()).getElementType();
    Value zero = arith::ConstantOp::create(b, b.getZeroAttr(element));
    for (int64_t i = 0; i < n; ++i) {
      auto at = [&](ValueRange indices) {
        SmallVector<Value> shifted(indices);
        shifted.back() = arith::AddIOp::create(
            b, shifted.back(), arith::ConstantIndexOp::create(b, i));
        return shifted;
      };
      Value x = memref::LoadOp::create(b, copy.getSrc(),
                                       at(copy.getSrcIndices()));
      if (count)
        x = arith::SelectOp::create(
            b,
            arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                  arith::ConstantIndexOp::create(b, i), count),
            x, zero);
      memref::StoreOp::create(b, x, copy.getDst(), at(copy.getDstIndices()));
    }
    copy.erase();
  }
}

/// `launch` moved into a private host function of its own, named for the
/// kernel, and called where it was: the module's entries stay short (LLVM's
/// OpenMP outlining walks the whole function once per parallel region, so a
/// model entry with hundreds of inline kernels took minutes), and profiles
/// of the emulation name the kernels. The function is not yet in the
/// module's symbol table (its name may be taken).
struct OutlinedKernel {
  func::FuncOp kernel;
  func::CallOp call;
  gpu::LaunchOp launch; // in `kernel`
};
OutlinedKernel outlineLaunch(gpu::LaunchOp launch) {
  SetVector<Value> used;
  getUsedValuesDefinedAbove(launch->getRegions(), used);
  for (Value operand : launch->getOperands())
    used.insert(operand);
  // Constants are cloned into the kernel (its sizes stay known there), the
  // rest passed.
  SmallVector<Value> captured, constants;
  for (Value v : used)
    (matchPattern(v, m_Constant()) ? constants : captured).push_back(v);
  SmallVector<Type> types;
  for (Value v : captured)
    types.push_back(v.getType());
  OpBuilder b(launch.getContext());
  b.setInsertionPointAfter(launch->getParentOfType<func::FuncOp>());
  std::string name = "kernel";
  if (auto fn = launch.getFunctionAttr())
    name = fn.getValue().str();
  auto kernel = func::FuncOp::create(b, launch.getLoc(), name,
                                     b.getFunctionType(types, {}));
  kernel.setPrivate();
  Block *entry = kernel.addEntryBlock();
  IRMapping map;
  for (auto [v, arg] : llvm::zip(captured, entry->getArguments()))
    map.map(v, arg);
  b.setInsertionPointToStart(entry);
  for (Value v : constants)
    map.map(v, b.clone(*v.getDefiningOp())->getResult(0));
  auto moved = cast<gpu::LaunchOp>(b.clone(*launch, map));
  // The name is the function's now; the launch's would tell the launches
  // of one kernel body apart (EquivalentOps below).
  moved.removeFunctionAttr();
  moved.removeModuleAttr();
  func::ReturnOp::create(b, launch.getLoc());
  b.setInsertionPoint(launch);
  auto call = func::CallOp::create(b, launch.getLoc(), kernel, captured);
  launch.erase();
  return {kernel, call, moved};
}

struct HktNvvmEmulateOnCpuPass
    : public mlir::hkt::impl::HktNvvmEmulateOnCpuPassBase<
          HktNvvmEmulateOnCpuPass> {
  using HktNvvmEmulateOnCpuPassBase::HktNvvmEmulateOnCpuPassBase;
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
    SymbolTable symbols(module);
    SmallVector<OutlinedKernel> kernels;
    // A kernel whose body is the same op for op as an earlier one's (a GEMM,
    // a fill or a copy launched at several places on the same shapes) is
    // emulated once, every call going to the first: a kernel's emulation is
    // thousands of ops (the warp-level ops per lane), so this more than
    // halves the IR of an emulated layer's backward, and its compile time.
    hkt::nvvm::EquivalentOps byBody;
    for (gpu::LaunchOp launch : launches) {
      if (launch.getAsyncToken() || !launch.getAsyncDependencies().empty() ||
          launch.getClusterSizeX()) {
        launch.emitOpError("asynchronous or clustered launches are not "
                           "emulated");
        return signalPassFailure();
      }
      OutlinedKernel k = outlineLaunch(launch);
      if (auto same =
              cast_or_null<func::FuncOp>(byBody.findOrInsert(k.kernel))) {
        k.call.setCallee(same.getSymName());
        k.kernel.erase();
        continue;
      }
      symbols.insert(k.kernel); // renamed if the name is taken
      k.call.setCallee(k.kernel.getSymName());
      kernels.push_back(k);
    }
    // Emulated once all are outlined: the comparison needs the bodies as
    // launched.
    for (OutlinedKernel &k : kernels) {
      emulateAsyncCopies(k.launch);
      if (failed(emulate(k.launch, threadNum, osThreads)))
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
    if (threadNum.symbolKnownUseEmpty(module))
      threadNum.erase();
  }
};
} // namespace
