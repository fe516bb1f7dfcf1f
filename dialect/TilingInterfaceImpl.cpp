//===- TilingInterfaceImpl.cpp - tiling the online attention ops ----------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// TilingInterface of hkt.online_attention and hkt.online_attention_backward:
// the iteration domain (b, h, i, j), tiles as slices of the operands, so that
// upstream scf::tileUsingSCF (and the transform dialect's tile_using_*) tile
// them.
//
//===----------------------------------------------------------------------===//

#include "dialect/HKTOps.h"
#include "dialect/OnlineAttentionTile.h"
#include "dialect/Utils/LinalgBuilders.h"
#include "dialect/Utils/TileGeometry.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace mlir::hkt;

SmallVector<utils::IteratorType> OnlineAttentionOp::getLoopIteratorTypes() {
  return {kPar, kPar, kPar, kRed};
}

SmallVector<Range> OnlineAttentionOp::getIterationDomain(OpBuilder &b) {
  Location loc = getLoc();
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  auto extent = [&](Value v, int64_t dim) {
    return Range{zero, tensor::getMixedSize(b, loc, v, dim), one};
  };
  return {extent(getAcc(), 0), extent(getMax(), 1), extent(getAcc(), 1),
          extent(getValue(), 1)};
}

FailureOr<TilingResult>
OnlineAttentionOp::getTiledImplementation(OpBuilder &b,
                                          ArrayRef<OpFoldResult> offsets,
                                          ArrayRef<OpFoldResult> sizes) {
  Location loc = getLoc();
  int64_t dim = getAcc().getType().getDimSize(2),
          heads = getMax().getType().getDimSize(1);
  if (ShapedType::isDynamic(dim) || ShapedType::isDynamic(heads))
    return emitOpError("tiling needs a static model width and head count");
  // A tile holds whole coarse rows: offsets along i and j are multiples of
  // every factor, and so are sizes, except a tail that ends the dimension.
  if (failed(checkTileAlignment(getOperation(), getFactors(),
                                getIterationDomain(b), offsets, sizes)))
    return failure();

  TileGeometry g(b, loc, dim / heads, offsets, sizes);
  SmallVector<Operation *> slices;
  auto seqSlice = [&](Value src, unsigned d, int64_t f) {
    auto [o, s] = g.sequenceTile(d, f);
    return sliceOf(b, loc, src, o, s, slices);
  };
  SmallVector<Value> queries, keys;
  for (auto [l, f] : llvm::enumerate(getFactors())) {
    queries.push_back(seqSlice(getQueries()[l], 2, f));
    keys.push_back(seqSlice(getKeys()[l], 3, f));
  }
  Value value = seqSlice(getValue(), 3, 1);
  Value acc = seqSlice(getAcc(), 2, 1);
  auto [rowOffsets, rowSizes] = g.rowTile();
  Value max = sliceOf(b, loc, getMax(), rowOffsets, rowSizes, slices);
  Value sum = sliceOf(b, loc, getSum(), rowOffsets, rowSizes, slices);
  Value lengths;
  if (getLengths())
    lengths = sliceOf(b, loc, getLengths(), {offsets[0]}, {sizes[0]}, slices);
  // Sequence positions of the tile's first query and key.
  Value queryOffset = g.position(getQueryOffset(), offsets[2]);
  Value keyOffset = g.position(getKeyOffset(), offsets[3]);

  auto tiled = OnlineAttentionOp::create(
      b, loc, TypeRange{acc.getType(), max.getType(), sum.getType()}, queries,
      keys, value, lengths, queryOffset, keyOffset, acc, max, sum,
      getFactorsAttr(), getCausalAttr());
  return TilingResult{{tiled}, SmallVector<Value>(tiled->getResults()), slices};
}

LogicalResult OnlineAttentionOp::getResultTilePosition(
    OpBuilder &b, unsigned resultNumber, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes, SmallVector<OpFoldResult> &resultOffsets,
    SmallVector<OpFoldResult> &resultSizes) {
  int64_t dim = getAcc().getType().getDimSize(2),
          heads = getMax().getType().getDimSize(1);
  if (ShapedType::isDynamic(dim) || ShapedType::isDynamic(heads))
    return failure();
  TileGeometry g(b, getLoc(), dim / heads, offsets, sizes);
  auto [o, s] = resultNumber == 0 ? g.sequenceTile(2, 1) : g.rowTile();
  resultOffsets.assign(o.begin(), o.end());
  resultSizes.assign(s.begin(), s.end());
  return success();
}

//===----------------------------------------------------------------------===//
// The backward: TilingInterface
//===----------------------------------------------------------------------===//

SmallVector<utils::IteratorType>
OnlineAttentionBackwardOp::getLoopIteratorTypes() {
  // dkey and dvalue sum over i, dquery over j.
  return {kPar, kPar, kRed, kRed};
}

SmallVector<Range> OnlineAttentionBackwardOp::getIterationDomain(OpBuilder &b) {
  Location loc = getLoc();
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  auto extent = [&](Value v, int64_t dim) {
    return Range{zero, tensor::getMixedSize(b, loc, v, dim), one};
  };
  return {extent(getValue(), 0), extent(getLse(), 1), extent(getDout(), 1),
          extent(getValue(), 1)};
}

FailureOr<TilingResult> OnlineAttentionBackwardOp::getTiledImplementation(
    OpBuilder &b, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes) {
  Location loc = getLoc();
  int64_t dim = getDout().getType().getDimSize(2),
          heads = getLse().getType().getDimSize(1);
  if (ShapedType::isDynamic(dim) || ShapedType::isDynamic(heads))
    return emitOpError("tiling needs a static model width and head count");
  if (failed(checkTileAlignment(getOperation(), getFactors(),
                                getIterationDomain(b), offsets, sizes)))
    return failure();

  TileGeometry g(b, loc, dim / heads, offsets, sizes);
  SmallVector<Operation *> slices;
  auto seqSlice = [&](Value src, unsigned d, int64_t f) {
    auto [o, s] = g.sequenceTile(d, f);
    return sliceOf(b, loc, src, o, s, slices);
  };
  SmallVector<Value> queries, keys, dqueries, dkeys;
  for (auto [l, f] : llvm::enumerate(getFactors())) {
    queries.push_back(seqSlice(getQueries()[l], 2, f));
    keys.push_back(seqSlice(getKeys()[l], 3, f));
    dqueries.push_back(seqSlice(getDqueryInit()[l], 2, f));
    dkeys.push_back(seqSlice(getDkeyInit()[l], 3, f));
  }
  Value value = seqSlice(getValue(), 3, 1);
  Value dout = seqSlice(getDout(), 2, 1);
  Value dvalue = seqSlice(getDvalueInit(), 3, 1);
  auto [rowOffsets, rowSizes] = g.rowTile();
  Value lse = sliceOf(b, loc, getLse(), rowOffsets, rowSizes, slices);
  Value delta = sliceOf(b, loc, getDelta(), rowOffsets, rowSizes, slices);
  Value lengths;
  if (getLengths())
    lengths = sliceOf(b, loc, getLengths(), {offsets[0]}, {sizes[0]}, slices);
  Value queryOffset = g.position(getQueryOffset(), offsets[2]);
  Value keyOffset = g.position(getKeyOffset(), offsets[3]);

  auto tiled = OnlineAttentionBackwardOp::create(
      b, loc, ValueRange(dqueries).getTypes(), ValueRange(dkeys).getTypes(),
      dvalue.getType(), queries, keys, value, dout, lse, delta, lengths,
      queryOffset, keyOffset, dqueries, dkeys, dvalue, getFactorsAttr(),
      getCausalAttr());
  return TilingResult{{tiled}, SmallVector<Value>(tiled->getResults()), slices};
}

LogicalResult OnlineAttentionBackwardOp::getResultTilePosition(
    OpBuilder &b, unsigned resultNumber, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes, SmallVector<OpFoldResult> &resultOffsets,
    SmallVector<OpFoldResult> &resultSizes) {
  int64_t dim = getDout().getType().getDimSize(2),
          heads = getLse().getType().getDimSize(1);
  if (ShapedType::isDynamic(dim) || ShapedType::isDynamic(heads))
    return failure();
  TileGeometry g(b, getLoc(), dim / heads, offsets, sizes);
  unsigned levels = getFactors().size();
  auto [o, s] = resultNumber < levels
                    ? g.sequenceTile(2, getFactors()[resultNumber])
                : resultNumber < 2 * levels
                    ? g.sequenceTile(3, getFactors()[resultNumber - levels])
                    : g.sequenceTile(3, 1);
  resultOffsets.assign(o.begin(), o.end());
  resultSizes.assign(s.begin(), s.end());
  return success();
}
