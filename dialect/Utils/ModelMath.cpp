//===- ModelMath.cpp - shared maths of the model ops ----------------------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "dialect/Utils/ModelMath.h"
#include "dialect/Utils/LinalgBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;
using namespace mlir::hkt;

namespace {
/// The type of `x` without its last dimension, and the maps of a row
/// reduction over it.
struct RowReduction {
  RankedTensorType rowType;
  AffineMap all, row;
  SmallVector<utils::IteratorType> iterators;
};

RowReduction rowReduction(Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  unsigned rank = type.getRank();
  MLIRContext *ctx = x.getContext();
  RowReduction r;
  r.rowType = RankedTensorType::get(type.getShape().drop_back(),
                                    type.getElementType());
  r.all = AffineMap::getMultiDimIdentityMap(rank, ctx);
  r.row = r.all.dropResult(rank - 1);
  r.iterators.assign(rank, kPar);
  r.iterators.back() = kRed;
  return r;
}

Value tanhOf(OpBuilder &b, Location loc, Value u) {
  // tanh(u) = 1 - 2 / (exp(2u) + 1).
  Type t = u.getType();
  Value one = floatConstant(b, loc, t, 1.0), two = floatConstant(b, loc, t, 2.0);
  Value e = math::ExpOp::create(b, loc, arith::MulFOp::create(b, loc, two, u));
  Value frac = arith::DivFOp::create(b, loc, two,
                                     arith::AddFOp::create(b, loc, e, one));
  return arith::SubFOp::create(b, loc, one, frac);
}

constexpr double kGeluC = 0.044715;
} // namespace

RowStats mlir::hkt::layerNormStats(OpBuilder &b, Location loc, Value x,
                                   double eps) {
  RowReduction r = rowReduction(x);
  auto type = cast<RankedTensorType>(x.getType());
  Type elt = type.getElementType();
  double invD = 1.0 / static_cast<double>(type.getShape().back());
  Value mean = tensorGeneric(
      b, loc, r.rowType, {x}, {r.all, r.row}, r.iterators,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        return arith::MulFOp::create(nb, l, a[0], floatConstant(nb, l, elt, invD))
            .getResult();
      });
  Value var = tensorGeneric(
      b, loc, r.rowType, {x, mean}, {r.all, r.row, r.row}, r.iterators,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value c = arith::SubFOp::create(nb, l, a[0], a[1]);
        Value sq = arith::MulFOp::create(nb, l, c, c);
        return arith::MulFOp::create(nb, l, sq, floatConstant(nb, l, elt, invD))
            .getResult();
      });
  unsigned rowRank = r.rowType.getRank();
  AffineMap id = AffineMap::getMultiDimIdentityMap(rowRank, b.getContext());
  Value rstd = tensorGeneric(
      b, loc, r.rowType, {var}, {id, id},
      SmallVector<utils::IteratorType>(rowRank, kPar),
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value v = arith::AddFOp::create(nb, l, a[0], floatConstant(nb, l, elt, eps));
        return math::RsqrtOp::create(nb, l, v).getResult();
      });
  return {mean, rstd};
}

Value mlir::hkt::geluValue(OpBuilder &b, Location loc, Value x) {
  Type t = x.getType();
  Value x3 = arith::MulFOp::create(b, loc, x, arith::MulFOp::create(b, loc, x, x));
  Value inner = arith::AddFOp::create(
      b, loc, x, arith::MulFOp::create(b, loc, floatConstant(b, loc, t, kGeluC), x3));
  Value u = arith::MulFOp::create(
      b, loc, floatConstant(b, loc, t, std::sqrt(2.0 / M_PI)), inner);
  Value th = tanhOf(b, loc, u);
  Value half = floatConstant(b, loc, t, 0.5), one = floatConstant(b, loc, t, 1.0);
  return arith::MulFOp::create(
      b, loc, arith::MulFOp::create(b, loc, half, x),
      arith::AddFOp::create(b, loc, one, th));
}

Value mlir::hkt::geluDerivative(OpBuilder &b, Location loc, Value x) {
  // 0.5 (1 + th) + 0.5 x (1 - th^2) sqrt(2/pi) (1 + 3 c x^2).
  Type t = x.getType();
  Value k = floatConstant(b, loc, t, std::sqrt(2.0 / M_PI));
  Value half = floatConstant(b, loc, t, 0.5), one = floatConstant(b, loc, t, 1.0);
  Value x2 = arith::MulFOp::create(b, loc, x, x);
  Value x3 = arith::MulFOp::create(b, loc, x2, x);
  Value inner = arith::AddFOp::create(
      b, loc, x, arith::MulFOp::create(b, loc, floatConstant(b, loc, t, kGeluC), x3));
  Value th = tanhOf(b, loc, arith::MulFOp::create(b, loc, k, inner));
  Value left = arith::MulFOp::create(b, loc, half,
                                     arith::AddFOp::create(b, loc, one, th));
  Value sech2 = arith::SubFOp::create(b, loc, one,
                                      arith::MulFOp::create(b, loc, th, th));
  Value dInner = arith::AddFOp::create(
      b, loc, one,
      arith::MulFOp::create(b, loc, floatConstant(b, loc, t, 3.0 * kGeluC), x2));
  Value right = arith::MulFOp::create(
      b, loc, arith::MulFOp::create(b, loc, half, x),
      arith::MulFOp::create(b, loc, sech2, arith::MulFOp::create(b, loc, k, dInner)));
  return arith::AddFOp::create(b, loc, left, right);
}

Value mlir::hkt::rowLogSumExp(OpBuilder &b, Location loc, Value x) {
  RowReduction r = rowReduction(x);
  Type elt = r.rowType.getElementType();
  auto floatElt = cast<FloatType>(elt);
  Value lowest = lowestFinite(b, loc, floatElt);
  Value maxInit = linalg::FillOp::create(b, loc, lowest, emptyOf(b, loc, r.rowType))
                      .getResult(0);
  Value max = linalg::GenericOp::create(
                  b, loc, r.rowType, ValueRange{x}, ValueRange{maxInit},
                  {r.all, r.row}, r.iterators,
                  [](OpBuilder &nb, Location l, ValueRange a) {
                    linalg::YieldOp::create(
                        nb, l, arith::MaximumFOp::create(nb, l, a[0], a[1])
                                   .getResult());
                  })
                  .getResult(0);
  Value sum = tensorGeneric(
      b, loc, r.rowType, {x, max}, {r.all, r.row, r.row}, r.iterators,
      [](OpBuilder &nb, Location l, ValueRange a) {
        return math::ExpOp::create(nb, l, arith::SubFOp::create(nb, l, a[0], a[1]))
            .getResult();
      });
  unsigned rowRank = r.rowType.getRank();
  AffineMap id = AffineMap::getMultiDimIdentityMap(rowRank, b.getContext());
  return tensorGeneric(b, loc, r.rowType, {sum, max}, {id, id, id},
                       SmallVector<utils::IteratorType>(rowRank, kPar),
                       [](OpBuilder &nb, Location l, ValueRange a) {
                         return arith::AddFOp::create(
                                    nb, l, math::LogOp::create(nb, l, a[0]), a[1])
                             .getResult();
                       });
}
