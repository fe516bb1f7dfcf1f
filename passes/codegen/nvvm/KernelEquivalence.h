//===- KernelEquivalence.h - kernels the same op for op ---------*- C++ -*-===//
//
// The launches of one kernel body at several places (the GEMM of every
// projection of one shape, fills, copies) each become a kernel of their own
// when they are outlined. These helpers find the ones whose bodies are the
// same op for op, names aside, so that one of them serves every launch: on
// the NVVM path (hkt-nvvm-merge-equivalent-kernels) and in the emulation
// (hkt-nvvm-emulate-on-cpu).
//
//===----------------------------------------------------------------------===//

#ifndef HKT_PASSES_CODEGEN_NVVM_KERNELEQUIVALENCE_H
#define HKT_PASSES_CODEGEN_NVVM_KERNELEQUIVALENCE_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::hkt::nvvm {

/// `op`'s attributes without its symbol name.
DictionaryAttr attributesButName(Operation *op);

/// The ops in `root`'s regions and `root`'s own attributes but its symbol
/// name: equal for ops that may be equivalent (isEquivalentIgnoringName).
llvm::hash_code hashIgnoringName(Operation *root);

/// `a` and `b` are the same op with the same attributes, their symbol names
/// aside, and their regions are the same op for op (locations aside).
bool isEquivalentIgnoringName(Operation *a, Operation *b);

/// The ops seen so far, by their hash: the first op equivalent to each new
/// one.
class EquivalentOps {
public:
  /// The earlier op equivalent to `op` (isEquivalentIgnoringName), or null;
  /// then `op` is recorded.
  Operation *findOrInsert(Operation *op);

private:
  llvm::DenseMap<llvm::hash_code, llvm::SmallVector<Operation *, 1>> buckets;
};

} // namespace mlir::hkt::nvvm

#endif // HKT_PASSES_CODEGEN_NVVM_KERNELEQUIVALENCE_H
