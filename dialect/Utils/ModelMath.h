//===- ModelMath.h - shared maths of the model ops ---------------*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// What the lowering of the model ops (passes/conversion/ModelOps.cpp) and their
// adjoints (dialect/Adjoints.cpp) both compute, written once: LayerNorm's row
// statistics, GELU (tanh form) and its derivative, a row log-sum-exp.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_DIALECT_MODELMATH_H
#define HKT_DIALECT_MODELMATH_H

#include "mlir/IR/Builders.h"

namespace mlir::hkt {

/// Per row of `x` (... x D): the mean and 1 / sqrt(var + eps) over the last
/// dimension (biased variance), each a tensor of the leading dimensions.
struct RowStats {
  Value mean, rstd;
};
RowStats layerNormStats(OpBuilder &b, Location loc, Value x, double eps);

/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) of a scalar, with tanh
/// written through exp (finite for every x: exp's overflow gives +-1).
Value geluValue(OpBuilder &b, Location loc, Value x);
/// d/dx of geluValue.
Value geluDerivative(OpBuilder &b, Location loc, Value x);

/// logsumexp over the last dimension of `x` (B x C): a B tensor.
Value rowLogSumExp(OpBuilder &b, Location loc, Value x);

} // namespace mlir::hkt

#endif // HKT_DIALECT_MODELMATH_H
