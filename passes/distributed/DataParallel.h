//===- DataParallel.h - sums over the ranks of a data-parallel grid -*- C++
//-*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// Data-parallel training in IR with upstream's shard dialect: the batch is
// split over a 1-D grid of ranks, the parameters are replicated, and the
// train step sums its gradients over the grid before the update
// (hkt-model-training-entries' `ranks` option builds it with these).
//
//===----------------------------------------------------------------------===//

#ifndef HKT_PASSES_DISTRIBUTED_DATAPARALLEL_H
#define HKT_PASSES_DISTRIBUTED_DATAPARALLEL_H

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::hkt {

/// The symbol of the data-parallel grid.
inline constexpr const char *kDataParallelGrid = "data_parallel";

/// `shard.grid @data_parallel(shape = ranks)` at the top of `module`; the
/// existing one if `module` has it (an error if its shape differs).
FailureOr<shard::GridOp> getOrCreateDataParallelGrid(ModuleOp module,
                                                     int64_t ranks);

/// `values` (ranked tensors of static shape and one element type) summed
/// over every rank of the 1-D `grid` with one `shard.all_reduce`: flattened
/// and concatenated into one buffer, then sliced back into their shapes. One
/// collective per step instead of one per tensor (its latency counts once),
/// for one more copy of the values.
SmallVector<Value> sumOverRanks(OpBuilder &b, Location loc, shard::GridOp grid,
                                ValueRange values);

} // namespace mlir::hkt

#endif // HKT_PASSES_DISTRIBUTED_DATAPARALLEL_H
