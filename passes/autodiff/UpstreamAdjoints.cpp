//===- UpstreamAdjoints.cpp - adjoints of the upstream ops hkt uses -------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// AdjointOpInterface (dialect/HKTInterfaces.td) for the linalg and tensor ops
// that hkt functions use beside the hkt ops, as external models attached by
// registerAdjointExternalModels: each builds the gradients of its operands
// from those of its results.
//
//===----------------------------------------------------------------------===//

#include "passes/autodiff/Passes.h"

#include "dialect/HKTOps.h"
#include "dialect/Utils/LinalgBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::hkt;

namespace {
RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }
} // namespace

namespace {

/// C += A B (2-D, default maps): dA = dC B^T, dB = A^T dC, dC_init = dC.
struct MatmulAdjoint
    : AdjointOpInterface::ExternalModel<MatmulAdjoint, linalg::MatmulOp> {
  LogicalResult buildAdjoint(Operation *op, OpBuilder &b,
                             ValueRange resultGrads,
                             SmallVectorImpl<Value> &grads) const {
    auto mm = cast<linalg::MatmulOp>(op);
    if (mm.hasUserDefinedMaps() || mm.getNumDpsInputs() != 2 ||
        !mm.hasPureTensorSemantics())
      return op->emitOpError("adjoint: only the default 2-D matmul on tensors");
    Location loc = op->getLoc();
    Value a = mm.getInputs()[0], w = mm.getInputs()[1], dc = resultGrads[0];
    // dA = dC W^T and dW = A^T dC as plain matmuls on transposed copies
    // (O(size) each): the CPU codegen tiles and vectorises linalg.matmul,
    // not a contraction written as linalg.generic.
    // (Shaped like the operands: the rows may be dynamic.)
    auto matmul = [&](Value x, Value y, Value like) -> Value {
      return linalg::MatmulOp::create(b, loc, ValueRange{x, y},
                                      ValueRange{zerosLike(b, loc, like)})
          .getResult(0);
    };
    Value da = matmul(dc, transposeMatrix(b, loc, w), a);
    Value dw = matmul(transposeMatrix(b, loc, a), dc, w);
    grads.assign({da, dw, dc});
    return success();
  }
};

/// p = softmax(x) along `dimension`: dx = p (dp - sum_dim(dp p)).
struct SoftmaxAdjoint
    : AdjointOpInterface::ExternalModel<SoftmaxAdjoint, linalg::SoftmaxOp> {
  LogicalResult buildAdjoint(Operation *op, OpBuilder &b,
                             ValueRange resultGrads,
                             SmallVectorImpl<Value> &grads) const {
    auto softmax = cast<linalg::SoftmaxOp>(op);
    Location loc = op->getLoc();
    MLIRContext *ctx = b.getContext();
    Value p = softmax.getResult()[0], dp = resultGrads[0];
    RankedTensorType type = typeOf(p);
    unsigned rank = type.getRank();
    int64_t dim = softmax.getDimension();
    SmallVector<int64_t> rowShape;
    SmallVector<AffineExpr> rowExprs;
    SmallVector<utils::IteratorType> iterators;
    for (unsigned d = 0; d < rank; ++d) {
      iterators.push_back(d == dim ? kRed : kPar);
      if (d != dim) {
        rowShape.push_back(type.getDimSize(d));
        rowExprs.push_back(getAffineDimExpr(d, ctx));
      }
    }
    auto rowType = RankedTensorType::get(rowShape, type.getElementType());
    AffineMap all = AffineMap::getMultiDimIdentityMap(rank, ctx);
    AffineMap row = indexingMap(rank, rowExprs, ctx);
    Value dot = tensorGeneric(b, loc, rowType, {dp, p}, {all, all, row}, iterators,
                        [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                          return arith::MulFOp::create(nb, l, a[0], a[1]);
                        });
    Value dx = tensorGeneric(
        b, loc, type, {p, dp, dot}, {all, all, row, all},
        SmallVector<utils::IteratorType>(rank, kPar),
        [](OpBuilder &nb, Location l, ValueRange a) -> Value {
          Value centred = arith::SubFOp::create(nb, l, a[1], a[2]);
          return arith::MulFOp::create(nb, l, a[0], centred);
        });
    grads.assign({dx, Value()});
    return success();
  }
};

/// The fill value is a scalar and the destination is overwritten: nothing.
struct FillAdjoint
    : AdjointOpInterface::ExternalModel<FillAdjoint, linalg::FillOp> {
  LogicalResult buildAdjoint(Operation *op, OpBuilder &, ValueRange,
                             SmallVectorImpl<Value> &grads) const {
    grads.assign(op->getNumOperands(), Value());
    return success();
  }
};

/// out = a + c: both get dout; the destination is overwritten.
struct AddAdjoint : AdjointOpInterface::ExternalModel<AddAdjoint, linalg::AddOp> {
  LogicalResult buildAdjoint(Operation *op, OpBuilder &, ValueRange resultGrads,
                             SmallVectorImpl<Value> &grads) const {
    grads.assign({resultGrads[0], resultGrads[0], Value()});
    return success();
  }
};

/// The inverse permutation of dout.
struct TransposeAdjoint
    : AdjointOpInterface::ExternalModel<TransposeAdjoint, linalg::TransposeOp> {
  LogicalResult buildAdjoint(Operation *op, OpBuilder &b,
                             ValueRange resultGrads,
                             SmallVectorImpl<Value> &grads) const {
    auto transpose = cast<linalg::TransposeOp>(op);
    ArrayRef<int64_t> perm = transpose.getPermutation();
    SmallVector<int64_t> inverse(perm.size());
    for (auto [i, p] : llvm::enumerate(perm))
      inverse[p] = i;
    Location loc = op->getLoc();
    Value din = linalg::TransposeOp::create(
                    b, loc, resultGrads[0],
                    emptyLike(b, loc, transpose.getInput()), inverse)
                    .getResult()[0];
    grads.assign({din, Value()});
    return success();
  }
};

/// The broadcast dimensions are summed out of dout.
struct BroadcastAdjoint
    : AdjointOpInterface::ExternalModel<BroadcastAdjoint, linalg::BroadcastOp> {
  LogicalResult buildAdjoint(Operation *op, OpBuilder &b,
                             ValueRange resultGrads,
                             SmallVectorImpl<Value> &grads) const {
    auto broadcast = cast<linalg::BroadcastOp>(op);
    MLIRContext *ctx = b.getContext();
    RankedTensorType inType = typeOf(broadcast.getInput());
    unsigned rank = typeOf(resultGrads[0]).getRank();
    ArrayRef<int64_t> added = broadcast.getDimensions();
    SmallVector<AffineExpr> kept;
    SmallVector<utils::IteratorType> iterators;
    for (unsigned d = 0; d < rank; ++d) {
      bool isAdded = llvm::is_contained(added, static_cast<int64_t>(d));
      iterators.push_back(isAdded ? kRed : kPar);
      if (!isAdded)
        kept.push_back(getAffineDimExpr(d, ctx));
    }
    Value din = tensorGeneric(b, op->getLoc(), inType, {resultGrads[0]},
                        {AffineMap::getMultiDimIdentityMap(rank, ctx), indexingMap(rank, kept, ctx)},
                        iterators,
                        [](OpBuilder &, Location, ValueRange a) { return a[0]; });
    grads.assign({din, Value()});
    return success();
  }
};

/// The slice's gradient in zeros of the source's shape.
struct ExtractSliceAdjoint
    : AdjointOpInterface::ExternalModel<ExtractSliceAdjoint,
                                        tensor::ExtractSliceOp> {
  LogicalResult buildAdjoint(Operation *op, OpBuilder &b,
                             ValueRange resultGrads,
                             SmallVectorImpl<Value> &grads) const {
    auto slice = cast<tensor::ExtractSliceOp>(op);
    Location loc = op->getLoc();
    Value dsrc = tensor::InsertSliceOp::create(
        b, loc, resultGrads[0], zerosLike(b, loc, slice.getSource()),
        slice.getMixedOffsets(), slice.getMixedSizes(),
        slice.getMixedStrides());
    grads.assign(op->getNumOperands(), Value());
    grads[0] = dsrc;
    return success();
  }
};

/// dsource = the slice of dout; ddest = dout with the slice zeroed.
struct InsertSliceAdjoint
    : AdjointOpInterface::ExternalModel<InsertSliceAdjoint,
                                        tensor::InsertSliceOp> {
  LogicalResult buildAdjoint(Operation *op, OpBuilder &b,
                             ValueRange resultGrads,
                             SmallVectorImpl<Value> &grads) const {
    auto insert = cast<tensor::InsertSliceOp>(op);
    Location loc = op->getLoc();
    Value dout = resultGrads[0];
    Value dsrc = tensor::ExtractSliceOp::create(
        b, loc, insert.getSourceType(), dout, insert.getMixedOffsets(),
        insert.getMixedSizes(), insert.getMixedStrides());
    Value ddest = tensor::InsertSliceOp::create(
        b, loc, zerosLike(b, loc, insert.getSource()), dout,
        insert.getMixedOffsets(), insert.getMixedSizes(),
        insert.getMixedStrides());
    grads.assign(op->getNumOperands(), Value());
    grads[0] = dsrc;
    grads[1] = ddest;
    return success();
  }
};

/// Reshapes: the inverse reshape of dout.
struct ExpandShapeAdjoint
    : AdjointOpInterface::ExternalModel<ExpandShapeAdjoint,
                                        tensor::ExpandShapeOp> {
  LogicalResult buildAdjoint(Operation *op, OpBuilder &b,
                             ValueRange resultGrads,
                             SmallVectorImpl<Value> &grads) const {
    auto expand = cast<tensor::ExpandShapeOp>(op);
    Value dsrc = tensor::CollapseShapeOp::create(
        b, op->getLoc(), expand.getSrcType(), resultGrads[0],
        expand.getReassociationIndices());
    grads.assign(op->getNumOperands(), Value());
    grads[0] = dsrc;
    return success();
  }
};

struct CollapseShapeAdjoint
    : AdjointOpInterface::ExternalModel<CollapseShapeAdjoint,
                                        tensor::CollapseShapeOp> {
  LogicalResult buildAdjoint(Operation *op, OpBuilder &b,
                             ValueRange resultGrads,
                             SmallVectorImpl<Value> &grads) const {
    auto collapse = cast<tensor::CollapseShapeOp>(op);
    // The source's sizes (dynamic ones read with tensor.dim).
    Value dsrc = tensor::ExpandShapeOp::create(
        b, op->getLoc(), collapse.getSrcType(), resultGrads[0],
        collapse.getReassociationIndices(),
        tensor::getMixedSizes(b, op->getLoc(), collapse.getSrc()));
    grads.assign({dsrc});
    return success();
  }
};

/// No tensor operands: nothing to propagate.
struct EmptyAdjoint
    : AdjointOpInterface::ExternalModel<EmptyAdjoint, tensor::EmptyOp> {
  LogicalResult buildAdjoint(Operation *op, OpBuilder &, ValueRange,
                             SmallVectorImpl<Value> &grads) const {
    grads.assign(op->getNumOperands(), Value());
    return success();
  }
};

} // namespace

void mlir::hkt::registerAdjointExternalModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, linalg::LinalgDialect *) {
    linalg::MatmulOp::attachInterface<MatmulAdjoint>(*ctx);
    linalg::SoftmaxOp::attachInterface<SoftmaxAdjoint>(*ctx);
    linalg::FillOp::attachInterface<FillAdjoint>(*ctx);
    linalg::AddOp::attachInterface<AddAdjoint>(*ctx);
    linalg::TransposeOp::attachInterface<TransposeAdjoint>(*ctx);
    linalg::BroadcastOp::attachInterface<BroadcastAdjoint>(*ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, tensor::TensorDialect *) {
    tensor::ExtractSliceOp::attachInterface<ExtractSliceAdjoint>(*ctx);
    tensor::InsertSliceOp::attachInterface<InsertSliceAdjoint>(*ctx);
    tensor::ExpandShapeOp::attachInterface<ExpandShapeAdjoint>(*ctx);
    tensor::CollapseShapeOp::attachInterface<CollapseShapeAdjoint>(*ctx);
    tensor::EmptyOp::attachInterface<EmptyAdjoint>(*ctx);
  });
}
