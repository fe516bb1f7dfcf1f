//===- GpuAlignWorkgroupMemory.cpp - aligned shared arrays ----------------===//
//
// Outlined kernels keep their workgroup attributions but not an alignment
// (gpu.launch has no attribute for one), and convert-gpu-to-nvvm then
// aligns each shared array to its element type only (`.shared .align 4`).
// The tensor cores' wmma.load / wmma.store need 256-bit (32-byte) aligned
// fragment addresses, so every workgroup attribution of every gpu.func gets
// `llvm.align`, which the NVVM lowering puts on the array.
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/nvvm/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTNVVMALIGNWORKGROUPMEMORYPASS
#include "passes/codegen/nvvm/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;

namespace {
struct HktNvvmAlignWorkgroupMemoryPass
    : public mlir::hkt::impl::HktNvvmAlignWorkgroupMemoryPassBase<
          HktNvvmAlignWorkgroupMemoryPass> {
  using HktNvvmAlignWorkgroupMemoryPassBase::HktNvvmAlignWorkgroupMemoryPassBase;
  void runOnOperation() override {
    if (alignment < 1 || !llvm::isPowerOf2_64(alignment)) {
      getOperation()->emitError("alignment must be a power of two");
      return signalPassFailure();
    }
    getOperation()->walk([&](gpu::GPUFuncOp fn) {
      Builder b(fn.getContext());
      for (unsigned i = 0, e = fn.getNumWorkgroupAttributions(); i < e; ++i) {
        auto old = dyn_cast_or_null<IntegerAttr>(fn.getWorkgroupAttributionAttr(
            i, LLVM::LLVMDialect::getAlignAttrName()));
        if (old && old.getInt() >= alignment)
          continue;
        fn.setWorkgroupAttributionAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                                       b.getI64IntegerAttr(alignment));
      }
    });
  }
};
} // namespace
