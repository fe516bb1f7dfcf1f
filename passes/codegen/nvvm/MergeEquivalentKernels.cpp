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

/// `a` and `b` hold kernels that are the same op for op and otherwise the
/// same ops (declarations, globals), names included.
bool sameModule(gpu::GPUModuleOp a, gpu::GPUModuleOp b) {
  if (attributesButName(a) != attributesButName(b))
    return false;
  Block &ba = a.getBodyRegion().front(), &bb = b.getBodyRegion().front();
  if (ba.getOperations().size() != bb.getOperations().size())
    return false;
  for (auto [oa, ob] : llvm::zip(ba, bb)) {
    bool equal = isa<gpu::GPUFuncOp>(oa)
                     ? isEquivalentIgnoringName(&oa, &ob)
                     : OperationEquivalence::isEquivalentTo(
                           &oa, &ob, OperationEquivalence::IgnoreLocations);
    if (!equal)
      return false;
  }
  return true;
}

struct HktNvvmMergeEquivalentKernelsPass
    : public mlir::hkt::impl::HktNvvmMergeEquivalentKernelsPassBase<
          HktNvvmMergeEquivalentKernelsPass> {
  void runOnOperation() override {
    ModuleOp top = getOperation();
    llvm::DenseMap<llvm::hash_code, SmallVector<gpu::GPUModuleOp, 1>> seen;
    // Each erased module's name -> the kept kernel.
    llvm::DenseMap<StringAttr, SymbolRefAttr> replacement;
    SmallVector<gpu::GPUModuleOp> erased;
    for (auto module : top.getOps<gpu::GPUModuleOp>()) {
      gpu::GPUFuncOp kernel = soleKernel(module);
      if (!kernel)
        continue;
      llvm::hash_code hash = llvm::hash_value(module->getNumRegions());
      for (Operation &op : module.getBodyRegion().front())
        hash = llvm::hash_combine(hash, hashIgnoringName(&op));
      SmallVector<gpu::GPUModuleOp, 1> &bucket = seen[hash];
      auto same = llvm::find_if(bucket, [&](gpu::GPUModuleOp other) {
        return sameModule(other, module);
      });
      if (same == bucket.end()) {
        bucket.push_back(module);
        continue;
      }
      replacement[module.getSymNameAttr()] = SymbolRefAttr::get(
          same->getSymNameAttr(),
          {SymbolRefAttr::get(soleKernel(*same).getNameAttr())});
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
