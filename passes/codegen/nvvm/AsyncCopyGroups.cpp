//===- AsyncCopyGroups.cpp - the kernels' cp.async group points -----------===//
//
// Puts nvgpu's cp.async group ops where the kernels marked them, after
// bufferization (Passes.td says why they are marked, not built).
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/nvvm/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTNVVMASYNCCOPYGROUPSPASS
#include "passes/codegen/nvvm/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;

namespace {
struct HktNvvmAsyncCopyGroupsPass
    : public mlir::hkt::impl::HktNvvmAsyncCopyGroupsPassBase<
          HktNvvmAsyncCopyGroupsPass> {
  void runOnOperation() override {
    getOperation()->walk([&](gpu::BarrierOp barrier) {
      bool commit = barrier->hasAttr(hkt::kAsyncCopyCommitAttr);
      auto wait = barrier->getAttrOfType<IntegerAttr>(hkt::kAsyncCopyWaitAttr);
      if (!commit && !wait)
        return;
      OpBuilder b(barrier);
      Location loc = barrier.getLoc();
      Value group = nvgpu::DeviceAsyncCreateGroupOp::create(
          b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()),
          ValueRange{});
      if (wait)
        nvgpu::DeviceAsyncWaitOp::create(b, loc, group, wait);
      barrier->removeAttr(hkt::kAsyncCopyCommitAttr);
      barrier->removeAttr(hkt::kAsyncCopyWaitAttr);
    });
  }
};
} // namespace
