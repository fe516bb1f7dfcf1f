//===- BatchedEntry.h - entries that run a row function per row -*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// The model's public entries (logits, loss, and the gradient entry that
// autodiff adds) run a private batch-1 function on every row of a batch of
// dynamic size; this builds them (compiler/frontend/ModelConfig.cpp and
// passes/autodiff/ModelEntries.cpp share it).
//
//===----------------------------------------------------------------------===//

#ifndef HKT_DIALECT_UTILS_BATCHEDENTRY_H
#define HKT_DIALECT_UTILS_BATCHEDENTRY_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <optional>

namespace mlir::hkt {

/// How a batched entry combines its row function's results over the rows.
enum class Combine { Rows, Mean, Sum };

/// How the rows run: in parallel (many small rows: the model's; sums in
/// kRowChunks chunks) or one after the other, each row's own parallel loops
/// using every thread (a few large rows: a layer's).
enum class RowOrder { Parallel, InOrder };

/// The row arguments of the model's entries.
inline constexpr StringRef kModelRowArgs[] = {"tokens", "labels"};

/// The rows of a sum over the batch run in this many chunks in parallel.
constexpr int64_t kRowChunks = 8;

/// Builds the public entry `name` that runs the private batch-1 function
/// `row` on every row of a batch of dynamic size B: the arguments named in
/// `rowArgs` (the model's `tokens`, B x T, and `labels`, B) are sliced one
/// row per call (when
/// `row` takes tokens of a dynamic length, each row's tokens before its
/// first padding token, at least one: SPEC's model never reads a position
/// at or past a row's length for its valid positions, so this is exact and
/// a row costs its own length, not the batch's), every
/// other argument is passed through, except `seed` (an argument index, if
/// any), the gradient of the mean loss, which each row receives divided by
/// B. The entry's row arguments keep the row function's dimension symbols
/// and bounds (hkt.dims, hkt.bounds), with B for the batch. Results: `Rows`
/// stacks the rows' 1 x N results into B x N, `Mean` averages scalar results,
/// `Sum` adds the rest (gradients of parameters).
func::FuncOp buildBatchedEntry(OpBuilder &b, Location loc, func::FuncOp row,
                               StringRef name, int64_t maxBatch,
                               ArrayRef<Combine> combine,
                               std::optional<unsigned> seed,
                               ArrayRef<StringRef> rowArgs,
                               RowOrder order = RowOrder::Parallel);

} // namespace mlir::hkt

#endif // HKT_DIALECT_UTILS_BATCHEDENTRY_H
