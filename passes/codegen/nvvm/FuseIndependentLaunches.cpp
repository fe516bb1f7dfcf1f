//===- FuseIndependentLaunches.cpp - one launch for independent ones ----===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// Horizontal fusion of kernels: a run of consecutive gpu.launch ops of the
// same kind (the same name up to its number: "adamw_720", "adamw_721"...)
// that touch disjoint buffers becomes one launch whose grid is the sum of
// theirs; block b runs the first body while b < G0, the second (as block
// b - G0) while b < G0 + G1, and so on. The AdamW step's per-parameter
// updates become one kernel over all the parameters, as a multi-tensor
// apply does, and the per-parameter accumulations after each row of a
// batch become one kernel per row. Pass options restrict it to some kinds.
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/nvvm/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTNVVMFUSEINDEPENDENTLAUNCHESPASS
#include "passes/codegen/nvvm/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;

namespace {

/// Whether `root` is a buffer of its own: an allocation, a global, or an
/// argument of the function (anything else may alias what it came from).
bool isKnownBuffer(Value root) {
  if (auto arg = dyn_cast<BlockArgument>(root))
    return isa<FunctionOpInterface>(arg.getOwner()->getParentOp());
  return isa<gpu::AllocOp, memref::AllocOp, memref::AllocaOp,
             memref::GetGlobalOp>(root.getDefiningOp());
}

/// What a launch reads and writes, by root buffer.
struct Footprint {
  DenseSet<Value> read, written;
  bool conflictsWith(const Footprint &other) const {
    for (Value w : written)
      if (other.read.contains(w) || other.written.contains(w))
        return true;
    for (Value w : other.written)
      if (read.contains(w))
        return true;
    return false;
  }
  void add(const Footprint &other) {
    read.insert(other.read.begin(), other.read.end());
    written.insert(other.written.begin(), other.written.end());
  }
};

/// What the kernel's parameters take at most: PTX before ISA 8.1 allows
/// 4352 bytes, and a memref descriptor takes (3 + 2 rank) 8-byte words.
constexpr int64_t kMaxParameterBytes = 4096;

/// The bytes of `launch`'s kernel parameters: the values its body uses from
/// above, except constants (sunk into the kernel before outlining).
int64_t parameterBytes(gpu::LaunchOp launch) {
  SetVector<Value> used;
  getUsedValuesDefinedAbove(launch.getBody(), used);
  int64_t bytes = 0;
  for (Value v : used) {
    if (matchPattern(v, m_Constant()))
      continue;
    if (auto memref = dyn_cast<MemRefType>(v.getType()))
      bytes += 8 * (3 + 2 * memref.getRank());
    else
      bytes += 8;
  }
  return bytes;
}

/// A launch that can join a run: one block, a static one-dimensional grid,
/// no shared memory, and memory effects that name their buffers.
struct Candidate {
  gpu::LaunchOp launch;
  std::string kind;
  int64_t blocks;
  int64_t parameterBytes;
  Footprint footprint;
};

/// The name of `launch` without its trailing "_<number>".
std::string kindOf(gpu::LaunchOp launch) {
  std::optional<StringRef> name = launch.getFunction();
  if (!name)
    return "";
  StringRef base = name->rsplit('_').first;
  StringRef number = name->rsplit('_').second;
  return !number.empty() && llvm::all_of(number, llvm::isDigit) ? base.str()
                                                                : name->str();
}

std::optional<int64_t> constant(Value v) {
  APInt value;
  if (!matchPattern(v, m_ConstantInt(&value)))
    return std::nullopt;
  return value.getSExtValue();
}

std::optional<Candidate> asCandidate(gpu::LaunchOp launch) {
  Candidate c{launch, kindOf(launch), 0, parameterBytes(launch), {}};
  std::optional<int64_t> gx = constant(launch.getGridSizeX()),
                         gy = constant(launch.getGridSizeY()),
                         gz = constant(launch.getGridSizeZ());
  if (c.kind.empty() || !gx || gy != 1 || gz != 1 || *gx < 1 ||
      launch.getBody().getBlocks().size() != 1 ||
      launch.getNumWorkgroupAttributions() ||
      launch.getNumPrivateAttributions() ||
      launch.getDynamicSharedMemorySize() || launch.getAsyncToken() ||
      !launch.getAsyncDependencies().empty() || launch.getClusterSizeX())
    return std::nullopt;
  c.blocks = *gx;
  WalkResult walk = launch.getBody().walk([&](Operation *op) {
    if (isMemoryEffectFree(op) ||
        op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return WalkResult::advance();
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects)
      return WalkResult::interrupt();
    SmallVector<MemoryEffects::EffectInstance> list;
    effects.getEffects(list);
    for (const MemoryEffects::EffectInstance &e : list) {
      if (isa<MemoryEffects::Allocate, MemoryEffects::Free>(e.getEffect()))
        continue;
      // Distinct roots are distinct buffers (function arguments do not
      // alias, as one-shot bufferization assumes).
      auto v = dyn_cast_or_null<MemrefValue>(e.getValue());
      Value root = v ? memref::skipViewLikeOps(v) : Value();
      if (!root || !isKnownBuffer(root))
        return WalkResult::interrupt(); // an effect on unknown memory
      (isa<MemoryEffects::Write>(e.getEffect()) ? c.footprint.written
                                                : c.footprint.read)
          .insert(root);
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return std::nullopt;
  return c;
}

/// One launch running the bodies of `run` (see the file comment), in
/// place of the first; the others are erased.
void fuse(ArrayRef<Candidate> run) {
  gpu::LaunchOp first = run.front().launch;
  ImplicitLocOpBuilder b(first.getLoc(), first);
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, v);
  };
  int64_t total = 0;
  for (const Candidate &k : run)
    total += k.blocks;
  auto fused = gpu::LaunchOp::create(
      b, c(total), c(1), c(1), first.getBlockSizeOperandValues().x,
      first.getBlockSizeOperandValues().y, first.getBlockSizeOperandValues().z);
  fused.setFunctionAttr(first.getFunctionAttr());
  Block &body = fused.getBody().front();
  b.setInsertionPointToStart(&body);
  gpu::TerminatorOp terminator = gpu::TerminatorOp::create(b);
  b.setInsertionPoint(terminator);
  Value block = fused.getBlockIds().x;
  int64_t offset = 0;
  for (auto [i, entry] : llvm::enumerate(run)) {
    Candidate k = entry;
    // Blocks [offset, offset + k.blocks) run k's body; the last body takes
    // the rest of the grid without a test.
    bool last = i + 1 == run.size();
    scf::IfOp branch;
    if (!last) {
      Value mine = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, block,
                                         c(offset + k.blocks));
      branch = scf::IfOp::create(b, mine, /*withElseRegion=*/true);
      b.setInsertionPointToStart(&branch.getThenRegion().front());
    }
    IRMapping map;
    Block &old = k.launch.getBody().front();
    map.map(old.getArguments(), body.getArguments());
    map.map(k.launch.getBlockIds().x,
            offset ? arith::SubIOp::create(b, block, c(offset)).getResult()
                   : block);
    map.map(k.launch.getGridSize().x, c(k.blocks));
    for (Operation &op : old.without_terminator())
      b.clone(op, map);
    offset += k.blocks;
    if (!last)
      b.setInsertionPointToStart(&branch.getElseRegion().front());
  }
  for (Candidate k : run)
    k.launch.erase();
}

bool sameValue(Value a, Value b) {
  return a == b || (constant(a) && constant(a) == constant(b));
}

bool sameBlockSize(gpu::LaunchOp a, gpu::LaunchOp b) {
  gpu::KernelDim3 x = a.getBlockSizeOperandValues(),
                  y = b.getBlockSizeOperandValues();
  return sameValue(x.x, y.x) && sameValue(x.y, y.y) && sameValue(x.z, y.z);
}

/// Ops that may move above a run's first launch: free of memory effects,
/// or allocating their result and nothing else (a fresh buffer is no
/// launch's business before its first use).
bool hoistable(Operation *op) {
  if (op->getNumRegions())
    return false;
  if (isMemoryEffectFree(op))
    return true;
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  SmallVector<MemoryEffects::EffectInstance> list;
  if (effects)
    effects.getEffects(list);
  return effects && llvm::all_of(list, [&](auto &e) {
           return isa<MemoryEffects::Allocate>(e.getEffect()) && e.getValue() &&
                  e.getValue().getDefiningOp() == op;
         });
}

/// Whether every op strictly between `from` and `to` (same block) is
/// hoistable, so that the launches around them may meet.
bool onlyHoistableBetween(Operation *from, Operation *to) {
  for (Operation *op = from->getNextNode(); op != to; op = op->getNextNode())
    if (!hoistable(op))
      return false;
  return true;
}

/// The runs of `block` that fuse: launches of a `wanted` kind, in order,
/// with only hoistable ops between them.
SmallVector<SmallVector<Candidate>>
findRuns(Block &block, llvm::function_ref<bool(StringRef)> wanted) {
  SmallVector<SmallVector<Candidate>> runs;
  SmallVector<Candidate> run;
  Footprint runFootprint;
  int64_t runBytes = 0;
  auto close = [&] {
    if (run.size() > 1)
      runs.push_back(run);
    run.clear();
    runFootprint = {};
    runBytes = 0;
  };
  for (Operation &op : block) {
    auto launch = dyn_cast<gpu::LaunchOp>(op);
    std::optional<Candidate> k;
    if (launch)
      k = asCandidate(launch);
    if (!k || !wanted(k->kind)) {
      if (!hoistable(&op))
        close();
      continue;
    }
    bool joins = !run.empty() && run.front().kind == k->kind &&
                 !runFootprint.conflictsWith(k->footprint) &&
                 runBytes + k->parameterBytes <= kMaxParameterBytes &&
                 onlyHoistableBetween(run.back().launch, launch) &&
                 sameBlockSize(run.front().launch, launch);
    if (!joins)
      close();
    runFootprint.add(k->footprint);
    runBytes += k->parameterBytes;
    run.push_back(*k);
  }
  close();
  return runs;
}

/// Fuses `run` after moving the ops between its launches (their sizes,
/// constants, fresh buffers) above the first, so that every operand is
/// defined before the fused launch.
void hoistAndFuse(ArrayRef<Candidate> run) {
  Operation *firstLaunch = run.front().launch;
  Operation *lastLaunch = run.back().launch;
  for (Operation *op = firstLaunch->getNextNode(); op != lastLaunch;) {
    Operation *next = op->getNextNode();
    if (!isa<gpu::LaunchOp>(op))
      op->moveBefore(firstLaunch);
    op = next;
  }
  fuse(run);
}

struct HktNvvmFuseIndependentLaunchesPass
    : public mlir::hkt::impl::HktNvvmFuseIndependentLaunchesPassBase<
          HktNvvmFuseIndependentLaunchesPass> {
  using HktNvvmFuseIndependentLaunchesPassBase::
      HktNvvmFuseIndependentLaunchesPassBase;

  void runOnOperation() override {
    SmallVector<Block *> blocks;
    getOperation()->walk([&](Block *block) {
      if (!block->getParentOp()->getParentOfType<gpu::LaunchOp>() &&
          !isa<gpu::LaunchOp>(block->getParentOp()))
        blocks.push_back(block);
    });
    auto wanted = [&](StringRef kind) {
      return kinds.empty() || llvm::is_contained(kinds, kind.str());
    };
    for (Block *block : blocks)
      for (const SmallVector<Candidate> &run : findRuns(*block, wanted))
        hoistAndFuse(run);
  }
};
} // namespace
