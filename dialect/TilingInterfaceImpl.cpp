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

namespace {

/// What both ops' tiling shares: the head width, which a tile's column
/// range needs, static; the iteration domain's extents; operand tiles as
/// slices, recorded for the TilingResult.
struct OperandTiler {
  OperandTiler(OpBuilder &b, Location loc, int64_t headDim,
               ArrayRef<OpFoldResult> offsets, ArrayRef<OpFoldResult> sizes)
      : b(b), loc(loc), g(b, loc, headDim, offsets, sizes), offsets(offsets),
        sizes(sizes) {}

  /// The tile of a B x T_l x D operand along dimension `dim` of the domain
  /// (2: queries, 3: keys) at level factor `f`.
  Value sequence(Value src, unsigned dim, int64_t f) {
    auto [o, s] = g.sequenceTile(dim, f);
    return sliceOf(b, loc, src, o, s, slices);
  }
  /// The tile of a B x H x Tq operand (max, sum, lse, delta).
  Value rows(Value src) {
    auto [o, s] = g.rowTile();
    return sliceOf(b, loc, src, o, s, slices);
  }
  /// The tile's B key lengths, or null without lengths.
  Value lengths(Value src) {
    return src ? sliceOf(b, loc, src, {offsets[0]}, {sizes[0]}, slices)
               : Value();
  }
  /// Sequence positions of the tile's first query and key, inside an op
  /// placed at (`queryBase`, `keyBase`).
  std::pair<Value, Value> positions(Value queryBase, Value keyBase) {
    Value q = g.position(queryBase, offsets[2]);
    return {q, g.position(keyBase, offsets[3])};
  }

  OpBuilder &b;
  Location loc;
  TileGeometry g;
  ArrayRef<OpFoldResult> offsets, sizes;
  SmallVector<Operation *> slices;
};

/// The head width of an op with `rows` B x T x D and `perHeadRows`
/// B x H x T, or failure when either is dynamic.
FailureOr<int64_t> staticHeadDim(ShapedType rows, ShapedType perHeadRows) {
  int64_t dim = rows.getDimSize(2), heads = perHeadRows.getDimSize(1);
  if (ShapedType::isDynamic(dim) || ShapedType::isDynamic(heads))
    return failure();
  return dim / heads;
}

/// The iteration domain (b, h, i, j) from the operands that hold each
/// extent, as (value, dimension) pairs.
SmallVector<Range> domainOf(OpBuilder &b, Location loc,
                            ArrayRef<std::pair<Value, int64_t>> extents) {
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  return llvm::map_to_vector(extents, [&](auto e) {
    return Range{zero, tensor::getMixedSize(b, loc, e.first, e.second), one};
  });
}

/// The head width of a tile both ops accept: a static model width and head
/// count, and a tile of whole coarse rows (offsets along i and j multiples
/// of every factor, and so are sizes, except a tail that ends the
/// dimension). Failure, with a diagnostic, otherwise.
FailureOr<int64_t> checkTileRequest(TilingInterface op, OpBuilder &b,
                                    ArrayRef<int64_t> factors, ShapedType rows,
                                    ShapedType perHeadRows,
                                    ArrayRef<OpFoldResult> offsets,
                                    ArrayRef<OpFoldResult> sizes) {
  FailureOr<int64_t> headDim = staticHeadDim(rows, perHeadRows);
  if (failed(headDim))
    return op->emitOpError("tiling needs a static model width and head count");
  if (failed(checkTileAlignment(op.getOperation(), factors,
                                op.getIterationDomain(b), offsets, sizes)))
    return failure();
  return headDim;
}

} // namespace

SmallVector<utils::IteratorType> OnlineAttentionOp::getLoopIteratorTypes() {
  return {kPar, kPar, kPar, kRed};
}

SmallVector<Range> OnlineAttentionOp::getIterationDomain(OpBuilder &b) {
  return domainOf(
      b, getLoc(),
      {{getAcc(), 0}, {getMax(), 1}, {getAcc(), 1}, {getValue(), 1}});
}

FailureOr<TilingResult>
OnlineAttentionOp::getTiledImplementation(OpBuilder &b,
                                          ArrayRef<OpFoldResult> offsets,
                                          ArrayRef<OpFoldResult> sizes) {
  FailureOr<int64_t> headDim =
      checkTileRequest(cast<TilingInterface>(getOperation()), b, getFactors(),
                       getAcc().getType(), getMax().getType(), offsets, sizes);
  if (failed(headDim))
    return failure();

  Location loc = getLoc();
  OperandTiler t(b, loc, *headDim, offsets, sizes);
  SmallVector<Value> queries, keys;
  for (auto [l, f] : llvm::enumerate(getFactors())) {
    queries.push_back(t.sequence(getQueries()[l], 2, f));
    keys.push_back(t.sequence(getKeys()[l], 3, f));
  }
  Value value = t.sequence(getValue(), 3, 1);
  Value acc = t.sequence(getAcc(), 2, 1);
  Value max = t.rows(getMax());
  Value sum = t.rows(getSum());
  Value lengths = t.lengths(getLengths());
  auto [queryOffset, keyOffset] = t.positions(getQueryOffset(), getKeyOffset());

  auto tiled = OnlineAttentionOp::create(
      b, loc, TypeRange{acc.getType(), max.getType(), sum.getType()}, queries,
      keys, value, lengths, queryOffset, keyOffset, acc, max, sum,
      getFactorsAttr(), getCausalAttr());
  return TilingResult{
      {tiled}, SmallVector<Value>(tiled->getResults()), t.slices};
}

LogicalResult OnlineAttentionOp::getResultTilePosition(
    OpBuilder &b, unsigned resultNumber, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes, SmallVector<OpFoldResult> &resultOffsets,
    SmallVector<OpFoldResult> &resultSizes) {
  FailureOr<int64_t> headDim =
      staticHeadDim(getAcc().getType(), getMax().getType());
  if (failed(headDim))
    return failure();
  TileGeometry g(b, getLoc(), *headDim, offsets, sizes);
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
  return domainOf(
      b, getLoc(),
      {{getValue(), 0}, {getLse(), 1}, {getDout(), 1}, {getValue(), 1}});
}

FailureOr<TilingResult> OnlineAttentionBackwardOp::getTiledImplementation(
    OpBuilder &b, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes) {
  FailureOr<int64_t> headDim =
      checkTileRequest(cast<TilingInterface>(getOperation()), b, getFactors(),
                       getDout().getType(), getLse().getType(), offsets, sizes);
  if (failed(headDim))
    return failure();

  Location loc = getLoc();
  OperandTiler t(b, loc, *headDim, offsets, sizes);
  SmallVector<Value> queries, keys, dqueries, dkeys;
  for (auto [l, f] : llvm::enumerate(getFactors())) {
    queries.push_back(t.sequence(getQueries()[l], 2, f));
    keys.push_back(t.sequence(getKeys()[l], 3, f));
    dqueries.push_back(t.sequence(getDqueryInit()[l], 2, f));
    dkeys.push_back(t.sequence(getDkeyInit()[l], 3, f));
  }
  Value value = t.sequence(getValue(), 3, 1);
  Value dout = t.sequence(getDout(), 2, 1);
  Value dvalue = t.sequence(getDvalueInit(), 3, 1);
  Value lse = t.rows(getLse());
  Value delta = t.rows(getDelta());
  Value lengths = t.lengths(getLengths());
  auto [queryOffset, keyOffset] = t.positions(getQueryOffset(), getKeyOffset());

  auto tiled = OnlineAttentionBackwardOp::create(
      b, loc, ValueRange(dqueries).getTypes(), ValueRange(dkeys).getTypes(),
      dvalue.getType(), queries, keys, value, dout, lse, delta, lengths,
      queryOffset, keyOffset, dqueries, dkeys, dvalue, getFactorsAttr(),
      getCausalAttr());
  return TilingResult{
      {tiled}, SmallVector<Value>(tiled->getResults()), t.slices};
}

LogicalResult OnlineAttentionBackwardOp::getResultTilePosition(
    OpBuilder &b, unsigned resultNumber, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes, SmallVector<OpFoldResult> &resultOffsets,
    SmallVector<OpFoldResult> &resultSizes) {
  FailureOr<int64_t> headDim =
      staticHeadDim(getDout().getType(), getLse().getType());
  if (failed(headDim))
    return failure();
  TileGeometry g(b, getLoc(), *headDim, offsets, sizes);
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
