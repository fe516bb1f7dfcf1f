//===- LinalgBuilders.h - small helpers for building linalg.generic -------===//
//
// Shared by the code that builds linalg ops by hand (hkt-fuse,
// hkt-lower-to-linalg, the online attention tile of the dialect).
//
//===----------------------------------------------------------------------===//

#ifndef HKT_DIALECT_LINALGBUILDERS_H
#define HKT_DIALECT_LINALGBUILDERS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

namespace mlir::hkt {

constexpr utils::IteratorType kPar = utils::IteratorType::parallel;
constexpr utils::IteratorType kRed = utils::IteratorType::reduction;

/// An indexing map over `dims` loops with no symbols.
inline AffineMap indexingMap(unsigned dims, ArrayRef<AffineExpr> results,
                             MLIRContext *ctx) {
  return AffineMap::get(dims, 0, results, ctx);
}

/// A scalar float constant of type `type`.
inline Value floatConstant(OpBuilder &b, Location loc, Type type,
                           double value) {
  return arith::ConstantOp::create(b, loc, type, b.getFloatAttr(type, value));
}

/// -inf of `type` (the value of a masked score).
inline Value negativeInfinity(OpBuilder &b, Location loc, FloatType type) {
  return arith::ConstantOp::create(
      b, loc, type,
      b.getFloatAttr(type, APFloat::getInf(type.getFloatSemantics(),
                                           /*Negative=*/true)));
}

/// The lowest finite value of `type` (the start of a running max, so that
/// `-inf - -inf` never occurs).
inline Value lowestFinite(OpBuilder &b, Location loc, FloatType type) {
  return arith::ConstantOp::create(
      b, loc, type,
      b.getFloatAttr(type, APFloat::getLargest(type.getFloatSemantics(),
                                               /*Negative=*/true)));
}

/// A tensor of `shape` x `elt` filled with `value`.
inline Value filledTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                          Type elt, Value value) {
  Value empty = tensor::EmptyOp::create(b, loc, shape, elt);
  return linalg::FillOp::create(b, loc, value, empty).getResult(0);
}

/// A zero-filled tensor of `type`.
inline Value zerosOf(OpBuilder &b, Location loc, RankedTensorType type) {
  Type elt = type.getElementType();
  return filledTensor(b, loc, type.getShape(), elt,
                      floatConstant(b, loc, elt, 0.0));
}

/// A tensor.empty of `type`.
inline Value emptyOf(OpBuilder &b, Location loc, RankedTensorType type) {
  return tensor::EmptyOp::create(b, loc, type.getShape(),
                                 type.getElementType());
}

/// The transpose of a matrix, into a new tensor.
inline Value transposeMatrix(OpBuilder &b, Location loc, Value m) {
  auto type = cast<RankedTensorType>(m.getType());
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, m);
  Value init = tensor::EmptyOp::create(b, loc, {sizes[1], sizes[0]},
                                       type.getElementType());
  return linalg::TransposeOp::create(b, loc, m, init, ArrayRef<int64_t>{1, 0})
      .getResult()[0];
}

/// A tensor.empty shaped like `v` (its dynamic sizes read with tensor.dim).
inline Value emptyLike(OpBuilder &b, Location loc, Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  return tensor::EmptyOp::create(b, loc, tensor::getMixedSizes(b, loc, v),
                                 type.getElementType());
}

/// A zero-filled tensor shaped like `v`.
inline Value zerosLike(OpBuilder &b, Location loc, Value v) {
  Value empty = emptyLike(b, loc, v);
  Type elt = cast<RankedTensorType>(v.getType()).getElementType();
  return linalg::FillOp::create(b, loc, floatConstant(b, loc, elt, 0.0), empty)
      .getResult(0);
}

/// True when `v` is a tensor that linalg.fill sets to zero (as zerosLike
/// builds).
inline bool isZeroFill(Value v) {
  auto fill = v.getDefiningOp<linalg::FillOp>();
  return fill && matchPattern(fill.getInputs()[0], m_AnyZeroFloat());
}

/// `size + extra`, folded when `size` is static.
inline OpFoldResult addToSize(OpBuilder &b, Location loc, OpFoldResult size,
                              int64_t extra) {
  if (extra == 0)
    return size;
  if (auto attr = dyn_cast<Attribute>(size))
    return b.getIndexAttr(cast<IntegerAttr>(attr).getInt() + extra);
  return arith::AddIOp::create(b, loc, cast<Value>(size),
                               arith::ConstantIndexOp::create(b, loc, extra))
      .getResult();
}

/// `size * factor`, folded when `size` is static.
inline OpFoldResult mulSize(OpBuilder &b, Location loc, OpFoldResult size,
                            int64_t factor) {
  if (auto attr = dyn_cast<Attribute>(size))
    return b.getIndexAttr(cast<IntegerAttr>(attr).getInt() * factor);
  return arith::MulIOp::create(b, loc, cast<Value>(size),
                               arith::ConstantIndexOp::create(b, loc, factor))
      .getResult();
}

/// `x` (B x T x D) inside zeros of B x (before + T + after) x D: causal
/// left padding (`before`) and the room a transposed convolution reads past
/// the end (`after`). B and T may be dynamic.
inline Value padSequence(OpBuilder &b, Location loc, Value x, int64_t before,
                         int64_t after) {
  if (before == 0 && after == 0)
    return x;
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
  SmallVector<OpFoldResult> paddedSizes(sizes);
  paddedSizes[1] = addToSize(b, loc, sizes[1], before + after);
  Type elt = type.getElementType();
  Value padded =
      linalg::FillOp::create(
          b, loc, floatConstant(b, loc, elt, 0.0),
          tensor::EmptyOp::create(b, loc, paddedSizes, elt).getResult())
          .getResult(0);
  SmallVector<OpFoldResult> offsets = {
      b.getIndexAttr(0), b.getIndexAttr(before), b.getIndexAttr(0)};
  SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
  return tensor::InsertSliceOp::create(b, loc, x, padded, offsets, sizes,
                                       strides);
}

/// The body of tensorGeneric: the block arguments of the inputs in, the
/// value of one iteration out.
using GenericBodyFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

/// A linalg.generic on tensors with one float result of `type`: `maps` holds
/// one map per input and then the output's. With reduction iterators the
/// output starts at zero and the body's value is added to it; otherwise the
/// body's value is the result.
/// A linalg.generic on tensors into `init`: with reduction iterators the
/// body's value is added to the output, otherwise it is the output.
inline Value genericInto(OpBuilder &b, Location loc, Value init,
                         ValueRange inputs, ArrayRef<AffineMap> maps,
                         ArrayRef<utils::IteratorType> iterators,
                         GenericBodyFn body) {
  bool reduces = llvm::is_contained(iterators, kRed);
  return linalg::GenericOp::create(
             b, loc, init.getType(), inputs, ValueRange{init}, maps, iterators,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Value v = body(nb, l, args.drop_back());
               if (reduces)
                 v = arith::AddFOp::create(nb, l, args.back(), v);
               linalg::YieldOp::create(nb, l, v);
             })
      .getResult(0);
}

/// The sizes of a result of `type` that a generic with `inputs` and `maps`
/// (the output's last) computes: a dynamic dimension takes the size of an
/// input dimension indexed by the same loop. Empty when one has none.
inline SmallVector<OpFoldResult> genericResultSizes(OpBuilder &b, Location loc,
                                                    RankedTensorType type,
                                                    ValueRange inputs,
                                                    ArrayRef<AffineMap> maps) {
  SmallVector<OpFoldResult> sizes;
  AffineMap out = maps.back();
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (!type.isDynamicDim(d)) {
      sizes.push_back(b.getIndexAttr(type.getDimSize(d)));
      continue;
    }
    OpFoldResult size;
    for (auto [input, map] : llvm::zip(inputs, maps.drop_back())) {
      if (!isa<RankedTensorType>(input.getType()))
        continue;
      for (unsigned r = 0; r < map.getNumResults() && !size; ++r)
        if (map.getResult(r) == out.getResult(d))
          size = tensor::getMixedSize(b, loc, input, r);
      if (size)
        break;
    }
    if (!size)
      return {};
    sizes.push_back(size);
  }
  return sizes;
}

inline Value tensorGeneric(OpBuilder &b, Location loc, RankedTensorType type,
                           ValueRange inputs, ArrayRef<AffineMap> maps,
                           ArrayRef<utils::IteratorType> iterators,
                           GenericBodyFn body) {
  bool reduces = llvm::is_contained(iterators, kRed);
  Value init;
  if (type.hasStaticShape()) {
    init = reduces ? zerosOf(b, loc, type) : emptyOf(b, loc, type);
  } else {
    // Dynamic sizes (a dynamic sequence length) from the inputs.
    SmallVector<OpFoldResult> sizes =
        genericResultSizes(b, loc, type, inputs, maps);
    assert(!sizes.empty() && "a dynamic result size no input gives");
    Type elt = type.getElementType();
    init = tensor::EmptyOp::create(b, loc, sizes, elt);
    if (reduces)
      init =
          linalg::FillOp::create(b, loc, floatConstant(b, loc, elt, 0.0), init)
              .getResult(0);
  }
  return genericInto(b, loc, init, inputs, maps, iterators, body);
}

/// SPEC 5, the one mask predicate of every lowering: true when key position
/// `col` is masked for query position `row` -- at or past `keyLength` (null:
/// no key lengths) or, when `causal`, after the query. Index values, signed
/// compares: positions are >= 0, and a (never valid) negative length masks
/// every key rather than none.
inline Value buildKeyMaskPredicate(OpBuilder &b, Location loc, Value row,
                                   Value col, Value keyLength, bool causal) {
  Value drop;
  if (keyLength)
    drop = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, col,
                                 keyLength);
  if (causal) {
    Value after =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, col, row);
    drop = drop ? arith::OrIOp::create(b, loc, drop, after).getResult() : after;
  }
  if (!drop)
    drop = arith::ConstantOp::create(b, loc, b.getBoolAttr(false));
  return drop;
}

/// SPEC 5 on B x H x Tq x Tk scores: `scores` with every masked entry
/// (buildKeyMaskPredicate; `lengths`: the B key lengths, or null) replaced
/// by `fill`, into `init`. The mask's lowering fills -inf, its adjoint 0.
inline Value buildKeyMaskSelect(OpBuilder &b, Location loc, Value scores,
                                Value lengths, Value init, bool causal,
                                Value fill) {
  MLIRContext *ctx = b.getContext();
  AffineMap all = AffineMap::getMultiDimIdentityMap(4, ctx);
  SmallVector<Value> inputs = {scores};
  SmallVector<AffineMap> maps = {all};
  if (lengths) {
    inputs.push_back(lengths);
    maps.push_back(indexingMap(4, {getAffineDimExpr(0, ctx)}, ctx));
  }
  maps.push_back(all);
  return linalg::GenericOp::create(
             b, loc, init.getType(), inputs, ValueRange{init}, maps,
             {kPar, kPar, kPar, kPar},
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Value row = linalg::IndexOp::create(nb, l, 2);
               Value col = linalg::IndexOp::create(nb, l, 3);
               Value len;
               if (lengths)
                 len = arith::IndexCastOp::create(nb, l, nb.getIndexType(),
                                                  args[1]);
               Value drop = buildKeyMaskPredicate(nb, l, row, col, len, causal);
               linalg::YieldOp::create(
                   nb, l,
                   arith::SelectOp::create(nb, l, drop, fill, args[0])
                       .getResult());
             })
      .getResult(0);
}

} // namespace mlir::hkt

#endif // HKT_DIALECT_LINALGBUILDERS_H
