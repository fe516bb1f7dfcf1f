//===- RightOperandPanels.h - a matmul's right operand in panels -*- C++
//-*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_PASSES_CODEGEN_CPU_RIGHTOPERANDPANELS_H
#define HKT_PASSES_CODEGEN_CPU_RIGHTOPERANDPANELS_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::hkt {

/// Turns the row-padded copy of a whole matmul's right operand (K x N+pad,
/// made by hkt-cpu-codegen before its recipe) into column panels as wide as
/// the register tile's row of vectors: N/P x K x P, each panel contiguous,
/// so that a register tile's K steps read consecutive cache lines instead of
/// lines ~2 KiB apart. Runs after the recipe: every read of the copy must be
/// a vector read of at most P columns at a column that is provably a
/// multiple of its width, or a scalar load; every write the copy's
/// linalg.copy. Otherwise the padded copy stays as it is (returns false).
bool packRightOperandInPanels(memref::AllocOp padded);

} // namespace mlir::hkt

#endif // HKT_PASSES_CODEGEN_CPU_RIGHTOPERANDPANELS_H
