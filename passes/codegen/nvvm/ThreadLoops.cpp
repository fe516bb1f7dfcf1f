//===- ThreadLoops.cpp - a GPU block's threads as loops between barriers --===//
//
// The emulation used to run each GPU thread of a block as an OS thread of an
// OpenMP team: on two cores, every barrier and warp-level op (one barrier
// each) woke up to 256 threads, and the kernels spent most of their time in
// the scheduler. Here the block runs on one OS thread as MCUDA does it: the
// ops between two barriers become one loop over the threads, so a barrier
// is the end of one loop and the start of the next. What the threads do is
// unchanged (same ops, same order within a thread, the warp-level ops still
// per lane through the exchange buffer); only the interleaving between
// barriers differs, which race-free kernels cannot observe.
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/nvvm/ThreadLoops.h"
#include "passes/codegen/nvvm/TargetInfo.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace {

/// Bytes each thread's slice of an expanded alloca is rounded up to (the
/// widest vector the kernels load).
constexpr int64_t kSliceAlignment = 64;

class ThreadLoopFormer {
public:
  ThreadLoopFormer(omp::ParallelOp team, Value tid, Value threads, Block *scope,
                   StringRef kernelName)
      : team(team), tid(tid), threads(threads), scope(scope),
        kernelName(kernelName.str()), loc(team.getLoc()),
        allocs(scope, scope->begin()) {}

  LogicalResult run();

private:
  /// A heap buffer of the block, freed at the end of the scope.
  Value buffer(MemRefType type, ValueRange sizes);
  /// A row of threads values in the pool of the type's storage type.
  struct Slot {
    Value pool;
    int64_t row;
  };
  Slot perThread(Type type);
  static bool keepable(Type type) {
    return type.isIntOrIndexOrFloat() || isa<VectorType>(type);
  }
  /// Kept as integers of the same width where the CPU has no arithmetic for
  /// the floats (x86 codegen would round-trip bf16 through f32 with calls
  /// to __truncsfbf2, which Debian 12's libgcc lacks).
  static Type storageType(Type type);
  Operation *store(OpBuilder &b, Value v, Slot slot, Value index);
  Value load(OpBuilder &b, Type type, Slot slot, Value index);

  LogicalResult prepare(Block &block);
  LogicalResult expand(memref::AllocaOp alloca);
  FailureOr<Operation *> carry(scf::ForOp loop);
  FailureOr<Operation *> carry(scf::IfOp branch);
  void form(Block &block);
  LogicalResult connect();

  scf::ForOp loopOf(Operation *op);
  scf::ForOp loopOf(Value v);
  bool threadLoopIv(Value v) {
    auto arg = dyn_cast<BlockArgument>(v);
    return arg && threadLoops.contains(arg.getOwner()->getParentOp());
  }
  bool rematerializable(Operation *def);
  bool dependsOnThread(Value v);
  FailureOr<Value> materialize(Value v, scf::ForOp useLoop, Operation *user);
  FailureOr<Slot> slotOf(Value v);
  void checkUniform(Value v, Slot slot);

  omp::ParallelOp team;
  Value tid, threads;
  Block *scope;
  std::string kernelName;
  Location loc;
  OpBuilder allocs;
  Value c0, c1;
  SmallVector<Value> buffers;
  DenseSet<Operation *> withBarrier;
  DenseSet<Operation *> threadLoops;
  /// Where each thread loop's recomputed values and reloads go: before its
  /// first own op, in order of creation.
  DenseMap<Operation *, Operation *> anchor;
  DenseMap<std::pair<Value, Operation *>, Value> materialized;
  /// Per storage type, a rows x threads buffer and its row count (set when
  /// every row is known).
  DenseMap<Type, std::pair<Value, arith::ConstantIndexOp>> pools;
  DenseMap<Type, int64_t> poolRows;
  DenseMap<Value, Slot> slots;
  /// The store that keeps each value of `slots`.
  DenseMap<Value, Operation *> keptBy;
  DenseSet<Value> checked;
  DenseMap<Value, bool> threadDependent;
};

Type ThreadLoopFormer::storageType(Type type) {
  Type element = getElementTypeOrSelf(type);
  if (!isa<BFloat16Type, Float16Type>(element))
    return type;
  Type bits = IntegerType::get(type.getContext(), 16);
  if (auto vector = dyn_cast<VectorType>(type))
    return vector.clone(bits);
  return bits;
}

ThreadLoopFormer::Slot ThreadLoopFormer::perThread(Type type) {
  Type stored = storageType(type);
  auto &[pool, rows] = pools[stored];
  if (!pool) {
    // One buffer per type rather than one per value: thousands of
    // allocations (and their lowering) for a layer otherwise.
    rows = arith::ConstantIndexOp::create(allocs, loc, 0);
    auto dynamic = ShapedType::kDynamic;
    pool = buffer(MemRefType::get({dynamic, dynamic}, stored),
                  ValueRange{rows, threads});
  }
  return {pool, poolRows[stored]++};
}

Operation *ThreadLoopFormer::store(OpBuilder &b, Value v, Slot slot,
                                   Value index) {
  Type stored = cast<MemRefType>(slot.pool.getType()).getElementType();
  if (stored != v.getType())
    v = arith::BitcastOp::create(b, loc, stored, v);
  Value row = arith::ConstantIndexOp::create(b, loc, slot.row);
  return memref::StoreOp::create(b, loc, v, slot.pool, ValueRange{row, index});
}

Value ThreadLoopFormer::load(OpBuilder &b, Type type, Slot slot, Value index) {
  Value row = arith::ConstantIndexOp::create(b, loc, slot.row);
  Value v = memref::LoadOp::create(b, loc, slot.pool, ValueRange{row, index});
  if (v.getType() != type)
    v = arith::BitcastOp::create(b, loc, type, v);
  return v;
}

Value ThreadLoopFormer::buffer(MemRefType type, ValueRange sizes) {
  auto buf = memref::AllocOp::create(allocs, loc, type, sizes,
                                     allocs.getI64IntegerAttr(kSliceAlignment));
  buffers.push_back(buf);
  return buf;
}

/// A private alloca of the team: one slice per thread (per warp) of one
/// byte buffer, viewed at the thread's offset with the alloca's own type.
LogicalResult ThreadLoopFormer::expand(memref::AllocaOp alloca) {
  MemRefType type = alloca.getType();
  // Workgroup memory allocated in the kernel: the block's, one buffer.
  if (type.getMemorySpace() ==
      gpu::AddressSpaceAttr::get(alloca.getContext(),
                                 gpu::AddressSpace::Workgroup)) {
    auto shared = memref::AllocOp::create(allocs, loc, type);
    buffers.push_back(shared);
    alloca.replaceAllUsesWith(shared.getResult());
    alloca.erase();
    return success();
  }
  if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
      type.getMemorySpace())
    return alloca.emitOpError("a thread's private buffer is emulated only "
                              "with a static shape and the identity layout");
  DataLayout layout = DataLayout::closest(alloca);
  int64_t bytes = type.getNumElements() *
                  int64_t(layout.getTypeSize(type.getElementType()));
  bytes = llvm::alignTo(bytes, kSliceAlignment);
  bool perWarp = alloca->hasAttr(hkt::kPerWarpAttr);
  auto idx = [&](OpBuilder &b, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value copies = threads;
  int64_t warp = hkt::NvvmTargetInfo::kWarpSize;
  if (perWarp)
    copies = arith::DivUIOp::create(
        allocs, loc,
        arith::AddIOp::create(allocs, loc, threads, idx(allocs, warp - 1)),
        idx(allocs, warp));
  Value all =
      buffer(MemRefType::get({ShapedType::kDynamic}, allocs.getI8Type()),
             ValueRange{arith::MulIOp::create(allocs, loc, copies,
                                              idx(allocs, bytes))});
  OpBuilder b(alloca);
  Value unit =
      perWarp ? arith::DivUIOp::create(b, loc, tid, idx(b, warp)) : tid;
  Value offset = arith::MulIOp::create(b, loc, unit, idx(b, bytes));
  auto view = memref::ViewOp::create(b, loc, type, all, offset, ValueRange{});
  alloca.replaceAllUsesWith(view.getResult());
  alloca.erase();
  return success();
}

/// A loop that reaches a barrier runs once for the block: what it carries
/// from one iteration to the next is each thread's, so it goes through a
/// per-thread buffer (stored by each thread before the loop and at the end
/// of each iteration, loaded at the start of each and after the loop).
/// Returns the loop without loop-carried values.
FailureOr<Operation *> ThreadLoopFormer::carry(scf::ForOp loop) {
  if (loop.getNumRegionIterArgs() == 0)
    return loop.getOperation();
  OpBuilder b(loop);
  Block *body = loop.getBody();
  auto yield = cast<scf::YieldOp>(body->getTerminator());
  OpBuilder head = OpBuilder::atBlockBegin(body);
  OpBuilder tail(yield);
  OpBuilder after(loop->getBlock(), ++Block::iterator(loop));
  for (auto [init, arg, next, result] :
       llvm::zip(loop.getInitArgs(), loop.getRegionIterArgs(),
                 yield.getOperands(), loop.getResults())) {
    if (!keepable(init.getType()))
      return loop.emitOpError("reaches a barrier while carrying a value of "
                              "type ")
             << init.getType()
             << ", which the emulation cannot keep per thread";
    Type type = init.getType();
    Slot slot = perThread(type);
    store(b, init, slot, tid);
    arg.replaceAllUsesWith(load(head, type, slot, tid));
    store(tail, next, slot, tid);
    result.replaceAllUsesWith(load(after, type, slot, tid));
  }
  yield.getResultsMutable().clear();
  body->eraseArguments(1, body->getNumArguments() - 1);
  auto uniform = scf::ForOp::create(b, loop.getLoc(), loop.getLowerBound(),
                                    loop.getUpperBound(), loop.getStep());
  uniform.setUnsignedCmp(loop.getUnsignedCmp());
  uniform->setDiscardableAttrs(loop->getDiscardableAttrDictionary());
  uniform.getRegion().takeBody(loop.getRegion());
  withBarrier.erase(loop);
  loop.erase();
  return uniform.getOperation();
}

/// A branch that reaches a barrier is taken once for the block: its results
/// go through per-thread buffers. Returns the branch without results.
FailureOr<Operation *> ThreadLoopFormer::carry(scf::IfOp branch) {
  if (branch.getNumResults() == 0)
    return branch.getOperation();
  OpBuilder b(branch);
  OpBuilder after(branch->getBlock(), ++Block::iterator(branch));
  SmallVector<scf::YieldOp> yields = {branch.thenYield()};
  if (!branch.getElseRegion().empty())
    yields.push_back(branch.elseYield());
  for (auto [k, result] : llvm::enumerate(branch.getResults())) {
    if (!keepable(result.getType()))
      return branch.emitOpError("reaches a barrier while yielding a value of "
                                "type ")
             << result.getType()
             << ", which the emulation cannot keep per thread";
    Slot slot = perThread(result.getType());
    for (scf::YieldOp yield : yields) {
      OpBuilder yb(yield);
      store(yb, yield.getOperand(k), slot, tid);
    }
    result.replaceAllUsesWith(load(after, result.getType(), slot, tid));
  }
  for (scf::YieldOp yield : yields)
    yield.getResultsMutable().clear();
  auto uniform =
      scf::IfOp::create(b, branch.getLoc(), TypeRange{}, branch.getCondition(),
                        /*addThenBlock=*/false,
                        /*addElseBlock=*/false);
  uniform->setDiscardableAttrs(branch->getDiscardableAttrDictionary());
  uniform.getThenRegion().takeBody(branch.getThenRegion());
  uniform.getElseRegion().takeBody(branch.getElseRegion());
  withBarrier.erase(branch);
  branch.erase();
  return uniform.getOperation();
}

/// Private allocas expanded and carried values put through memory, in
/// `block` and in the blocks of its ops that reach a barrier.
LogicalResult ThreadLoopFormer::prepare(Block &block) {
  SmallVector<Operation *> ops;
  for (Operation &op : block.without_terminator())
    ops.push_back(&op);
  for (Operation *op : ops) {
    if (auto alloca = dyn_cast<memref::AllocaOp>(op)) {
      if (failed(expand(alloca)))
        return failure();
      continue;
    }
    if (!withBarrier.contains(op) || isa<omp::BarrierOp>(op))
      continue;
    FailureOr<Operation *> uniform =
        TypeSwitch<Operation *, FailureOr<Operation *>>(op)
            .Case([&](scf::ForOp loop) { return carry(loop); })
            .Case([&](scf::IfOp branch) { return carry(branch); })
            .Default([](Operation *other) -> FailureOr<Operation *> {
              return other->emitOpError(
                  "reaches a barrier; the emulation forms thread loops only "
                  "around scf.for and scf.if");
            });
    if (failed(uniform))
      return failure();
    withBarrier.insert(*uniform);
    for (Region &region : (*uniform)->getRegions())
      for (Block &inner : region)
        if (failed(prepare(inner)))
          return failure();
  }
  return success();
}

/// The ops of `block` between barriers (and ops that reach one) each one
/// loop over the threads; the barriers erased.
void ThreadLoopFormer::form(Block &block) {
  SmallVector<Operation *> ops, run;
  for (Operation &op : block.without_terminator())
    ops.push_back(&op);
  auto flush = [&] {
    if (run.empty())
      return;
    OpBuilder b(run.front());
    auto loop = scf::ForOp::create(b, loc, c0, threads, c1);
    Operation *end = loop.getBody()->getTerminator();
    for (Operation *op : run)
      op->moveBefore(end);
    threadLoops.insert(loop);
    anchor[loop] = run.front();
    run.clear();
  };
  for (Operation *op : ops) {
    if (isa<omp::BarrierOp>(op)) {
      flush();
      withBarrier.erase(op);
      op->erase();
    } else if (withBarrier.contains(op)) {
      flush();
      for (Region &region : op->getRegions())
        for (Block &inner : region)
          form(inner);
    } else {
      run.push_back(op);
    }
  }
  flush();
}

scf::ForOp ThreadLoopFormer::loopOf(Operation *op) {
  for (Operation *p = op; p && p != team; p = p->getParentOp())
    if (threadLoops.contains(p))
      return cast<scf::ForOp>(p);
  return {};
}

/// The thread loop a value is each thread's in; null where it is the
/// block's (defined outside the team, or a loop index of a loop that runs
/// once for the block).
scf::ForOp ThreadLoopFormer::loopOf(Value v) {
  Operation *def = v.getDefiningOp();
  if (!def)
    def = cast<BlockArgument>(v).getOwner()->getParentOp();
  if (!team->isProperAncestor(def))
    return {};
  return loopOf(def);
}

/// Cheap and pure: recomputed where it is needed instead of kept.
bool ThreadLoopFormer::rematerializable(Operation *def) {
  if (def->getNumRegions() || def->getNumResults() != 1 ||
      !isMemoryEffectFree(def))
    return false;
  if (def->hasTrait<OpTrait::ConstantLike>())
    return true;
  Type type = def->getResult(0).getType();
  return isa<IndexType, IntegerType, MemRefType, LLVM::LLVMStructType>(type);
}

/// True if `v` may differ between the threads of a block.
bool ThreadLoopFormer::dependsOnThread(Value v) {
  if (!loopOf(v))
    return false;
  if (threadLoopIv(v))
    return true;
  auto it = threadDependent.find(v);
  if (it != threadDependent.end())
    return it->second;
  Operation *def = v.getDefiningOp();
  bool depends = !def || !rematerializable(def) ||
                 llvm::any_of(def->getOperands(),
                              [&](Value x) { return dependsOnThread(x); });
  threadDependent[v] = depends;
  return depends;
}

/// The per-thread buffer that keeps `v` past a barrier, stored right after
/// its definition.
FailureOr<ThreadLoopFormer::Slot> ThreadLoopFormer::slotOf(Value v) {
  auto known = slots.find(v);
  if (known != slots.end())
    return known->second;
  Operation *def = v.getDefiningOp();
  if (!def || !keepable(v.getType()))
    return emitError(v.getLoc())
           << "a value of type " << v.getType()
           << " is used past a barrier and the emulation cannot keep it per "
              "thread";
  Slot slot = perThread(v.getType());
  OpBuilder b(def->getBlock(), ++Block::iterator(def));
  keptBy[v] = store(b, v, slot, loopOf(def).getInductionVar());
  slots[v] = slot;
  return slot;
}

/// Each thread compares its value with thread 0's, which a loop that runs
/// once for the block takes: on a GPU, threads that disagree would not
/// meet at the barriers inside.
void ThreadLoopFormer::checkUniform(Value v, Slot slot) {
  if (!checked.insert(v).second)
    return;
  Type type = v.getType();
  if (!type.isIntOrIndexOrFloat())
    return;
  Operation *kept = keptBy.lookup(v);
  OpBuilder b(kept->getBlock(), ++Block::iterator(kept));
  Value first = load(b, type, slot, c0);
  Value mine = v;
  if (isa<FloatType>(type)) {
    auto bits = b.getIntegerType(type.getIntOrFloatBitWidth());
    first = arith::BitcastOp::create(b, loc, bits, first);
    mine = arith::BitcastOp::create(b, loc, bits, mine);
  }
  Value same =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, mine, first);
  cf::AssertOp::create(
      b, loc, same,
      "gpu-emulation: the threads of a block of kernel " + kernelName +
          " disagree on a loop bound or branch condition around a barrier");
}

/// `v` (each thread's, from another thread loop) where `user` needs it: in
/// `useLoop` for the same thread, or thread 0's where `user` runs once for
/// the block (null `useLoop`).
FailureOr<Value> ThreadLoopFormer::materialize(Value v, scf::ForOp useLoop,
                                               Operation *user) {
  if (useLoop) {
    if (Value known = materialized.lookup({v, useLoop}))
      return known;
  }
  OpBuilder b = useLoop ? OpBuilder(anchor[useLoop]) : OpBuilder(user);
  Value result;
  Operation *def = v.getDefiningOp();
  if (def && rematerializable(def) && (useLoop || !dependsOnThread(v))) {
    IRMapping map;
    for (Value operand : def->getOperands()) {
      if (!loopOf(operand))
        continue;
      if (threadLoopIv(operand)) {
        map.map(operand, useLoop.getInductionVar());
        continue;
      }
      FailureOr<Value> there = materialize(operand, useLoop, user);
      if (failed(there))
        return failure();
      map.map(operand, *there);
    }
    result = b.clone(*def, map)->getResult(0);
  } else {
    FailureOr<Slot> slot = slotOf(v);
    if (failed(slot))
      return failure();
    if (!useLoop)
      checkUniform(v, *slot);
    result =
        load(b, v.getType(), *slot, useLoop ? useLoop.getInductionVar() : c0);
  }
  if (useLoop)
    materialized[{v, useLoop}] = result;
  return result;
}

/// Each use of a thread's value in another thread loop (or by an op that
/// runs once for the block) given that value there.
LogicalResult ThreadLoopFormer::connect() {
  SmallVector<OpOperand *> tidUses;
  for (OpOperand &use : tid.getUses())
    tidUses.push_back(&use);
  for (OpOperand *use : tidUses) {
    scf::ForOp loop = loopOf(use->getOwner());
    if (!loop)
      return use->getOwner()->emitOpError(
          "uses the thread index where the block's threads must agree (around "
          "a barrier)");
    use->set(loop.getInductionVar());
  }
  SmallVector<Operation *> ops;
  team.walk([&](Operation *op) {
    if (op != team && !threadLoops.contains(op))
      ops.push_back(op);
  });
  for (Operation *op : ops) {
    scf::ForOp useLoop = loopOf(op);
    for (OpOperand &operand : op->getOpOperands()) {
      scf::ForOp defLoop = loopOf(operand.get());
      if (!defLoop || defLoop == useLoop)
        continue;
      FailureOr<Value> there = materialize(operand.get(), useLoop, op);
      if (failed(there))
        return failure();
      operand.set(*there);
    }
  }
  return success();
}

LogicalResult ThreadLoopFormer::run() {
  c0 = arith::ConstantIndexOp::create(allocs, loc, 0);
  c1 = arith::ConstantIndexOp::create(allocs, loc, 1);
  team.walk([&](omp::BarrierOp barrier) {
    for (Operation *p = barrier; p != team; p = p->getParentOp())
      withBarrier.insert(p);
  });
  Block &body = team.getRegion().front();
  if (failed(prepare(body)))
    return failure();
  form(body);
  if (failed(connect()))
    return failure();
  // The thread index's own definition is dead now.
  for (Operation *def = tid.getDefiningOp(); def && def->use_empty();) {
    Operation *next =
        def->getNumOperands() ? def->getOperand(0).getDefiningOp() : nullptr;
    def->erase();
    def = next;
  }
  for (Operation &op : llvm::make_early_inc_range(body.without_terminator()))
    op.moveBefore(team);
  team.erase();
  for (auto &[type, pool] : pools)
    pool.second.setValueAttr(
        IntegerAttr::get(IndexType::get(type.getContext()), poolRows[type]));
  OpBuilder frees(scope->getTerminator());
  for (Value buf : buffers)
    memref::DeallocOp::create(frees, loc, buf);
  return success();
}

} // namespace

LogicalResult mlir::hkt::formThreadLoops(omp::ParallelOp team, Value tid,
                                         Value threads, Block *scope,
                                         StringRef kernelName) {
  return ThreadLoopFormer(team, tid, threads, scope, kernelName).run();
}
