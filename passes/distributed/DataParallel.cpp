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

SmallVector<Value> mlir::hkt::sumOverRanksTogether(OpBuilder &b, Location loc,
                                                   shard::GridOp grid,
                                                   ValueRange values) {
  // Each value as a 1-D tensor (0-d: one element).
  SmallVector<Value> flat;
  SmallVector<int64_t> offsets;
  int64_t total = 0;
  for (Value v : values) {
    auto type = cast<RankedTensorType>(v.getType());
    auto flatType =
        RankedTensorType::get({type.getNumElements()}, type.getElementType());
    Value f = v;
    if (type.getRank() == 0)
      f = tensor::ExpandShapeOp::create(b, loc, flatType, v,
                                        ArrayRef<ReassociationIndices>{});
    else if (type.getRank() > 1)
      f = tensor::CollapseShapeOp::create(
          b, loc, flatType, v,
          ArrayRef<ReassociationIndices>{
              llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()))});
    flat.push_back(f);
    offsets.push_back(total);
    total += type.getNumElements();
  }
  Value all =
      flat.size() == 1
          ? flat.front()
          : tensor::ConcatOp::create(b, loc, /*dim=*/0, flat).getResult();
  Value sum = sumOverRanks(b, loc, grid, all);
  SmallVector<Value> sums;
  for (auto [v, offset] : llvm::zip(values, offsets)) {
    auto type = cast<RankedTensorType>(v.getType());
    int64_t n = type.getNumElements();
    Value part = sum;
    if (flat.size() != 1)
      part = tensor::ExtractSliceOp::create(
          b, loc, RankedTensorType::get({n}, type.getElementType()), sum,
          ValueRange{}, ValueRange{}, ValueRange{}, ArrayRef<int64_t>{offset},
          ArrayRef<int64_t>{n}, ArrayRef<int64_t>{1});
    if (type.getRank() == 0)
      part = tensor::CollapseShapeOp::create(b, loc, type, part,
                                             ArrayRef<ReassociationIndices>{});
    else if (type.getRank() > 1)
      part = tensor::ExpandShapeOp::create(
          b, loc, type, part,
          ArrayRef<ReassociationIndices>{
              llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()))});
    sums.push_back(part);
  }
  return sums;
}
