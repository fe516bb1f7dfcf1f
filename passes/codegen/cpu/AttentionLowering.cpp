//===- AttentionLowering.cpp - What the CPU attention lowerings share -----===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/cpu/AttentionLowering.h"
#include "dialect/HKTOps.h"
#include "dialect/OnlineAttentionTile.h"
#include "dialect/Utils/LinalgBuilders.h"

#include "dialect/Utils/TileGeometry.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Iterators.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::hkt;

namespace {
int64_t roundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
} // namespace

namespace mlir::hkt::cpu {

void chooseTiles(ArrayRef<int64_t> factors, int64_t tq, int64_t tk,
                 int64_t requestedQ, int64_t requestedK, int64_t &tileQ,
                 int64_t &tileK, int64_t &tqPad, int64_t &tkPad) {
  int64_t align = alignmentOf(factors);
  tileQ = roundUp(std::min(requestedQ, roundUp(tq, align)), align);
  tileK = roundUp(std::min(requestedK, roundUp(tk, align)), align);
  tqPad = roundUp(tq, tileQ);
  tkPad = roundUp(tk, tileK);
}

Value staticSlice(RewriterBase &rw, Location loc, RankedTensorType type,
                  Value src, ArrayRef<OpFoldResult> offsets,
                  ArrayRef<int64_t> sizes) {
  return tensor::ExtractSliceOp::create(
      rw, loc, type, src, offsets,
      getAsIndexOpFoldResult(rw.getContext(), sizes),
      SmallVector<OpFoldResult>(sizes.size(), rw.getIndexAttr(1)));
}

Value rowKeyLength(RewriterBase &rw, Location loc, Value keyLengths, Value b) {
  Value len = tensor::ExtractOp::create(rw, loc, keyLengths, ValueRange{b});
  return arith::IndexCastOp::create(rw, loc, rw.getIndexType(), len);
}

Value padHigh(RewriterBase &rw, Location loc, Value v, unsigned dim,
              OpFoldResult size, Value padValue) {
  auto t = cast<RankedTensorType>(v.getType());
  std::optional<int64_t> staticSize = getConstantIntValue(size);
  if (staticSize && t.getDimSize(dim) == *staticSize)
    return v;
  SmallVector<int64_t> shape(t.getShape());
  shape[dim] = staticSize ? *staticSize : ShapedType::kDynamic;
  // The result's dynamic sizes, in order: v's own, `size` at `dim`.
  SmallVector<Value> dynamicSizes;
  for (int64_t d = 0; d < t.getRank(); ++d)
    if (ShapedType::isDynamic(shape[d]))
      dynamicSizes.push_back(
          d == dim ? cast<Value>(size)
                   : tensor::DimOp::create(rw, loc, v, d).getResult());
  auto type = RankedTensorType::get(shape, t.getElementType());
  if (staticSize)
    return tensor::createPadHighOp(type, v, padValue, /*nofold=*/false, loc,
                                   rw, dynamicSizes);
  // A size known at run time only (a dynamic sequence): a sequence that is
  // already whole tiles is used as it is, as a static compile would, instead
  // of being copied into a pad of the same size.
  Value current = tensor::DimOp::create(rw, loc, v, dim);
  Value whole = arith::CmpIOp::create(rw, loc, arith::CmpIPredicate::eq,
                                      current, cast<Value>(size));
  auto ifOp = scf::IfOp::create(
      rw, loc, whole,
      [&](OpBuilder &b, Location l) {
        Value same = v;
        if (v.getType() != type)
          same = tensor::CastOp::create(b, l, type, v);
        scf::YieldOp::create(b, l, same);
      },
      [&](OpBuilder &b, Location l) {
        scf::YieldOp::create(
            b, l,
            tensor::createPadHighOp(type, v, padValue, /*nofold=*/false, l, b,
                                    dynamicSizes)
                .getResult());
      });
  return ifOp.getResult(0);
}

Value packHeadMajor(RewriterBase &rw, Location loc, Value src, int64_t heads,
                    int64_t tileLen, ArrayRef<int64_t> rad, bool transposed) {
  auto t = cast<RankedTensorType>(src.getType());
  Type elt = t.getElementType();
  auto type = [&](ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, elt);
  };
  int64_t batch = t.getDimSize(0), n = t.getDimSize(1),
          headDim = t.getDimSize(2) / heads;
  int64_t period = 1;
  for (int64_t r : rad)
    period *= r;
  int64_t m = rad.size();
  // The number of tiles and the rows of each (static unless N is dynamic).
  bool whole = tileLen == 0;
  OpFoldResult tiles, rows;
  if (ShapedType::isDynamic(n)) {
    Value len = tensor::DimOp::create(rw, loc, src, 1);
    tiles =
        whole
            ? OpFoldResult(rw.getIndexAttr(1))
            : OpFoldResult(arith::DivUIOp::create(
                               rw, loc, len,
                               arith::ConstantIndexOp::create(rw, loc, tileLen))
                               .getResult());
    rows = whole ? OpFoldResult(len) : rw.getIndexAttr(tileLen / period);
  } else {
    if (whole)
      tileLen = n;
    tiles = rw.getIndexAttr(n / tileLen);
    rows = rw.getIndexAttr(tileLen / period);
  }
  // B x tiles x c x r_{m-1} x ... x r_0 x H x d
  SmallVector<OpFoldResult> sizes = {rw.getIndexAttr(batch), tiles, rows};
  for (int64_t r : llvm::reverse(rad))
    sizes.push_back(rw.getIndexAttr(r));
  sizes.append({rw.getIndexAttr(heads), rw.getIndexAttr(headDim)});
  SmallVector<int64_t> shape = llvm::map_to_vector(sizes, [](OpFoldResult s) {
    return getConstantIntValue(s).value_or(ShapedType::kDynamic);
  });
  int64_t hDim = 3 + m, dDim = 4 + m;
  SmallVector<ReassociationIndices> split = {
      {0}, llvm::to_vector(llvm::seq<int64_t>(1, hDim)), {hDim, dDim}};
  Value expanded =
      tensor::ExpandShapeOp::create(rw, loc, type(shape), src, split, sizes);
  // -> B x H x tiles x [d x] r_0 x ... x r_{m-1} x c [x d]
  SmallVector<int64_t> perm = {0, hDim, 1};
  if (transposed)
    perm.push_back(dDim);
  for (int64_t i = 0; i < m; ++i)
    perm.push_back(2 + m - i);
  perm.push_back(2);
  if (!transposed)
    perm.push_back(dDim);
  SmallVector<OpFoldResult> permSizes;
  for (int64_t p : perm)
    permSizes.push_back(sizes[p]);
  Value init = tensor::EmptyOp::create(rw, loc, permSizes, elt);
  Value moved =
      linalg::TransposeOp::create(rw, loc, expanded, init, perm).getResult()[0];
  SmallVector<ReassociationIndices> merge;
  SmallVector<int64_t> outShape;
  if (transposed) {
    merge = {{0}, {1}, {2}, {3}, llvm::to_vector(llvm::seq<int64_t>(4, 5 + m))};
    outShape = {batch, heads, shape[1], headDim, whole ? n : tileLen};
  } else {
    merge = {{0}, {1}, llvm::to_vector(llvm::seq<int64_t>(2, 4 + m)), {4 + m}};
    outShape = {batch, heads, n, headDim};
  }
  return tensor::CollapseShapeOp::create(rw, loc, type(outShape), moved, merge);
}

namespace {
/// min(lengths, `bound`) elementwise (all `bound` without lengths); `bound`
/// of the lengths' element type.
Value clampLengthsTo(RewriterBase &rw, Location loc, Value lengths,
                     RankedTensorType lenType, Value bound) {
  Value empty = tensor::EmptyOp::create(rw, loc, lenType.getShape(),
                                        lenType.getElementType());
  if (!lengths)
    return linalg::FillOp::create(rw, loc, bound, empty).getResult(0);
  AffineMap id = rw.getMultiDimIdentityMap(1);
  return linalg::GenericOp::create(
             rw, loc, lenType, lengths, empty, {id, id}, {kPar},
             [&](OpBuilder &nb, Location nl, ValueRange args) {
               linalg::YieldOp::create(
                   nb, nl,
                   arith::MinSIOp::create(nb, nl, args[0], bound).getResult());
             })
      .getResult(0);
}

RankedTensorType lengthsType(RewriterBase &rw, Value lengths, int64_t batch) {
  return lengths ? cast<RankedTensorType>(lengths.getType())
                 : RankedTensorType::get({batch}, rw.getI32Type());
}
} // namespace

Value clampedKeyLengths(RewriterBase &rw, Location loc, Value lengths,
                        int64_t batch, int64_t tk, int64_t tkPad) {
  if (tkPad == tk)
    return lengths;
  RankedTensorType lenType = lengthsType(rw, lengths, batch);
  Value real = arith::ConstantOp::create(
      rw, loc, rw.getIntegerAttr(lenType.getElementType(), tk));
  return clampLengthsTo(rw, loc, lengths, lenType, real);
}

Value clampedKeyLengths(RewriterBase &rw, Location loc, Value lengths,
                        int64_t batch, Value tk) {
  RankedTensorType lenType = lengthsType(rw, lengths, batch);
  Value real =
      arith::IndexCastOp::create(rw, loc, lenType.getElementType(), tk);
  return clampLengthsTo(rw, loc, lengths, lenType, real);
}

void rankReduceParallelInserts(RewriterBase &rw, scf::ForallOp forall) {
  scf::InParallelOp terminator = forall.getTerminator();
  OpBuilder::InsertionGuard guard(rw);
  rw.setInsertionPoint(terminator);
  for (Operation &yielding : terminator.getYieldingOps()) {
    auto insert = cast<tensor::ParallelInsertSliceOp>(&yielding);
    auto sourceType = cast<RankedTensorType>(insert.getSource().getType());
    SmallVector<ReassociationIndices> merge =
        sourceType.getRank() == 3 && sourceType.getDimSize(0) == 1 &&
                sourceType.getDimSize(1) == 1
            ? SmallVector<ReassociationIndices>{{0, 1, 2}}
            : SmallVector<ReassociationIndices>{{0, 1}, {2}};
    Value reduced = tensor::CollapseShapeOp::create(rw, insert.getLoc(),
                                                    insert.getSource(), merge);
    rw.modifyOpInPlace(insert,
                       [&] { insert.getSourceMutable().assign(reduced); });
  }
}

Value unpadTo(RewriterBase &rw, Location loc, Value padded,
              RankedTensorType want, ArrayRef<OpFoldResult> wantSizes) {
  if (cast<RankedTensorType>(padded.getType()) == want && want.hasStaticShape())
    return padded;
  int64_t rank = want.getRank();
  SmallVector<OpFoldResult> offsets(rank, rw.getIndexAttr(0)), sizes,
      strides(rank, rw.getIndexAttr(1));
  if (!wantSizes.empty())
    sizes.assign(wantSizes.begin(), wantSizes.end());
  else
    for (int64_t s : want.getShape())
      sizes.push_back(rw.getIndexAttr(s));
  return tensor::ExtractSliceOp::create(rw, loc, want, padded, offsets, sizes,
                                        strides);
}

void eraseDeadInside(RewriterBase &rw, scf::ForallOp forall) {
  forall.walk<WalkOrder::PostOrder, ReverseIterator>([&](Operation *o) {
    if (o != forall && isOpTriviallyDead(o))
      rw.eraseOp(o);
  });
}

Value unpackHeadTiles(RewriterBase &rw, Location loc, Value packed,
                      ArrayRef<int64_t> rad) {
  auto t = cast<RankedTensorType>(packed.getType());
  Type elt = t.getElementType();
  int64_t tiles = t.getDimSize(0), headDim = t.getDimSize(1),
          tileLen = t.getDimSize(2);
  int64_t period = 1;
  for (int64_t r : rad)
    period *= r;
  int64_t m = rad.size();
  // tiles x d x r_0 x ... x r_{m-1} x c (the number of tiles may be
  // dynamic).
  SmallVector<OpFoldResult> sizes = {tensor::getMixedSize(rw, loc, packed, 0),
                                     rw.getIndexAttr(headDim)};
  for (int64_t r : rad)
    sizes.push_back(rw.getIndexAttr(r));
  sizes.push_back(rw.getIndexAttr(tileLen / period));
  SmallVector<int64_t> shape = llvm::map_to_vector(sizes, [](OpFoldResult s) {
    return getConstantIntValue(s).value_or(ShapedType::kDynamic);
  });
  SmallVector<ReassociationIndices> split = {
      {0}, {1}, llvm::to_vector(llvm::seq<int64_t>(2, 3 + m))};
  Value expanded = tensor::ExpandShapeOp::create(
      rw, loc, RankedTensorType::get(shape, elt), packed, split, sizes);
  // -> tiles x c x r_{m-1} x ... x r_0 x d
  SmallVector<int64_t> perm = {0, 2 + m};
  for (int64_t k = 0; k < m; ++k)
    perm.push_back(2 + (m - 1 - k));
  perm.push_back(1);
  SmallVector<OpFoldResult> permSizes;
  for (int64_t p : perm)
    permSizes.push_back(sizes[p]);
  Value moved = linalg::TransposeOp::create(
                    rw, loc, expanded,
                    tensor::EmptyOp::create(rw, loc, permSizes, elt), perm)
                    .getResult()[0];
  SmallVector<ReassociationIndices> merge = {
      llvm::to_vector(llvm::seq<int64_t>(0, 2 + m)), {2 + m}};
  int64_t rows =
      ShapedType::isDynamic(tiles) ? ShapedType::kDynamic : tiles * tileLen;
  return tensor::CollapseShapeOp::create(
      rw, loc, RankedTensorType::get({rows, headDim}, elt), moved, merge);
}

//===----------------------------------------------------------------------===//
// AttentionLowering
//===----------------------------------------------------------------------===//

LogicalResult AttentionLowering::checkLowerable(Value queryOffset,
                                                bool dynamicSequences) {
  for (Value v : op->getOperands()) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || t.hasStaticShape())
      continue;
    // Sequence operands are B x T x D, rows B x H x T: only T may be
    // dynamic (the op's verifier ties D and H to the static weights).
    bool onlySequence = dynamicSequences && t.getRank() == 3 &&
                        t.getNumDynamicDims() == 1 && !t.isDynamicDim(0);
    if (!onlySequence)
      return op->emitOpError(dynamicSequences
                                 ? "lowering needs static shapes but for the "
                                   "sequence lengths"
                                 : "lowering needs static shapes");
  }
  if (queryOffset)
    return op->emitOpError("lowering expects an untiled op (no offsets)");
  return success();
}

void AttentionLowering::setSequenceSources(Value queryRows, unsigned queryDim,
                                           Value keyRows, unsigned keyDim) {
  tqSource = queryRows;
  tqSourceDim = queryDim;
  tkSource = keyRows;
  tkSourceDim = keyDim;
}

void AttentionLowering::setShapes(RankedTensorType rows,
                                  RankedTensorType perHeadRows, int64_t keys,
                                  ArrayRef<int64_t> levels) {
  elt = rows.getElementType();
  batch = rows.getDimSize(0);
  tq = rows.getDimSize(1);
  heads = perHeadRows.getDimSize(1);
  headDim = rows.getDimSize(2) / heads;
  tk = keys;
  factors.assign(levels.begin(), levels.end());
}

void AttentionLowering::chooseTileSizes() {
  if (!ShapedType::isDynamic(tq) && !ShapedType::isDynamic(tk)) {
    chooseTiles(factors, tq, tk, requestedQ, requestedK, tileQ, tileK, tqPad,
                tkPad);
    order = KeyTileOrder(factors, tileK);
    return;
  }
  // A dynamic sequence: the requested tiles (whole coarse blocks), the
  // padded lengths computed at run time.
  int64_t align = alignmentOf(factors);
  tileQ = roundUp(requestedQ, align);
  tileK = roundUp(requestedK, align);
  auto lengthValue = [&](int64_t length, Value seq, unsigned dim) -> Value {
    if (!ShapedType::isDynamic(length))
      return index(length);
    return tensor::DimOp::create(rw, loc, seq, dim);
  };
  auto paddedValue = [&](Value length, int64_t tile) -> Value {
    Value tiles = arith::CeilDivUIOp::create(rw, loc, length, index(tile));
    return arith::MulIOp::create(rw, loc, tiles, index(tile));
  };
  tqValue = lengthValue(tq, tqSource, tqSourceDim);
  tkValue = lengthValue(tk, tkSource, tkSourceDim);
  tqPadValue = paddedValue(tqValue, tileQ);
  tkPadValue = paddedValue(tkValue, tileK);
  tqPad = tkPad = ShapedType::kDynamic;
  order = KeyTileOrder(factors, tileK);
}

FailureOr<std::pair<Value, Value>>
AttentionLowering::batchAndHead(Operation *tileOp, Value perHeadRows) {
  // (Through the cast to a static tile of a dynamic sequence.)
  if (auto cast = perHeadRows.getDefiningOp<tensor::CastOp>())
    perHeadRows = cast.getSource();
  auto rowSlice = perHeadRows.getDefiningOp<tensor::ExtractSliceOp>();
  if (!rowSlice)
    return op->emitOpError("unexpected tiled form");
  SmallVector<OpFoldResult> rowOffsets = rowSlice.getMixedOffsets();
  rw.setInsertionPoint(tileOp);
  Value b = getValueOrCreateConstantIndexOp(rw, loc, rowOffsets[0]);
  Value h = getValueOrCreateConstantIndexOp(rw, loc, rowOffsets[1]);
  return std::make_pair(b, h);
}

void AttentionLowering::replaceWithUnpadded(scf::ForallOp forall) {
  rankReduceParallelInserts(rw, forall);
  rw.setInsertionPointAfter(forall);
  SmallVector<Value> results;
  for (auto [i, r] : llvm::enumerate(forall.getResults())) {
    auto wantType = cast<RankedTensorType>(op->getResult(i).getType());
    SmallVector<OpFoldResult> sizes;
    if (!wantType.hasStaticShape())
      sizes = tensor::getMixedSizes(rw, loc, resultInits[i]);
    results.push_back(unpadTo(rw, loc, r, wantType, sizes));
  }
  rw.replaceOp(op, results);
  eraseDeadInside(rw, forall);
}

} // namespace mlir::hkt::cpu
