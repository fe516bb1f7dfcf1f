//===- DynamicSharedMemory.cpp - big workgroup arrays -> dynamic smem -----===//
//
// A block's static shared memory stops at 48 KiB; beyond that a kernel
// must use dynamic shared memory, and the launch must opt in to its size
// (the runtime sets CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES before
// such a launch). The bf16 attention kernels at head width 256 need more.
// For every gpu.launch whose workgroup attributions add up to more than
// 48 KiB, this pass replaces them with views into gpu.dynamic_shared_memory
// at 128-byte aligned offsets (ldmatrix wants 16, wmma 32) and gives the
// launch that many bytes of dynamic shared memory. Launches within 48 KiB
// keep their static arrays. The emulation keeps attributions throughout:
// the kernels' code is the same either way.
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/nvvm/Passes.h"
#include "passes/codegen/nvvm/TargetInfo.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTNVVMDYNAMICSHAREDMEMORYPASS
#include "passes/codegen/nvvm/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;
using mlir::hkt::NvvmTargetInfo;

namespace {

/// Alignment of each array in the dynamic shared memory.
constexpr int64_t kArrayAlignment = 128;

LogicalResult toDynamic(gpu::LaunchOp launch) {
  ArrayRef<BlockArgument> arrays = launch.getWorkgroupAttributions();
  SmallVector<int64_t> offsets;
  int64_t total = 0;
  for (BlockArgument array : arrays) {
    auto type = cast<MemRefType>(array.getType());
    if (!type.hasStaticShape() || !type.getLayout().isIdentity())
      return success(); // not ours: left static
    total = llvm::alignTo(total, kArrayAlignment);
    offsets.push_back(total);
    total += type.getNumElements() * type.getElementTypeBitWidth() / 8;
  }
  if (total <= NvvmTargetInfo::kStaticSharedMemoryBytes)
    return success();
  if (total > NvvmTargetInfo::kMaxSharedMemoryBytes)
    return launch.emitOpError("needs ")
           << total << " bytes of shared memory, more than the "
           << NvvmTargetInfo::kMaxSharedMemoryBytes / 1024
           << " KiB a block may have";
  OpBuilder host(launch);
  launch.getDynamicSharedMemorySizeMutable().assign(arith::ConstantOp::create(
      host, launch.getLoc(), host.getI32IntegerAttr(total)));
  Block &body = launch.getBody().front();
  auto b = OpBuilder::atBlockBegin(&body);
  auto workgroup =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  Value base = gpu::DynamicSharedMemoryOp::create(
      b, launch.getLoc(),
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                      MemRefLayoutAttrInterface(), workgroup));
  for (auto [array, offset] : llvm::zip(arrays, offsets)) {
    Value at = arith::ConstantIndexOp::create(b, launch.getLoc(), offset);
    BlockArgument(array).replaceAllUsesWith(memref::ViewOp::create(
        b, launch.getLoc(), array.getType(), base, at, ValueRange{}));
  }
  unsigned first = arrays.front().getArgNumber();
  body.eraseArguments(first, arrays.size());
  launch->setAttr(launch.getNumWorkgroupAttributionsAttrName(),
                  b.getI64IntegerAttr(0));
  return success();
}

struct HktNvvmDynamicSharedMemoryPass
    : public mlir::hkt::impl::HktNvvmDynamicSharedMemoryPassBase<
          HktNvvmDynamicSharedMemoryPass> {
  void runOnOperation() override {
    WalkResult result = getOperation()->walk([](gpu::LaunchOp launch) {
      if (launch.getWorkgroupAttributions().empty() ||
          launch.getDynamicSharedMemorySize())
        return WalkResult::advance();
      return failed(toDynamic(launch)) ? WalkResult::interrupt()
                                       : WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
