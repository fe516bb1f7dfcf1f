//===- MergeEquivalentKernels.cpp - one kernel per distinct body ----------===//
//
// gpu-kernel-outlining makes every gpu.launch a kernel in a gpu.module of its
// own, so a kernel launched at several places (the bf16 GEMM of every
// projection of one shape, a fill, a copy) is compiled, assembled and loaded
// once per place. This pass keeps the first of the modules whose kernels
// are the same op for op (names aside) and whose other ops are the same,
// points every gpu.launch_func at it, and erases the others: a layer's
// forward and backward have 31 bf16 GEMM launches but 8 distinct GEMM
// kernels. The kept kernel's name (which says the shape) serves them all.
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/nvvm/KernelEquivalence.h"
#include "passes/codegen/nvvm/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTNVVMMERGEEQUIVALENTKERNELSPASS
#include "passes/codegen/nvvm/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;
using namespace mlir::hkt::nvvm;

namespace {
/// The module's one kernel, or null if it holds none or several.
gpu::GPUFuncOp soleKernel(gpu::GPUModuleOp module) {
  gpu::GPUFuncOp kernel;
  for (auto fn : module.getOps<gpu::GPUFuncOp>()) {
    if (kernel || !fn.isKernel())
      return {};
    kernel = fn;
  }
  return kernel;
}

/// The ops of `a` and `b` other than their kernels (declarations, globals)
/// are the same, names included, and so are the modules' attributes.
bool sameBesideKernels(gpu::GPUModuleOp a, gpu::GPUModuleOp b) {
  if (attributesButName(a) != attributesButName(b))
    return false;
  Block &ba = a.getBodyRegion().front(), &bb = b.getBodyRegion().front();
  if (ba.getOperations().size() != bb.getOperations().size())
    return false;
  for (auto [oa, ob] : llvm::zip(ba, bb))
    if (!isa<gpu::GPUFuncOp>(oa) &&
        !OperationEquivalence::isEquivalentTo(
            &oa, &ob, OperationEquivalence::IgnoreLocations))
      return false;
  return true;
}

struct HktNvvmMergeEquivalentKernelsPass
    : public mlir::hkt::impl::HktNvvmMergeEquivalentKernelsPassBase<
          HktNvvmMergeEquivalentKernelsPass> {
  void runOnOperation() override {
    ModuleOp top = getOperation();
    EquivalentOps kernels;
    // Each erased module's name -> the kept kernel.
    llvm::DenseMap<StringAttr, SymbolRefAttr> replacement;
    SmallVector<gpu::GPUModuleOp> erased;
    for (auto module : top.getOps<gpu::GPUModuleOp>()) {
      gpu::GPUFuncOp kernel = soleKernel(module);
      if (!kernel)
        continue;
      auto same = cast_or_null<gpu::GPUFuncOp>(kernels.findOrInsert(kernel));
      if (!same)
        continue;
      auto kept = same->getParentOfType<gpu::GPUModuleOp>();
      if (!sameBesideKernels(kept, module))
        continue;
      replacement[module.getSymNameAttr()] = SymbolRefAttr::get(
          kept.getSymNameAttr(), {SymbolRefAttr::get(same.getNameAttr())});
      erased.push_back(module);
    }
    top.walk([&](gpu::LaunchFuncOp launch) {
      auto it = replacement.find(launch.getKernelModuleName());
      if (it != replacement.end())
        launch.setKernelAttr(it->second);
    });
    for (gpu::GPUModuleOp module : erased)
      module.erase();
  }
};
} // namespace
