//===- LowerBf16Mma.cpp - nvgpu.mma.sync on bf16 -> nvvm.mma.sync ---------===//
//
// The bf16 kernels multiply with nvgpu.mma.sync (vector operands, declared
// pure, so bufferization and buffer deallocation see through it), but
// upstream's convert-nvgpu-to-nvvm deduces no PTX type for bf16
// (../shared/gpu/PROBES.md). This pass repacks the operands into the 32-bit
// registers nvvm.mma.sync takes (a pair of bf16 per register, the lower
// column in the low half, as the vectors already hold them) and the result
// struct back into the accumulator vector.
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/nvvm/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTNVVMLOWERBF16MMAPASS
#include "passes/codegen/nvvm/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;

namespace {

/// The rows of a vector<N x 2 x bf16> operand as N i32 registers.
SmallVector<Value> registers(PatternRewriter &rewriter, Location loc,
                             Value operand) {
  auto type = cast<VectorType>(operand.getType());
  auto word = VectorType::get({1}, rewriter.getI32Type());
  SmallVector<Value> regs;
  for (int64_t i = 0; i < type.getDimSize(0); ++i) {
    Value pair =
        vector::ExtractOp::create(rewriter, loc, operand, ArrayRef<int64_t>{i});
    Value packed = vector::BitCastOp::create(rewriter, loc, word, pair);
    regs.push_back(
        vector::ExtractOp::create(rewriter, loc, packed, ArrayRef<int64_t>{0}));
  }
  return regs;
}

struct Bf16MmaToNvvm : OpRewritePattern<nvgpu::MmaSyncOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(nvgpu::MmaSyncOp op,
                                PatternRewriter &rewriter) const override {
    auto aType = cast<VectorType>(op.getMatrixA().getType());
    auto cType = cast<VectorType>(op.getMatrixC().getType());
    if (!aType.getElementType().isBF16())
      return rewriter.notifyMatchFailure(op, "not bf16");
    std::array<int64_t, 3> shape = op.getMmaShapeAsArray();
    if (shape != std::array<int64_t, 3>{16, 8, 16} ||
        aType.getShape() != ArrayRef<int64_t>{4, 2} ||
        cast<VectorType>(op.getMatrixB().getType()).getShape() !=
            ArrayRef<int64_t>{2, 2} ||
        cType.getShape() != ArrayRef<int64_t>{2, 2} ||
        !cType.getElementType().isF32())
      return rewriter.notifyMatchFailure(
          op, "only m16n8k16 with f32 accumulators");
    Location loc = op.getLoc();
    SmallVector<Value> acc;
    for (int64_t i = 0; i < 4; ++i)
      acc.push_back(vector::ExtractOp::create(rewriter, loc, op.getMatrixC(),
                                              ArrayRef<int64_t>{i / 2, i % 2}));
    Type f32 = rewriter.getF32Type();
    auto resultType = LLVM::LLVMStructType::getLiteral(
        rewriter.getContext(), SmallVector<Type>(4, f32));
    auto mma = NVVM::MmaOp::create(
        rewriter, loc, resultType, registers(rewriter, loc, op.getMatrixA()),
        registers(rewriter, loc, op.getMatrixB()), acc, shape, std::nullopt,
        std::nullopt,
        std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16,
                                      NVVM::MMATypes::bf16},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                       NVVM::MMALayout::col});
    SmallVector<Value> d;
    for (int64_t i = 0; i < 4; ++i)
      d.push_back(LLVM::ExtractValueOp::create(rewriter, loc, mma.getRes(),
                                               ArrayRef<int64_t>{i}));
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(op, cType, d);
    return success();
  }
};

struct HktNvvmLowerBf16MmaPass
    : public mlir::hkt::impl::HktNvvmLowerBf16MmaPassBase<
          HktNvvmLowerBf16MmaPass> {
  void runOnOperation() override {
    // A walk, not the greedy driver: nothing else in the kernels is
    // folded or erased on the way.
    SmallVector<nvgpu::MmaSyncOp> ops;
    getOperation()->walk([&](nvgpu::MmaSyncOp op) { ops.push_back(op); });
    PatternRewriter rewriter(&getContext());
    Bf16MmaToNvvm pattern(&getContext());
    for (nvgpu::MmaSyncOp op : ops) {
      rewriter.setInsertionPoint(op);
      (void)pattern.matchAndRewrite(op, rewriter);
    }
    WalkResult left = getOperation()->walk([](nvgpu::MmaSyncOp op) {
      if (!cast<VectorType>(op.getMatrixA().getType()).getElementType().isBF16())
        return WalkResult::advance();
      op.emitOpError("bf16 mma.sync is lowered only as m16n8k16 with f32 "
                     "accumulators");
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
