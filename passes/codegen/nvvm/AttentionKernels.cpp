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

Value nvvm::toBf16(ImplicitLocOpBuilder &b, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  Type bf16 = b.getBF16Type();
  Value empty = tensor::EmptyOp::create(b, type.getShape(), bf16);
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

nvvm::AttentionDims nvvm::AttentionDims::of(OnlineAttentionOp op) {
  auto acc = cast<RankedTensorType>(op.getAcc().getType());
  AttentionDims d;
  d.batch = acc.getDimSize(0);
  d.tq = acc.getDimSize(1);
  d.heads = cast<RankedTensorType>(op.getMax().getType()).getDimSize(1);
  d.tk = cast<RankedTensorType>(op.getValue().getType()).getDimSize(1);
  d.headDim = acc.getDimSize(2) / d.heads;
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
  d.headDim =
      cast<RankedTensorType>(op.getDout().getType()).getDimSize(2) / d.heads;
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
    if (!type.hasStaticShape())
      return op->emitOpError(prefix) << "dynamic shapes are not supported yet";
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
  for (Value init : {op.getAcc(), op.getMax(), op.getSum()}) {
    auto type = cast<RankedTensorType>(init.getType());
    buf.outs.push_back(memref::AllocOp::create(
        b, MemRefType::get(type.getShape(), type.getElementType())));
  }
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
                          int64_t tq, int64_t tk, Value i0, Value batch,
                          int64_t tileQ, int64_t tileK, Value &keyLength) {
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, v);
  };
  Value numTiles = c((tk + tileK - 1) / tileK);
  if (causal) {
    Value last = arith::MinUIOp::create(
        b, arith::AddIOp::create(b, i0, c(tileQ - 1)), c(tq - 1));
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
    keyLength = arith::MinSIOp::create(b, len, c(tk));
    Value tiles = arith::DivUIOp::create(
        b, arith::AddIOp::create(b, keyLength, c(tileK - 1)), c(tileK));
    numTiles = arith::MinUIOp::create(b, numTiles, tiles);
  }
  return numTiles;
}
