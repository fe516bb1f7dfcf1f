//===- MapParallelLoops.cpp - host linalg ops and loops -> gpu.launch -----===//
//
// What the NVVM path has not given a kernel of its own (downsampling, the
// hybrid head, normalisation, the projections outside bf16, and their
// gradients) arrives as linalg ops on memrefs. Each becomes one gpu.launch
// named for what it does (its hkt.kernel tag, "downsample_grad", or its
// kind, "transpose", then a number):
//
//   - a sum over a long reduction (>= kWarpReductionMin terms, the
//     gradients of weights and biases summed over batch and time) gets a
//     warp per output element: lanes stride the reduction, then a shuffle
//     tree adds the 32 partial sums;
//   - everything else: upstream's linalg-to-parallel-loops gives one
//     scf.parallel over the op's parallel dimensions (reductions as scf.for
//     inside), mapped to one thread per iteration, linearised with the
//     innermost dimension fastest so that neighbouring threads touch
//     neighbouring elements (coalesced). Upstream's gpu-map-parallel-loops
//     maps at most three dimensions and leaves the rest sequential inside
//     each thread, which for these rank-3 and rank-4 loops leaves most
//     threads idle.
//
// scf.parallel loops already there are mapped the same way.
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/nvvm/Passes.h"
#include "passes/codegen/nvvm/TargetInfo.h"
#include "passes/codegen/nvvm/ZeroFill.h"

#include "dialect/HKTDialect.h"
#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTNVVMMAPPARALLELLOOPSPASS
#include "passes/codegen/nvvm/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;
using mlir::hkt::NvvmTargetInfo;

namespace {

LogicalResult mapToLaunch(scf::ParallelOp loop, int64_t blockSize,
                          StringRef name) {
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
  launch.setFunctionAttr(FlatSymbolRefAttr::get(b.getContext(), name));
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

/// A launch of one thread around `loop`, which has no parallel dimension.
LogicalResult mapToSingleThread(Operation *loop, StringRef name) {
  ImplicitLocOpBuilder b(loop->getLoc(), loop);
  Value one = arith::ConstantIndexOp::create(b, 1);
  auto launch = gpu::LaunchOp::create(b, one, one, one, one, one, one);
  launch.setFunctionAttr(FlatSymbolRefAttr::get(b.getContext(), name));
  b.setInsertionPointToStart(&launch.getBody().front());
  gpu::TerminatorOp terminator = gpu::TerminatorOp::create(b);
  loop->moveBefore(terminator);
  return success();
}

/// Terms a sum needs before it gets a warp per output element: below that,
/// a thread per element does the sum serially about as fast and the other
/// 31 lanes stay free for other elements.
constexpr int64_t kWarpReductionMin = 64;

/// What a kernel computing `op` is called, before its number.
std::string kernelBaseName(linalg::LinalgOp op) {
  if (auto tag = op->getAttrOfType<StringAttr>(hkt::kKernelAttr))
    return tag.str();
  if (isa<linalg::GenericOp>(op.getOperation()))
    return op.getNumReductionLoops() ? "reduce" : "elementwise";
  return op->getName().stripDialect().str();
}

/// A sum of `x` into the output: the op's region yields out + x (or
/// x + out) with out used nowhere else. Returns x's addf.
arith::AddFOp sumOf(linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1 || op.getNumResults() != 0)
    return {};
  Block &body = op.getRegion().front();
  BlockArgument out = body.getArguments().back();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getValues()[0].getDefiningOp<arith::AddFOp>();
  if (!add || !add.getType().isF32() || !out.hasOneUse() ||
      (add.getLhs() != out && add.getRhs() != out))
    return {};
  return add;
}

/// The loop ranges of `op` (ShapedType::kDynamic where a size is known at
/// run time only: a dynamic batch or sequence length), split into parallel
/// and reduction dims, and the products of each (dynamic if any factor is).
struct LoopSplit {
  SmallVector<int64_t> ranges, parallel, reduction;
  int64_t parallelCount = 1, reductionCount = 1;

  /// With `allParallel`, every loop counts as parallel.
  static LoopSplit of(linalg::LinalgOp op, bool allParallel) {
    LoopSplit s;
    s.ranges = op.getStaticLoopRanges();
    for (auto [i, it] : llvm::enumerate(op.getIteratorTypesArray())) {
      bool red = !allParallel && it == utils::IteratorType::reduction;
      (red ? s.reduction : s.parallel).push_back(i);
      int64_t &count = red ? s.reductionCount : s.parallelCount;
      count = ShapedType::isDynamic(count) || ShapedType::isDynamic(s.ranges[i])
                  ? ShapedType::kDynamic
                  : count * s.ranges[i];
    }
    return s;
  }
};

/// ivs[dims[k]] from `linear`, the last of `dims` fastest; `ranges` the
/// loops' trip counts.
void delinearize(ImplicitLocOpBuilder &b, Value linear, ArrayRef<int64_t> dims,
                 ArrayRef<Value> ranges, SmallVectorImpl<Value> &ivs) {
  Value rest = linear;
  for (int64_t k = dims.size() - 1; k >= 0; --k) {
    Value n = ranges[dims[k]];
    ivs[dims[k]] = k == 0 ? rest : b.createOrFold<arith::RemUIOp>(rest, n);
    if (k > 0)
      rest = b.createOrFold<arith::DivUIOp>(rest, n);
  }
}

/// The indices `map` gives at `ivs`.
SmallVector<Value> indicesAt(ImplicitLocOpBuilder &b, AffineMap map,
                             ArrayRef<Value> ivs) {
  SmallVector<Value> indices;
  for (AffineExpr e : map.getResults())
    indices.push_back(
        affine::expandAffineExpr(b, b.getLoc(), e, ivs, ValueRange{}));
  return indices;
}

/// The sum `op` with `lanes` threads per output element (1, or a warp for
/// long sums): lane l adds the terms l, l + lanes, ... of the reduction, a
/// butterfly of xor shuffles adds a warp's partial sums, lane 0 adds the
/// total into the output. Every warp of a block reaches the shuffles (a
/// warp past the end sums nothing), so that they run converged. The
/// reduction loops stay inside the kernel whatever their place among the
/// op's loops (linalg-to-parallel-loops would put a leading reduction
/// around the launch, on the host). Where the output's indices depend on
/// reduction loops (`atomic`: d theta sums heads' columns into one row per
/// head), `s` counts every loop as parallel and each thread adds its term
/// with an atomic add. With `overwrite` (the output's zero fill absorbed,
/// not atomic) lane 0 stores the total instead of adding it.
void mapSum(linalg::GenericOp op, arith::AddFOp add, const LoopSplit &s,
            bool atomic, bool overwrite, int64_t blockSize, StringRef name) {
  constexpr int64_t warp = NvvmTargetInfo::kWarpSize;
  // A reduction over a dynamic size runs over a batch or a sequence: long.
  int64_t lanes = ShapedType::isDynamic(s.reductionCount) ||
                          s.reductionCount >= kWarpReductionMin
                      ? warp
                      : 1;
  ImplicitLocOpBuilder b(op.getLoc(), op);
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, v);
  };
  // The trip counts on the host (constants where static) and their
  // products.
  SmallVector<Value> ranges;
  for (Range r : cast<linalg::LinalgOp>(op.getOperation())
                     .createLoopRanges(b, b.getLoc()))
    ranges.push_back(getValueOrCreateConstantIndexOp(b, b.getLoc(), r.size));
  auto product = [&](ArrayRef<int64_t> dims) {
    Value n = c(1);
    for (int64_t d : dims)
      n = b.createOrFold<arith::MulIOp>(n, ranges[d]);
    return n;
  };
  Value parallelCount = product(s.parallel);
  Value reductionCount = product(s.reduction);
  int64_t perBlock = blockSize / lanes;
  // A grid of zero blocks is a launch error (an empty dynamic batch).
  if (ShapedType::isDynamic(s.parallelCount)) {
    Value any = arith::CmpIOp::create(b, arith::CmpIPredicate::ugt,
                                      parallelCount, c(0));
    auto guard = scf::IfOp::create(b, any, /*withElseRegion=*/false);
    b.setInsertionPointToStart(&guard.getThenRegion().front());
  }
  auto launch = gpu::LaunchOp::create(
      b, b.createOrFold<arith::CeilDivUIOp>(parallelCount, c(perBlock)), c(1),
      c(1), c(blockSize), c(1), c(1));
  launch.setFunctionAttr(FlatSymbolRefAttr::get(b.getContext(), name));
  b.setInsertionPointToStart(&launch.getBody().front());
  gpu::TerminatorOp terminator = gpu::TerminatorOp::create(b);
  b.setInsertionPoint(terminator);
  Value tid = launch.getThreadIds().x;
  Value lane = b.createOrFold<arith::RemUIOp>(tid, c(lanes));
  Value element = arith::AddIOp::create(
      b, arith::MulIOp::create(b, launch.getBlockIds().x, c(perBlock)),
      b.createOrFold<arith::DivUIOp>(tid, c(lanes)));
  Value inside = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, element,
                                       parallelCount);
  SmallVector<Value> ivs(s.ranges.size());
  delinearize(
      b,
      arith::MinUIOp::create(
          b, element, b.createOrFold<arith::SubIOp>(parallelCount, c(1))),
      s.parallel, ranges, ivs);
  Value terms = arith::SelectOp::create(b, inside, reductionCount, c(0));
  Value zero = arith::ConstantOp::create(b, b.getF32FloatAttr(0.0f));
  auto loop = scf::ForOp::create(b, lane, terms, c(lanes), ValueRange{zero});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    delinearize(b, loop.getInductionVar(), s.reduction, ranges, ivs);
    Block &body = op.getRegion().front();
    IRMapping map;
    for (OpOperand *in : op.getDpsInputOperands())
      map.map(body.getArgument(in->getOperandNumber()),
              memref::LoadOp::create(
                  b, in->get(),
                  indicesAt(b, op.getMatchingIndexingMap(in), ivs)));
    for (Operation &inner : body.without_terminator()) {
      if (auto index = dyn_cast<linalg::IndexOp>(inner))
        map.map(index.getResult(), ivs[index.getDim()]);
      else if (&inner != add.getOperation())
        b.clone(inner, map);
    }
    BlockArgument out = body.getArguments().back();
    Value term = map.lookupOrDefault(add.getLhs() == out ? add.getRhs()
                                                         : add.getLhs());
    scf::YieldOp::create(
        b, ValueRange{arith::AddFOp::create(b, loop.getRegionIterArgs()[0],
                                            term)});
  }
  Value total = loop.getResult(0);
  for (int32_t offset = lanes / 2; offset > 0; offset /= 2) {
    Value other = gpu::ShuffleOp::create(b, total, offset, warp,
                                         gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    total = arith::AddFOp::create(b, total, other);
  }
  Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, c(0));
  auto ifFirst = scf::IfOp::create(b, arith::AndIOp::create(b, inside, first),
                                   /*withElseRegion=*/false);
  b.setInsertionPointToStart(&ifFirst.getThenRegion().front());
  OpOperand *init = op.getDpsInitOperand(0);
  SmallVector<Value> at = indicesAt(b, op.getMatchingIndexingMap(init), ivs);
  if (atomic) {
    memref::AtomicRMWOp::create(b, arith::AtomicRMWKind::addf, total,
                                init->get(), at);
  } else if (overwrite) {
    memref::StoreOp::create(b, total, init->get(), at);
  } else {
    Value old = memref::LoadOp::create(b, init->get(), at);
    memref::StoreOp::create(b, arith::AddFOp::create(b, old, total),
                            init->get(), at);
  }
  op.erase();
}

/// How a sum runs (mapSum): its addf, loops, and whether it adds
/// atomically.
struct SumPlan {
  arith::AddFOp add;
  LoopSplit split;
  bool atomic;
};

/// The plan if `op` is a sum that mapSum runs, else nothing.
std::optional<SumPlan> planSum(linalg::LinalgOp op) {
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic)
    return std::nullopt;
  arith::AddFOp add = sumOf(generic);
  if (!add)
    return std::nullopt;
  AffineMap out = generic.getMatchingIndexingMap(generic.getDpsInitOperand(0));
  SmallVector<unsigned> reductionDims;
  op.getReductionDims(reductionDims);
  bool atomic = llvm::any_of(reductionDims, [&](unsigned d) {
    return out.isFunctionOfDim(d);
  });
  LoopSplit split = LoopSplit::of(op, atomic);
  if (!atomic && split.reductionCount == 1)
    return std::nullopt;
  return SumPlan{add, split, atomic};
}

/// One launch for `op` (see the file comment); `overwrite`: a sum whose
/// output's zero fill was absorbed.
LogicalResult mapLinalgOp(linalg::LinalgOp op, int64_t blockSize,
                          StringRef name, bool overwrite) {
  if (std::optional<SumPlan> plan = planSum(op)) {
    mapSum(cast<linalg::GenericOp>(op.getOperation()), plan->add, plan->split,
           plan->atomic, overwrite, blockSize, name);
    return success();
  }
  IRRewriter rewriter(op);
  FailureOr<linalg::LinalgLoops> loops =
      linalg::linalgOpToParallelLoops(rewriter, op);
  if (failed(loops))
    return op->emitOpError("cannot be lowered to loops for a GPU kernel");
  rewriter.eraseOp(op);
  if (loops->empty())
    return success();
  if (auto parallel = dyn_cast<scf::ParallelOp>(loops->front()))
    return mapToLaunch(parallel, blockSize, name);
  // No parallel dimension (a scalar that is not a sum: the loss's
  // reductions over a small batch): one thread runs the loops.
  return mapToSingleThread(loops->front(), name);
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
    // linalg.reduce (the model's sums over row chunks) as the generic it
    // is, so that planSum sees the sum: a thread per output element, not
    // linalg-to-loops' one thread around the whole reduction.
    SmallVector<linalg::ReduceOp> reduces;
    getOperation()->walk([&](linalg::ReduceOp op) {
      if (op.hasPureBufferSemantics() && !op->getParentOfType<gpu::LaunchOp>())
        reduces.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::ReduceOp op : reduces) {
      StringAttr tag = op->getAttrOfType<StringAttr>(hkt::kKernelAttr);
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::GenericOp> generic =
          linalg::generalizeNamedOp(rewriter, op);
      if (failed(generic)) {
        op.emitOpError("cannot be generalized for a GPU kernel");
        return signalPassFailure();
      }
      (*generic)->setAttr(hkt::kKernelAttr,
                          tag ? tag : rewriter.getStringAttr("reduce"));
    }
    // Structured ops first, named by what they compute; then loops that
    // came as loops.
    SmallVector<linalg::LinalgOp> ops;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (op.hasPureBufferSemantics() &&
          !op->getParentOfType<gpu::LaunchOp>() &&
          !op->getParentOfType<scf::ParallelOp>())
        ops.push_back(op);
    });
    // A sum into a fresh zero-filled output absorbs the fill: it stores
    // its sums (one kernel and one read of the output less).
    DenseSet<Operation *> overwrite, absorbed;
    for (linalg::LinalgOp op : ops) {
      std::optional<SumPlan> plan = planSum(op);
      if (!plan || plan->atomic)
        continue;
      if (linalg::FillOp fill = hkt::nvvm::absorbableZeroFill(
              op, op.getDpsInits()[0])) {
        overwrite.insert(op);
        absorbed.insert(fill);
      }
    }
    int64_t count = 0;
    auto next = [&](StringRef base) {
      return llvm::formatv("{0}_{1}", base, count++).str();
    };
    for (linalg::LinalgOp op : ops) {
      if (absorbed.contains(op)) {
        op->erase();
        continue;
      }
      if (failed(mapLinalgOp(op, blockSize, next(kernelBaseName(op)),
                             overwrite.contains(op))))
        return signalPassFailure();
    }
    SmallVector<scf::ParallelOp> outermost;
    getOperation()->walk([&](scf::ParallelOp loop) {
      if (!loop->getParentOfType<scf::ParallelOp>() &&
          !loop->getParentOfType<gpu::LaunchOp>())
        outermost.push_back(loop);
    });
    for (scf::ParallelOp loop : outermost)
      if (failed(mapToLaunch(loop, blockSize, next("loop"))))
        return signalPassFailure();
  }
};
} // namespace
