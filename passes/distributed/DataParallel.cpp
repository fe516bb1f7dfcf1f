//===- DataParallel.cpp - sums over the ranks of a data-parallel grid -----===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "passes/distributed/DataParallel.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

FailureOr<shard::GridOp> mlir::hkt::getOrCreateDataParallelGrid(ModuleOp module,
                                                                int64_t ranks) {
  if (auto grid = module.lookupSymbol<shard::GridOp>(kDataParallelGrid)) {
    if (grid.getShape() != ArrayRef<int64_t>{ranks})
      return grid.emitError("expected the data-parallel grid of ")
             << ranks << " ranks";
    return grid;
  }
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  return shard::GridOp::create(b, module.getLoc(), kDataParallelGrid,
                               ArrayRef<int64_t>{ranks});
}

Value mlir::hkt::sumOverRanks(OpBuilder &b, Location loc, shard::GridOp grid,
                              Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  Value operand = value;
  // convert-shard-to-mpi collapses each buffer to 1-D for MPI_Allreduce.
  if (type.getRank() == 0)
    operand = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({1}, type.getElementType()), value,
        ArrayRef<ReassociationIndices>{});
  Value sum = shard::AllReduceOp::create(b, loc, operand, grid.getSymName(),
                                         ArrayRef<shard::GridAxis>{0},
                                         shard::ReductionKind::Sum);
  if (type.getRank() == 0)
    sum = tensor::CollapseShapeOp::create(b, loc, type, sum,
                                          ArrayRef<ReassociationIndices>{});
  return sum;
}
