//===- Bf16KernelBuilder.h - pieces of the bf16 tensor-core kernels -*- C++ -*-===//
//
// What the bf16 attention kernels (forward and backward) build alike: the
// launch of four-warp blocks, the lane's place in the m16n8k16 fragments,
// tiles staged in shared memory as bf16, ldmatrix, mma.sync (as
// nvgpu.mma.sync, see hkt-nvvm-lower-bf16-mma), accumulators re-packed as
// A fragments, quad reductions, and the coarse levels' score blocks.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_PASSES_CODEGEN_NVVM_BF16KERNELBUILDER_H
#define HKT_PASSES_CODEGEN_NVVM_BF16KERNELBUILDER_H

#include "passes/codegen/nvvm/TargetInfo.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::hkt::nvvm {

/// The four accumulator registers of one 16 x 8 fragment: (g, 2q),
/// (g, 2q + 1), (g + 8, 2q), (g + 8, 2q + 1) for lane 4g + q.
using Fragment = SmallVector<Value, 4>;

class Bf16KernelBuilder {
public:
  /// Warps per block by default; each owns 16 rows (one mma row block).
  static constexpr int64_t kWarps = 4;
  static constexpr int64_t kBlockRows = kWarps * NvvmTargetInfo::kBf16MmaM;
  /// bf16 elements of padding after each row of an ldmatrix source: 16
  /// bytes keep the rows' addresses aligned and move consecutive rows to
  /// other banks.
  static constexpr int64_t kLdMatrixPad = 8;
  /// bf16 elements after each row of the coarse queries and keys, one
  /// 32-bit word: the coarse-score loop reads one row per thread.
  static constexpr int64_t kCoarsePad = 2;

  /// Coarse rows a tile of `rows` fine rows starting anywhere can touch.
  static int64_t coarseRows(int64_t rows, int64_t f) {
    return (rows + f - 1) / f + 1;
  }
  /// Whether the coarse score block of a tile pair (`tileRows` queries and
  /// `tileCols` keys, each tile starting at a multiple of its size) runs
  /// on the tensor cores: when f divides both tiles, the block is exactly
  /// tileRows/f x tileCols/f, and one side must give whole 16-row A
  /// fragments and the other whole 8-column B fragments.
  static bool coarseOnTensorCores(int64_t tileRows, int64_t tileCols,
                                  int64_t f) {
    if (tileRows % f || tileCols % f)
      return false;
    return wholeFragments(tileRows / f, tileCols / f) ||
           wholeFragments(tileCols / f, tileRows / f);
  }
  /// Whether an m x n block is whole m16n8 fragments.
  static bool wholeFragments(int64_t m, int64_t n) {
    return m % NvvmTargetInfo::kBf16MmaM == 0 &&
           n % NvvmTargetInfo::kBf16MmaN == 0;
  }
  /// The padding of that block's coarse query and key rows: ldmatrix
  /// needs 16-byte aligned rows, the SIMT loop one word against bank
  /// conflicts.
  static int64_t coarsePad(int64_t tileRows, int64_t tileCols, int64_t f) {
    return coarseOnTensorCores(tileRows, tileCols, f) ? kLdMatrixPad
                                                      : kCoarsePad;
  }

protected:
  /// A builder of blocks of `warps` warps, at `op`.
  explicit Bf16KernelBuilder(Operation *op, int64_t warps = kWarps)
      : b(op->getLoc(), op), f32(b.getF32Type()), bf16(b.getBF16Type()),
        warps(warps) {}

  int64_t threads() const { return warps * NvvmTargetInfo::kWarpSize; }
  /// Rows a block owns: 16 per warp.
  int64_t blockRows() const { return warps * NvvmTargetInfo::kBf16MmaM; }

  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value cf(float v) {
    return arith::ConstantOp::create(b, b.getF32FloatAttr(v));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
  Value add(Value x, int64_t y) { return add(x, c(y)); }
  Value mul(Value x, int64_t y) { return arith::MulIOp::create(b, x, c(y)); }
  Value div(Value x, int64_t y) { return arith::DivUIOp::create(b, x, c(y)); }
  Value rem(Value x, int64_t y) { return arith::RemUIOp::create(b, x, c(y)); }
  /// x - 1, folded where x is a constant (a static size).
  Value minusOne(Value x) { return b.createOrFold<arith::SubIOp>(x, c(1)); }
  Value lt(Value x, Value y) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::ult, x, y);
  }

  /// A launch of blocks of `warps` warps named `name`; the builder is left inside
  /// its body, and tid, lane, group and quad are set.
  gpu::LaunchOp createLaunch(Value gridX, Value gridY, Value gridZ,
                             StringRef name);
  /// body(r, k) for every r < rows, k < cols, the block's threads striding
  /// over the elements (neighbouring threads, neighbouring k).
  void forEachElement(int64_t rows, int64_t cols,
                      function_ref<void(Value r, Value k)> body);
  /// A workgroup array (hkt-nvvm-host-staging makes it an attribution).
  Value sharedArray(int64_t rows, int64_t cols, Type type);
  /// dst[r, k] = bf16(src[batch, base + r, col0 + k]) for r < rows, k < d,
  /// zero past `limit` rows; the block's threads stride over the elements.
  void stage(Value dst, Value src, Value batch, Value col0, Value base,
             int64_t rows, Value limit, int64_t d);
  /// dst[r] = src[batch, head, base + r] for r < rows, `pad` past `limit`.
  void stageRow(Value dst, Value src, Value batch, Value head, Value base,
                int64_t rows, Value limit, float pad);
  /// `num` 8 x 8 matrices of `tile` (vector<num x 2 x bf16>): lane i gives
  /// the address of row i % 8 of matrix i / 8.
  Value ldmatrix(Value tile, Value row, Value col, int64_t num,
                 bool transpose);
  /// The warp's 16 rows from `row0` x 16 columns from `col` of `tile` as an
  /// A fragment (x4: rows 0-7 and 8-15 of the left 8 columns, then the
  /// right).
  Value loadA(Value tile, Value row0, int64_t col);
  /// B fragment of a 16 x 8 block whose 8 columns are rows `row0`.. of
  /// `tile` (B = tile^T: K for Q K^T), k from column `col`.
  Value loadBRows(Value tile, int64_t row0, int64_t col) {
    return loadBRows(tile, c(row0), col);
  }
  Value loadBRows(Value tile, Value row0, int64_t col);
  /// B fragment of a 16 x 8 block whose 16 k-rows are rows `row0`.. of
  /// `tile`, columns from `col` (B = tile: V for P V).
  Value loadBCols(Value tile, int64_t row0, int64_t col) {
    return loadBCols(tile, c(row0), col);
  }
  Value loadBCols(Value tile, Value row0, int64_t col);
  /// D = A B + C on one m16n8k16 fragment (f32 accumulators).
  Fragment mma(Value a, Value bFrag, ArrayRef<Value> acc);
  /// Two accumulator fragments (k 0-7 and 8-15) as a bf16 A fragment.
  Value packA(const Fragment &lo, const Fragment &hi);
  /// Max (or sum) over the four lanes of a quad, which share a row.
  Value quadReduce(Value x, bool max);
  /// cs[I, J] = sum_k cq[I, k] ck[J, k], the coarse scores of level factor
  /// f for a tile pair of `tileRows` queries and `tileCols` keys (f32 sums
  /// of bf16 products): on the tensor cores where coarseOnTensorCores
  /// says so, else by the block's threads one element each.
  void coarseBlock(Value cq, Value ck, Value cs, int64_t tileRows,
                   int64_t tileCols, int64_t f, int64_t d);

  /// The coarse block as m16n8 fragments shared out to the warps (every
  /// warp runs as many mma as the others: the emulation's warp-level ops
  /// are block-wide); `swap` computes cs^T = ck cq^T.
  void coarseBlockOnTensorCores(Value cq, Value ck, Value cs, int64_t rq,
                                int64_t rk, int64_t d, bool swap);

  ImplicitLocOpBuilder b;
  Type f32, bf16;
  int64_t warps;
  /// The thread, its lane, and the lane's fragment row (group = lane / 4)
  /// and column pair (quad = lane % 4).
  Value tid, lane, group, quad, warp;
};

} // namespace mlir::hkt::nvvm

#endif // HKT_PASSES_CODEGEN_NVVM_BF16KERNELBUILDER_H
