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

/// `value` reshaped to `type`, which has as many elements: between 1-D and
/// any rank (0-d is one element), all dimensions merged or split.
static Value reshape(OpBuilder &b, Location loc, Value value,
                     RankedTensorType type) {
  auto from = cast<RankedTensorType>(value.getType());
  if (from == type)
    return value;
  bool flatten = type.getRank() == 1;
  int64_t rank = flatten ? from.getRank() : type.getRank();
  SmallVector<ReassociationIndices> all;
  if (rank > 0)
    all.push_back(llvm::to_vector(llvm::seq<int64_t>(0, rank)));
  // 0-d to 1-D is an expansion, and back a collapse (no dimension to merge).
  if (flatten == (rank > 0))
    return tensor::CollapseShapeOp::create(b, loc, type, value, all);
  return tensor::ExpandShapeOp::create(b, loc, type, value, all);
}

SmallVector<Value> mlir::hkt::sumOverRanks(OpBuilder &b, Location loc,
                                           shard::GridOp grid,
                                           ValueRange values) {
  // Each value as a 1-D tensor, all of them in one (convert-shard-to-mpi
  // gives MPI_Allreduce 1-D buffers anyway).
  SmallVector<Value> flat;
  SmallVector<int64_t> offsets;
  int64_t total = 0;
  for (Value v : values) {
    auto type = cast<RankedTensorType>(v.getType());
    flat.push_back(reshape(
        b, loc, v,
        RankedTensorType::get({type.getNumElements()}, type.getElementType())));
    offsets.push_back(total);
    total += type.getNumElements();
  }
  Value all =
      flat.size() == 1
          ? flat.front()
          : tensor::ConcatOp::create(b, loc, /*dim=*/0, flat).getResult();
  Value sum = shard::AllReduceOp::create(b, loc, all, grid.getSymName(),
                                         ArrayRef<shard::GridAxis>{0},
                                         shard::ReductionKind::Sum);
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
    sums.push_back(reshape(b, loc, part, type));
  }
  return sums;
}
