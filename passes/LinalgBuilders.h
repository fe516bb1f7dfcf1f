//===- LinalgBuilders.h - small helpers for building linalg.generic -------===//
//
// Shared by the passes that build linalg.generic ops by hand (hkt-fuse,
// hkt-lower-to-linalg, hkt-lower-online-attention).
//
//===----------------------------------------------------------------------===//

#ifndef HKT_PASSES_LINALGBUILDERS_H
#define HKT_PASSES_LINALGBUILDERS_H

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"

namespace mlir::hkt {

constexpr utils::IteratorType kPar = utils::IteratorType::parallel;
constexpr utils::IteratorType kRed = utils::IteratorType::reduction;

/// An indexing map over `dims` loops with no symbols.
inline AffineMap indexingMap(unsigned dims, ArrayRef<AffineExpr> results,
                             MLIRContext *ctx) {
  return AffineMap::get(dims, 0, results, ctx);
}

} // namespace mlir::hkt

#endif // HKT_PASSES_LINALGBUILDERS_H
