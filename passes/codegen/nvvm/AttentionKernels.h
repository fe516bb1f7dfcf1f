//===- AttentionKernels.h - the NVVM path's attention kernels ---*- C++ -*-===//
//
// What the attention kernels of hkt-nvvm-lower-online-attention share: the
// op's operands as buffers in global memory and its results as fresh ones
// (so one-shot bufferization sees through the kernel as on the CPU), the
// number of key tiles a block visits, and the entry points of the kernels
// that live in their own files.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_PASSES_CODEGEN_NVVM_ATTENTIONKERNELS_H
#define HKT_PASSES_CODEGEN_NVVM_ATTENTIONKERNELS_H

#include "dialect/HKTOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "passes/codegen/nvvm/Sizes.h"

namespace mlir::hkt::nvvm {

/// The operands of one hkt.online_attention as read-only buffers, and the
/// buffers its kernel writes (acc, max, sum).
struct AttentionBuffers {
  SmallVector<Value> queries, keys;
  Value value, lengths, accIn, maxIn, sumIn;
  SmallVector<Value> outs;

  static AttentionBuffers create(ImplicitLocOpBuilder &b, OnlineAttentionOp op);
  /// `op`'s results become tensors of `outs`, inserted after `launch`.
  void replaceOp(ImplicitLocOpBuilder &b, OnlineAttentionOp op,
                 Operation *launch) const;
};

/// The sizes a kernel reads on the host before its launch (constants
/// where static, else memref.dim of the buffers): the batch, the query and
/// key counts, and each level's query and key counts.
struct AttentionExtents {
  Value batch, tq, tk;
  SmallVector<Value> queryRows, keyRows;

  static AttentionExtents create(ImplicitLocOpBuilder &b, ValueRange queries,
                                 ValueRange keys, Value value);
};

/// bufferization.to_buffer of `tensor`, read-only.
Value readOnlyBuffer(ImplicitLocOpBuilder &b, Value tensor);
/// readOnlyBuffer of each tensor.
SmallVector<Value> readOnlyBuffers(ImplicitLocOpBuilder &b, ValueRange tensors);
/// A fresh buffer of `tensor`'s shape (its dynamic sizes read from it).
Value allocLike(ImplicitLocOpBuilder &b, Value tensor);
/// `tensor` (f32) rounded to bf16 by an element-wise linalg.generic (a
/// kernel `to_bf16`): what the kernels copy to shared memory as raw bytes
/// (cp.async) must already be bf16.
Value toBf16(ImplicitLocOpBuilder &b, Value tensor);

/// The sizes an attention kernel is built for, read from its op (forward
/// or backward), and the levels' factors. The batch, tq and tk may be
/// ShapedType::kDynamic: the kernels then read them from the buffers.
struct AttentionDims {
  int64_t batch, heads, headDim, tq, tk;
  SmallVector<int64_t> factors;

  static AttentionDims of(OnlineAttentionOp op);
  static AttentionDims of(OnlineAttentionBackwardOp op);
  int64_t levels() const { return factors.size(); }
  /// Static heads and head width, or an error on `op` after `prefix`.
  LogicalResult check(Operation *op, StringRef prefix) const;
};

/// What every GPU attention kernel needs of `op`'s operands: f32
/// tensors (the key lengths exempt; `f32Why` starts the message otherwise)
/// and no offsets (a tile of a larger op). The problem, prefixed by
/// `prefix`, is reported on `op`.
LogicalResult checkKernelOperands(Operation *op, Value lengths,
                                  Value queryOffset, StringRef prefix,
                                  StringRef f32Why);

/// Key tiles a block whose first query row is `i0` visits: none above its
/// last row (causal), none past the batch row's key length (`lengths`, a
/// buffer, or null), whose clamped value is returned in `keyLength` (null
/// without lengths). `tq` and `tk` are the query and key counts.
Value countKeyTiles(ImplicitLocOpBuilder &b, bool causal, Value lengths,
                    Value tq, Value tk, Value i0, Value batch, int64_t tileQ,
                    int64_t tileK, Value &keyLength);

/// The bf16 tensor-core forward (FlashAttention-2 manner, nvvm.mma.sync
/// m16n8k16 fed by nvgpu.ldmatrix): one kernel `attention_fwd` per op, or
/// an error on `op` saying what it does not support. Defined in
/// FlashAttentionForward.cpp.
LogicalResult lowerToFlashAttentionForward(OnlineAttentionOp op,
                                           int64_t tileK);

/// The bf16 tensor-core backward (FlashAttention-2 manner): the kernels
/// `attention_bwd_dkdv` and `attention_bwd_dq`, `tile` the inner tile (query
/// rows per step of the first, keys per step of the second). Defined in
/// FlashAttentionBackward.cpp.
LogicalResult lowerToFlashAttentionBackward(OnlineAttentionBackwardOp op,
                                            int64_t tile);

} // namespace mlir::hkt::nvvm

#endif // HKT_PASSES_CODEGEN_NVVM_ATTENTIONKERNELS_H
