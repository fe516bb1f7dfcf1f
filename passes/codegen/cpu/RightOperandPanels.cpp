//===- RightOperandPanels.cpp - a matmul's right operand in panels --------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// A register tile of a whole matmul reads, at each K step, one row of its
// columns of the right operand: P floats (P = the tile's vectors x lanes). In
// the operand's own layout (K x N, rows 2 KiB apart at N = 512) those rows are
// one to two cache lines each, ~2 KiB apart, which neither the L1 stride
// prefetcher (strides up to 2 KiB) nor the streamer follows well; in panels
// (N/P x K x P) a tile's reads are consecutive lines. This is BLIS's packing
// of B; the copy replaces the row-padded copy hkt-cpu-codegen made anyway
// (same size, once per call). A and C stay as they are.
//
// Done after the recipe, on what it made of the matmul (vector reads at
// register-tile columns), so that the recipe's tiling and vectorisation stay
// upstream's: the reads' indices are remapped, the copy (split across the
// threads by rows) writes panel-wide vectors. Where a read cannot be proven
// to stay inside one panel the padded copy is kept.
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/cpu/RightOperandPanels.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace {

bool isMultipleOf(OpFoldResult v, int64_t m, int depth);

/// True when the index `v` is provably a multiple of `m`: constants, the
/// induction variables of loops whose bounds and steps are, and sums and
/// products of those (arith or affine.apply).
bool isMultipleOf(Value v, int64_t m, int depth) {
  if (m == 1)
    return true;
  if (depth > 12)
    return false;
  if (std::optional<int64_t> c = getConstantIntValue(v))
    return *c % m == 0;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    Operation *owner = arg.getOwner()->getParentOp();
    if (auto loop = dyn_cast<scf::ForOp>(owner))
      return arg == loop.getInductionVar() &&
             isMultipleOf(loop.getLowerBound(), m, depth + 1) &&
             isMultipleOf(loop.getStep(), m, depth + 1);
    if (auto forall = dyn_cast<scf::ForallOp>(owner)) {
      for (auto [i, iv] : llvm::enumerate(forall.getInductionVars()))
        if (iv == arg)
          return isMultipleOf(forall.getMixedLowerBound()[i], m, depth + 1) &&
                 isMultipleOf(forall.getMixedStep()[i], m, depth + 1);
    }
    return false;
  }
  Operation *def = v.getDefiningOp();
  if (auto add = dyn_cast<arith::AddIOp>(def))
    return isMultipleOf(add.getLhs(), m, depth + 1) &&
           isMultipleOf(add.getRhs(), m, depth + 1);
  if (auto mul = dyn_cast<arith::MulIOp>(def))
    return isMultipleOf(mul.getLhs(), m, depth + 1) ||
           isMultipleOf(mul.getRhs(), m, depth + 1);
  if (auto apply = dyn_cast<affine::AffineApplyOp>(def)) {
    AffineMap map = apply.getAffineMap();
    ValueRange operands = apply.getMapOperands();
    unsigned numDims = map.getNumDims();
    std::function<bool(AffineExpr)> expr = [&](AffineExpr e) -> bool {
      if (auto c = dyn_cast<AffineConstantExpr>(e))
        return c.getValue() % m == 0;
      if (auto d = dyn_cast<AffineDimExpr>(e))
        return isMultipleOf(operands[d.getPosition()], m, depth + 1);
      if (auto s = dyn_cast<AffineSymbolExpr>(e))
        return isMultipleOf(operands[numDims + s.getPosition()], m, depth + 1);
      auto bin = dyn_cast<AffineBinaryOpExpr>(e);
      if (!bin)
        return false;
      if (e.getKind() == AffineExprKind::Add)
        return expr(bin.getLHS()) && expr(bin.getRHS());
      if (e.getKind() == AffineExprKind::Mul)
        return expr(bin.getLHS()) || expr(bin.getRHS());
      return false;
    };
    return expr(map.getResult(0));
  }
  return false;
}

bool isMultipleOf(OpFoldResult v, int64_t m, int depth) {
  if (auto attr = dyn_cast<Attribute>(v))
    return cast<IntegerAttr>(attr).getInt() % m == 0;
  return isMultipleOf(cast<Value>(v), m, depth);
}

/// A whole-row view [r, 0] [R, n] with unit strides.
bool isWholeRows(memref::SubViewOp view, int64_t n) {
  ArrayRef<int64_t> offsets = view.getStaticOffsets();
  ArrayRef<int64_t> sizes = view.getStaticSizes();
  return view.getSourceType().getRank() == 2 && view.getType().getRank() == 2 &&
         view.hasUnitStride() && offsets[1] == 0 && sizes[1] == n;
}

} // namespace

bool mlir::hkt::packRightOperandInPanels(memref::AllocOp padded) {
  MemRefType type = padded.getType();
  if (type.getRank() != 2 || !type.hasStaticShape())
    return false;
  int64_t k = type.getDimSize(0);

  // What the recipe left: the copy that fills the operand (whole rows, in
  // thread blocks), the register tiles' vector reads, scalar loads of
  // remainder loops, the free.
  SmallVector<std::pair<memref::SubViewOp, linalg::CopyOp>> copies;
  SmallVector<vector::TransferReadOp> reads;
  SmallVector<memref::LoadOp> loads;
  SmallVector<memref::DeallocOp> frees;
  SmallVector<memref::SubViewOp> deadViews, readViews;
  int64_t n = -1;
  for (Operation *user : padded->getUsers()) {
    if (auto free = dyn_cast<memref::DeallocOp>(user)) {
      frees.push_back(free);
    } else if (auto read = dyn_cast<vector::TransferReadOp>(user)) {
      reads.push_back(read);
    } else if (auto load = dyn_cast<memref::LoadOp>(user)) {
      loads.push_back(load);
    } else if (auto view = dyn_cast<memref::SubViewOp>(user)) {
      if (view->use_empty()) {
        deadViews.push_back(view);
        continue;
      }
      // A remainder tile's matmul (dynamic rows) reads a view.
      if (llvm::all_of(view->getUses(), [](OpOperand &use) {
            auto op = dyn_cast<linalg::LinalgOp>(use.getOwner());
            return op && op.isDpsInput(&use);
          })) {
        readViews.push_back(view);
        continue;
      }
      for (Operation *viewUser : view->getUsers()) {
        auto copy = dyn_cast<linalg::CopyOp>(viewUser);
        if (!copy || copy.getOutputs()[0] != view.getResult() ||
            !view->hasOneUse())
          return false;
        int64_t width =
            cast<MemRefType>(copy.getInputs()[0].getType()).getDimSize(1);
        if (ShapedType::isDynamic(width) || (n >= 0 && width != n) ||
            !isWholeRows(view, width))
          return false;
        n = width;
        copies.emplace_back(view, copy);
      }
    } else {
      return false;
    }
  }
  if (n <= 0 || copies.empty() || reads.empty())
    return false;

  // The panel width: the widest read; each read at most one panel, at a
  // column that is a multiple of its width (so inside one panel).
  int64_t panel = 0;
  for (vector::TransferReadOp read : reads)
    panel = std::max(panel, read.getVectorType().getShape().back());
  if (n % panel != 0)
    return false;
  for (vector::TransferReadOp read : reads) {
    VectorType vector = read.getVectorType();
    int64_t width = vector.getShape().back();
    if (read.getMask() || vector.getRank() > 2 ||
        !read.getPermutationMap().isMinorIdentity() ||
        llvm::any_of(read.getInBoundsValues(), [](bool b) { return !b; }) ||
        panel % width != 0 || !isMultipleOf(read.getIndices()[1], width, 0))
      return false;
  }
  for (memref::SubViewOp view : readViews) {
    int64_t width = view.getStaticSizes()[1];
    if (view.getType().getRank() != 2 || !view.hasUnitStride() ||
        ShapedType::isDynamic(width) || panel % width != 0 ||
        !isMultipleOf(view.getMixedOffsets()[1], width, 0))
      return false;
  }

  MLIRContext *ctx = padded.getContext();
  Location loc = padded.getLoc();
  OpBuilder b(padded);
  auto panelsType =
      MemRefType::get({n / panel, k, panel}, type.getElementType());
  Value panels =
      memref::AllocOp::create(b, loc, panelsType, padded.getAlignmentAttr());

  // [panel, row, column in the panel] from [row, column].
  auto panelIndices = [&](OpBuilder &b, Location loc, ValueRange indices) {
    Value width = arith::ConstantIndexOp::create(b, loc, panel);
    Value which = arith::DivUIOp::create(b, loc, indices[1], width);
    Value inside = arith::RemUIOp::create(b, loc, indices[1], width);
    return SmallVector<Value>{which, indices[0], inside};
  };
  for (vector::TransferReadOp read : reads) {
    OpBuilder rb(read);
    VectorType vector = read.getVectorType();
    AffineMap map =
        vector.getRank() == 2
            ? AffineMap::get(
                  3, 0, {getAffineDimExpr(1, ctx), getAffineDimExpr(2, ctx)},
                  ctx)
            : AffineMap::get(3, 0, {getAffineDimExpr(2, ctx)}, ctx);
    Value replacement = vector::TransferReadOp::create(
        rb, read.getLoc(), vector, panels,
        panelIndices(rb, read.getLoc(), read.getIndices()), read.getPadding(),
        map, read.getInBoundsValues());
    read.replaceAllUsesWith(replacement);
    read.erase();
  }
  for (memref::LoadOp load : loads) {
    OpBuilder lb(load);
    Value replacement = memref::LoadOp::create(
        lb, load.getLoc(), panels,
        panelIndices(lb, load.getLoc(), load.getIndices()));
    load.replaceAllUsesWith(replacement);
    load.erase();
  }
  // A view of rows x width at (row, column): the same in the column's panel.
  for (memref::SubViewOp view : readViews) {
    OpBuilder vb(view);
    Location at = view.getLoc();
    SmallVector<Value> offsets = {
        getValueOrCreateConstantIndexOp(vb, at, view.getMixedOffsets()[0]),
        getValueOrCreateConstantIndexOp(vb, at, view.getMixedOffsets()[1])};
    SmallVector<Value> place = panelIndices(vb, at, offsets);
    SmallVector<OpFoldResult> sizes = {
        vb.getIndexAttr(1), view.getMixedSizes()[0], view.getMixedSizes()[1]};
    SmallVector<OpFoldResult> strides(3, vb.getIndexAttr(1));
    auto resultType = memref::SubViewOp::inferRankReducedResultType(
        view.getType().getShape(), panelsType, getAsOpFoldResult(place), sizes,
        strides);
    Value inPanel =
        memref::SubViewOp::create(vb, at, cast<MemRefType>(resultType), panels,
                                  getAsOpFoldResult(place), sizes, strides);
    for (OpOperand &use : llvm::make_early_inc_range(view->getUses()))
      use.set(inPanel);
    view.erase();
  }
  // Rows [r, r + R) of the operand into rows [r, r + R) of every panel, one
  // panel-wide vector at a time (contiguous on both sides: whole vector
  // loads and stores, where a linalg.transpose of a reshaped view would be
  // lowered to scalar loops after the recipe).
  auto vectorType = VectorType::get({panel}, type.getElementType());
  for (auto [view, copy] : copies) {
    OpBuilder cb(copy);
    Location at = copy.getLoc();
    Value source = copy.getInputs()[0];
    Value zero = arith::ConstantIndexOp::create(cb, at, 0);
    Value one = arith::ConstantIndexOp::create(cb, at, 1);
    Value width = arith::ConstantIndexOp::create(cb, at, panel);
    Value count = arith::ConstantIndexOp::create(cb, at, n / panel);
    Value rows = memref::DimOp::create(cb, at, source, 0);
    Value first =
        getValueOrCreateConstantIndexOp(cb, at, view.getMixedOffsets()[0]);
    Value padding = arith::ConstantOp::create(
        cb, at, cb.getFloatAttr(type.getElementType(), 0.0));
    scf::ForOp::create(
        cb, at, zero, rows, one, ValueRange(),
        [&](OpBuilder &b, Location loc, Value i, ValueRange) {
          Value row = arith::AddIOp::create(b, loc, first, i);
          scf::ForOp::create(
              b, loc, zero, count, one, ValueRange(),
              [&](OpBuilder &b, Location loc, Value p, ValueRange) {
                Value column = arith::MulIOp::create(b, loc, p, width);
                Value v = vector::TransferReadOp::create(
                    b, loc, vectorType, source, ValueRange{i, column}, padding,
                    ArrayRef<bool>{true});
                vector::TransferWriteOp::create(b, loc, v, panels,
                                                ValueRange{p, row, zero},
                                                ArrayRef<bool>{true});
                scf::YieldOp::create(b, loc);
              });
          scf::YieldOp::create(b, loc);
        });
    copy.erase();
    view.erase();
  }
  for (memref::SubViewOp view : deadViews)
    view.erase();
  for (memref::DeallocOp free : frees) {
    OpBuilder fb(free);
    memref::DeallocOp::create(fb, free.getLoc(), panels);
    free.erase();
  }
  padded.erase();
  return true;
}
