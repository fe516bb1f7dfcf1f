//===- AttentionKernels.cpp - what the NVVM attention kernels share -------===//

#include "passes/codegen/nvvm/AttentionKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "dialect/HKTDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::hkt;

Value nvvm::readOnlyBuffer(ImplicitLocOpBuilder &b, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  return bufferization::ToBufferOp::create(
      b, MemRefType::get(type.getShape(), type.getElementType()), tensor,
      /*readOnly=*/true);
}

SmallVector<Value> nvvm::readOnlyBuffers(ImplicitLocOpBuilder &b,
                                         ValueRange tensors) {
  SmallVector<Value> buffers;
  for (Value t : tensors)
    buffers.push_back(readOnlyBuffer(b, t));
  return buffers;
}

nvvm::AttentionExtents nvvm::AttentionExtents::create(ImplicitLocOpBuilder &b,
                                                      ValueRange queries,
                                                      ValueRange keys,
                                                      Value value) {
  AttentionExtents e;
  e.batch = extent(b, value, 0);
  e.tq = extent(b, queries[0], 1);
  e.tk = extent(b, value, 1);
  for (Value q : queries)
    e.queryRows.push_back(extent(b, q, 1));
  for (Value k : keys)
    e.keyRows.push_back(extent(b, k, 1));
  return e;
}

Value nvvm::allocLike(ImplicitLocOpBuilder &b, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  return memref::AllocOp::create(
      b, MemRefType::get(type.getShape(), type.getElementType()),
      dynamicSizes(b, tensor));
}

Value nvvm::toBf16(ImplicitLocOpBuilder &b, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  Type bf16 = b.getBF16Type();
  Value empty = tensor::EmptyOp::create(b, type.getShape(), bf16,
                                        dynamicSizes(b, tensor));
  AffineMap id = b.getMultiDimIdentityMap(type.getRank());
  SmallVector<utils::IteratorType> parallel(type.getRank(),
                                            utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, empty.getType(), tensor, empty, ArrayRef<AffineMap>{id, id}, parallel,
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        Value x = arith::TruncFOp::create(nb, loc, bf16, args[0]);
        linalg::YieldOp::create(nb, loc, x);
      });
  generic->setAttr(kKernelAttr, b.getStringAttr("to_bf16"));
  return generic.getResult(0);
}

static int64_t columnsPerHead(int64_t columns, int64_t heads) {
  if (ShapedType::isDynamic(columns) || ShapedType::isDynamic(heads))
    return ShapedType::kDynamic;
  return columns / heads;
}

LogicalResult nvvm::AttentionDims::check(Operation *op,
                                         StringRef prefix) const {
  // The batch and the sequences may be dynamic (grids, loop bounds and
  // limits are values); the heads and their width size the tiles and the
  // registers.
  if (ShapedType::isDynamic(heads) || ShapedType::isDynamic(headDim))
    return op->emitOpError(prefix)
           << "a dynamic number of heads or columns is not supported (the "
              "batch and the sequence lengths may be dynamic)";
  return success();
}

nvvm::AttentionDims nvvm::AttentionDims::of(OnlineAttentionOp op) {
  auto acc = cast<RankedTensorType>(op.getAcc().getType());
  AttentionDims d;
  d.batch = acc.getDimSize(0);
  d.tq = acc.getDimSize(1);
  d.heads = cast<RankedTensorType>(op.getMax().getType()).getDimSize(1);
  d.tk = cast<RankedTensorType>(op.getValue().getType()).getDimSize(1);
  d.headDim = columnsPerHead(acc.getDimSize(2), d.heads);
  d.factors.assign(op.getFactors().begin(), op.getFactors().end());
  return d;
}

nvvm::AttentionDims nvvm::AttentionDims::of(OnlineAttentionBackwardOp op) {
  auto lse = cast<RankedTensorType>(op.getLse().getType());
  AttentionDims d;
  d.batch = lse.getDimSize(0);
  d.heads = lse.getDimSize(1);
  d.tq = lse.getDimSize(2);
  d.tk = cast<RankedTensorType>(op.getValue().getType()).getDimSize(1);
  d.headDim = columnsPerHead(
      cast<RankedTensorType>(op.getDout().getType()).getDimSize(2), d.heads);
  d.factors.assign(op.getFactors().begin(), op.getFactors().end());
  return d;
}

LogicalResult nvvm::checkKernelOperands(Operation *op, Value lengths,
                                        Value queryOffset, StringRef prefix,
                                        StringRef f32Why) {
  for (Value v : op->getOperands()) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type)
      continue;
    if (!type.getElementType().isF32() && v != lengths)
      return op->emitOpError(prefix)
             << f32Why << " (got " << type.getElementType() << ")";
  }
  if (queryOffset)
    return op->emitOpError(prefix)
           << "an op with offsets (a tile of a larger op) is not supported";
  return success();
}

nvvm::AttentionBuffers nvvm::AttentionBuffers::create(ImplicitLocOpBuilder &b,
                                                      OnlineAttentionOp op) {
  AttentionBuffers buf;
  buf.queries = readOnlyBuffers(b, op.getQueries());
  buf.keys = readOnlyBuffers(b, op.getKeys());
  buf.value = readOnlyBuffer(b, op.getValue());
  buf.lengths = op.getLengths() ? readOnlyBuffer(b, op.getLengths()) : Value();
  buf.accIn = readOnlyBuffer(b, op.getAcc());
  buf.maxIn = readOnlyBuffer(b, op.getMax());
  buf.sumIn = readOnlyBuffer(b, op.getSum());
  for (Value init : {op.getAcc(), op.getMax(), op.getSum()})
    buf.outs.push_back(allocLike(b, init));
  return buf;
}

/// The results are tensors of the result buffers, which one-shot
/// bufferization then folds away.
void nvvm::AttentionBuffers::replaceOp(ImplicitLocOpBuilder &b,
                                       OnlineAttentionOp op,
                                       Operation *launch) const {
  b.setInsertionPointAfter(launch);
  SmallVector<Value> results;
  for (auto [out, result] : llvm::zip(outs, op.getResults()))
    results.push_back(bufferization::ToTensorOp::create(
        b, result.getType(), out, /*restrict=*/true, /*writable=*/true));
  op.replaceAllUsesWith(results);
  op.erase();
}

/// Skipped tiles would only add -inf scores.
Value nvvm::countKeyTiles(ImplicitLocOpBuilder &b, bool causal, Value lengths,
                          Value tq, Value tk, Value i0, Value batch,
                          int64_t tileQ, int64_t tileK, Value &keyLength) {
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, v);
  };
  Value numTiles = ceilDiv(b, tk, tileK);
  if (causal) {
    Value last =
        arith::MinUIOp::create(b, arith::AddIOp::create(b, i0, c(tileQ - 1)),
                               b.createOrFold<arith::SubIOp>(tq, c(1)));
    numTiles = arith::MinUIOp::create(
        b, numTiles,
        arith::AddIOp::create(b, arith::DivUIOp::create(b, last, c(tileK)),
                              c(1)));
  }
  keyLength = Value();
  if (lengths) {
    Value raw = memref::LoadOp::create(b, lengths, ValueRange{batch});
    Value len = arith::IndexCastOp::create(b, b.getIndexType(), raw);
    len = arith::MaxSIOp::create(b, len, c(0));
    keyLength = arith::MinSIOp::create(b, len, tk);
    Value tiles = arith::DivUIOp::create(
        b, arith::AddIOp::create(b, keyLength, c(tileK - 1)), c(tileK));
    numTiles = arith::MinUIOp::create(b, numTiles, tiles);
  }
  return numTiles;
}
